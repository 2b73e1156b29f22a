"""Command-line front of storage.services.labels: gold/training export and verdict import.

Kept out of storage/cli.py so that the command module only wires arguments to these.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from pathlib import Path

from grading.errors import RubricWorkbenchError
from storage.atomic_file import atomic_text_file
from storage.config import add_db_argument
from storage.engine import open_database
from storage.errors import ImportProblemsError
from storage.services import labels
from storage.services.blindness import EVERYTHING, Sight
from storage.services.reviewers import command_line_actor


def add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rubric", required=True, help="rubric name")
    parser.add_argument("--rubric-version", type=int, default=None,
                        help="version number (default: the latest)")
    parser.add_argument("--dataset", required=True, help="dataset name")


def export_labels(
    kind: str, *, rubric: str, dataset: str, version: int | None = None,
    out: str | None = None, complete_only: bool = False, db: str | None = None,
    sight: Sight = EVERYTHING,
) -> int:
    """Write the gold set or the training set (JSONL) or the verdict sheet (CSV) to ``out``
    (stdout when None or '-'; a directory gets a file named after the dataset, rubric and
    version); ``kind`` is gold, training or verdicts; ``sight`` says whose eyes it reads with
    (blind review, storage/services/blindness.py)."""
    try:
        sessions = open_database(db)
        version_id, dataset_id = labels.resolve_scope(
            sessions, rubric=rubric, dataset=dataset, version=version)
        if kind == "gold":
            records = labels.iter_gold_records(sessions, version_id, dataset_id,
                                               complete_only=complete_only, sight=sight)
        elif kind == "training":
            records = labels.iter_training_records(sessions, version_id, dataset_id,
                                                   sight=sight)
        elif kind == "verdicts":
            sheet = labels.export_verdict_sheet_csv(sessions, version_id, dataset_id,
                                                    sight=sight)
            records = None
        else:
            raise ValueError(f"unknown label export {kind!r}")
        if out not in (None, "-") and Path(out).is_dir():
            ext = "csv" if kind == "verdicts" else "jsonl"
            out = str(Path(out) / labels.export_file_name(sessions, kind, version_id,
                                                          dataset_id, ext))
        count = 0
        to_stdout = out in (None, "-")
        with nullcontext(sys.stdout) if to_stdout else atomic_text_file(out) as target:
            if records is None:
                target.write(sheet)
                count = sheet.count("\n") - 1
            else:
                for record in records:
                    target.write(labels.dumps(record) + "\n")
                    count += 1
    except RubricWorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot write {out}: {exc.strerror}", file=sys.stderr)
        return 1
    if out not in (None, "-"):
        noun = "verdict rows" if kind == "verdicts" else f"{kind} records"
        print(f"wrote {count} {noun} to {out}", file=sys.stderr)
    return 0


def import_verdicts(
    path: str, *, rubric: str, dataset: str, version: int | None = None, db: str | None = None,
    create_reviewers: bool = False,
) -> int:
    """Import human verdicts from a CSV; every problem is printed and nothing is written.
    A reviewer the workbench does not know is a problem unless ``create_reviewers``."""
    try:  # the file itself is streamed by the import; here only whether it can be opened
        with open(path, "rb"):
            pass
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        sessions = open_database(db)
        version_id, dataset_id = labels.resolve_scope(
            sessions, rubric=rubric, dataset=dataset, version=version)
        summary = labels.import_human_verdicts(
            sessions, version_id, dataset_id, Path(path), Path(path).name,
            actor=command_line_actor(), create_reviewers=create_reviewers)
    except ImportProblemsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except RubricWorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"imported {summary.verdicts} verdicts on {summary.responses} responses "
          f"(reviewers: {summary.reviewers_text() or 'none'}); left out "
          f"{summary.unchanged} unchanged and {summary.blank} without a verdict")
    if summary.created:
        shown = ", ".join(summary.created[:5])
        more = len(summary.created) - 5
        print(f"new reviewers: {shown}" + (f" and {more} more" if more > 0 else ""))
    return 0


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE",
                        help="CSV with response_id, criterion, verdict, reviewer and note columns")
    add_scope_arguments(parser)
    parser.add_argument("--create-reviewers", action="store_true",
                        help="add reviewers the workbench does not know yet (default: an "
                             "unknown reviewer name is an error, with its rows)")
    add_db_argument(parser)


def import_verdicts_command(args: argparse.Namespace) -> int:
    return import_verdicts(args.file, rubric=args.rubric, dataset=args.dataset,
                           version=args.rubric_version, db=args.db,
                           create_reviewers=args.create_reviewers)
