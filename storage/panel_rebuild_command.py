"""``rubric-workbench rebuild-panels``: the judge panels' decisions recomputed from the
members' grades (storage.services.panel_upkeep)."""

from __future__ import annotations

import argparse
import sys

from grading.errors import RubricWorkbenchError
from storage.config import add_db_argument
from storage.engine import open_database
from storage.services import panel_upkeep
from storage.services.reviewers import command_line_actor


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)


def rebuild_command(args: argparse.Namespace) -> int:
    try:
        grades, changed = panel_upkeep.rebuild_panels(open_database(args.db),
                                                      actor=command_line_actor())
    except RubricWorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    state = ("they were up to date" if not changed
             else f"{changed} rows differed from the kept tables (removed + added)")
    print(f"judge panels' decisions rebuilt: {grades} panel grades; {state}")
    return 0
