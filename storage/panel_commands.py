"""Command-line front of storage.services.panels: create, list and export judge panels."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

from grading.errors import RubricWorkbenchError
from grading.panels import PANEL_RULES
from storage.atomic_file import atomic_text_file
from storage.config import add_db_argument
from storage.engine import open_database
from storage.services import datasets, panels
from storage.services.reviewers import command_line_actor


def add_panel_arguments(parser: argparse.ArgumentParser) -> None:
    add_db_argument(parser)
    actions = parser.add_subparsers(dest="panel_command", required=True)
    create = actions.add_parser(
        "create", help="combine two or more runs of one rubric version over one dataset")
    create.add_argument("--run", type=int, action="append", required=True, dest="runs",
                        help="a member run id (repeat: --run 3 --run 4 --run 5)")
    create.add_argument("--rule", choices=PANEL_RULES, default="majority",
                        help="how the members' verdicts combine (default: majority)")
    create.add_argument("--weight", type=float, action="append", dest="weights",
                        help="with --rule weighted: one weight per --run, in the same order")
    create.add_argument("--name", default="", help="a name shown in the app")
    create.set_defaults(panel_action=_create)
    listing = actions.add_parser("list", help="list panels")
    listing.set_defaults(panel_action=_list)
    export = actions.add_parser(
        "export", help="write the panel's record per response (JSONL, or CSV with --format)")
    export.add_argument("panel", type=int, help="panel id")
    export.add_argument("--out", help="file to write (default: standard output)")
    export.add_argument("--format", choices=("jsonl", "csv"), default=None)
    export.set_defaults(panel_action=_export)


def panel_command(args: argparse.Namespace) -> int:
    try:
        return args.panel_action(args, open_database(args.db))
    except RubricWorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _create(args: argparse.Namespace, sessions) -> int:
    panel = panels.create_panel(sessions, run_ids=args.runs, rule=args.rule,
                                weights=args.weights, name=args.name,
                                actor=command_line_actor())
    print(f"panel {panel.id}: {panel.rule} of runs "
          f"{', '.join(str(m.run.id) for m in panel.members)}")
    return 0


def _list(args: argparse.Namespace, sessions) -> int:
    for panel in panels.list_panels(sessions):
        members = ", ".join(f"{m.run.id} ({m.run.model})" for m in panel.members)
        print(f"{panel.id}\t{panel.label}\t{panel.rule}\t{members}")
    return 0


def panel_records(sessions, panel_id: int) -> Iterator[dict[str, Any]]:
    """One record per response: the panel's verdicts, how each was reached, the members'."""
    panel = panels.get_panel(sessions, panel_id)
    member_runs = [m.run.id for m in panel.members]
    keys = datasets.response_keys(sessions, panel.dataset_id)
    grades = (grade for ids in panels.iter_graded_ids(sessions, panel_id)  # a page at a time
              for grade in panels.panel_grades(sessions, panel_id, ids))
    for grade in grades:
        yield {
            "panel_id": panel.id, "rule": panel.rule, "member_runs": member_runs,
            "response_id": keys[grade.response_id],
            "workbench_response_id": grade.response_id, "score": grade.score,
            "raw_score": grade.raw_score, "error": grade.error, "cost": grade.cost,
            "complete": grade.complete, "pending_members": list(grade.pending_members),
            "criteria": [
                {"criterion": row.label, "verdict": _value(row.decision.choice),
                 "tie": row.decision.tie, "how": row.decision.note,
                 "members": [_value(v) for v in row.member_verdicts]}
                for row in grade.criteria
            ],
        }


def _value(choice) -> str | None:
    """A verdict's value, or an option label as it is."""
    return None if choice is None else str(getattr(choice, "value", choice))


def _export(args: argparse.Namespace, sessions) -> int:
    fmt = args.format or ("csv" if (args.out or "").lower().endswith(".csv") else "jsonl")
    records = panel_records(sessions, args.panel)
    to_stdout = args.out in (None, "-")
    try:
        with nullcontext(sys.stdout) if to_stdout else atomic_text_file(args.out) as target:
            count = _write(records, target, fmt)
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    if not to_stdout:
        print(f"wrote {count} records to {args.out}", file=sys.stderr)
    return 0


def _write(records: Iterator[dict[str, Any]], target, fmt: str) -> int:
    count = 0
    if fmt == "jsonl":
        for record in records:
            target.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
        return count
    from storage import csv_cells

    writer = csv_cells.writer(target)
    writer.writerow(["panel_id", "response_id", "workbench_response_id", "criterion", "verdict",
                     "tie", "how", "members", "score", "complete", "pending_members"])
    for record in records:
        for row in record["criteria"]:
            writer.writerow([record["panel_id"], record["response_id"],
                             record["workbench_response_id"],
                             row["criterion"], row["verdict"] or "", row["tie"], row["how"],
                             " ".join(v or "failed" for v in row["members"]),
                             "" if record["score"] is None else record["score"],
                             record["complete"],
                             " ".join(map(str, record["pending_members"]))])
        count += 1
    return count
