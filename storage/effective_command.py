"""``rubric-workbench rebuild-effective``: the effective verdicts recomputed from the history."""

from __future__ import annotations

import argparse
import sys

from grading.errors import RubricWorkbenchError
from storage.config import add_db_argument
from storage.engine import open_database
from storage.services import effective_upkeep
from storage.services.reviewers import command_line_actor


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)


def rebuild_command(args: argparse.Namespace) -> int:
    try:
        rows, changed = effective_upkeep.rebuild_effective(open_database(args.db),
                                                           actor=command_line_actor())
    except RubricWorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    state = ("it was up to date" if not changed
             else f"{changed} rows differed from the kept table (removed + added)")
    print(f"effective verdicts rebuilt: {rows} rows; {state}")
    return 0
