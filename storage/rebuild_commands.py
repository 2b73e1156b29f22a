"""``rubric-workbench rebuild-effective``, ``rebuild-panels`` and ``rebuild-verdict-keys``:
derived tables recomputed from what they are derived from — the effective verdicts and
people's scores from the history of every verdict (storage.services.effective_upkeep), the
judge panels' decisions from their members' grades (storage.services.panel_upkeep), the
grades' verdict keys from their criteria (storage.services.verdict_keys). Each prints how
many rows differed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from grading.errors import RubricWorkbenchError
from storage.config import add_db_argument
from storage.engine import open_database
from storage.services import effective_upkeep, panel_upkeep, verdict_keys
from storage.services.reviewers import command_line_actor


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)


def _rebuild(args: argparse.Namespace, rebuild: Callable, what: str, counted: str,
             up_to_date: str, kept: str) -> int:
    try:
        rows, changed = rebuild(open_database(args.db), actor=command_line_actor())
    except RubricWorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    state = (up_to_date if not changed
             else f"{changed} rows differed from the kept {kept} (removed + added)")
    print(f"{what} rebuilt: {rows} {counted}; {state}")
    return 0


def rebuild_effective_command(args: argparse.Namespace) -> int:
    return _rebuild(args, effective_upkeep.rebuild_effective, "effective verdicts", "rows",
                    "it was up to date", "table")


def rebuild_panels_command(args: argparse.Namespace) -> int:
    return _rebuild(args, panel_upkeep.rebuild_panels, "judge panels' decisions",
                    "panel grades", "they were up to date", "tables")


def rebuild_verdict_keys_command(args: argparse.Namespace) -> int:
    return _rebuild(args, verdict_keys.rebuild_verdict_keys, "judges' verdict keys", "grades",
                    "they were up to date", "keys")
