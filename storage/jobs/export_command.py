"""``rubric-workbench export``: results of runs and panels, the labels (gold, training,
verdict sheet) and a calibrated run's examples, as JSONL or CSV, to a file or stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grading.errors import RubricWorkbenchError
from storage.atomic_file import atomic_text_file
from storage.config import add_db_argument, database_url
from storage.jobs.cli_common import (
    EXIT_FAILED_GRADES,
    EXIT_OK,
    EXIT_USAGE,
    error,
    guarded,
)


def _export_examples(args: argparse.Namespace) -> int:
    if len(args.run) != 1:
        error("--kind examples needs exactly one --run ID (a calibrated run)")
        return EXIT_USAGE
    from storage.engine import open_database
    from storage.exports import examples_export
    from storage.services import runs

    fmt = args.format or ("csv" if (args.out or "").lower().endswith(".csv") else "jsonl")
    sessions = open_database(args.db or database_url())
    try:
        run = runs.get_run(sessions, args.run[0])
    except RubricWorkbenchError as exc:
        error(str(exc))
        return EXIT_FAILED_GRADES
    if run.settings.calibration is None:
        error(f"run {run.id} was not calibrated with reviewed examples; nothing to export")
        return EXIT_USAGE
    text = examples_export(sessions, run.id, fmt)
    if args.out in (None, "-"):
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with atomic_text_file(args.out) as target:
            target.write(text)
    except OSError as exc:
        error(f"cannot write {args.out}: {exc.strerror}")
        return EXIT_FAILED_GRADES
    print(f"wrote the examples of run {run.id} to {args.out}", file=sys.stderr)
    return EXIT_OK


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=("results", "gold", "training", "verdicts",
                                           "examples"),
                        default="results",
                        help="results (default): one record per response x run; gold: the "
                             "human-reviewed set; training: texts with effective scores; "
                             "verdicts: the human-verdict sheet (CSV) that import-verdicts "
                             "reads; examples: the reviewed examples a calibrated --run "
                             "showed its judge")
    parser.add_argument("--run", type=int, action="append", default=[],
                        help="run id (repeat for several; results only)")
    parser.add_argument("--panel", type=int, action="append", default=[],
                        help="judge panel id, exported like a run (repeat for several; "
                             "results only; `rubric-workbench panel list` shows them)")
    parser.add_argument("--format", choices=("jsonl", "csv"), default=None,
                        help="default: from --out's extension, else jsonl")
    parser.add_argument("--out", metavar="FILE", help="output file, or a directory to write "
                        "a file named after the dataset, rubric and version (default: stdout)")
    parser.add_argument("--rubric", help="rubric name (gold and training)")
    parser.add_argument("--rubric-version", type=int, default=None,
                        help="version number (default: the latest)")
    parser.add_argument("--dataset", help="dataset name (gold and training)")
    parser.add_argument("--complete-only", action="store_true",
                        help="gold: only responses with every criterion reviewed")
    parser.add_argument("--for-reviewer", metavar="KEY", default=None,
                        help="export what this reviewer may see under blind review: other "
                             "people's verdicts only on the criteria KEY answered (e.g. a "
                             "verdict sheet for KEY to fill in); default: everything")
    add_db_argument(parser)


def export_sight(reviewer: str | None):
    """Whose eyes an export reads with: the named reviewer's, or the command line's."""
    from storage.services import blindness
    from storage.services.reviewers import command_line_actor

    if reviewer is not None and reviewer.strip():
        return blindness.as_reviewer(reviewer)
    return blindness.sight_of(command_line_actor())


@guarded
def export_command(args: argparse.Namespace) -> int:
    if args.kind == "examples":
        return _export_examples(args)
    if args.kind != "results":
        if not (args.rubric and args.dataset):
            error(f"--kind {args.kind} needs --rubric and --dataset")
            return EXIT_USAGE
        from storage.label_commands import export_labels

        return export_labels(args.kind, rubric=args.rubric, dataset=args.dataset,
                             version=args.rubric_version, out=args.out,
                             complete_only=args.complete_only, db=args.db,
                             sight=export_sight(args.for_reviewer))
    if not args.run and not args.panel:
        error("give at least one --run ID (rubric-workbench grade prints them) or --panel ID "
               "(rubric-workbench panel list)")
        return EXIT_USAGE
    fmt = args.format or ("csv" if (args.out or "").lower().endswith(".csv") else "jsonl")

    from storage.engine import open_database
    from storage.exports import results_file_name, write_results

    sessions = open_database(args.db or database_url())
    try:
        if args.out not in (None, "-") and Path(args.out).is_dir():
            args.out = str(Path(args.out) / results_file_name(sessions, args.run, fmt,
                                                              args.panel))
        if args.out in (None, "-"):
            count = write_results(sessions, args.run, sys.stdout, fmt, args.panel,
                                  sight=export_sight(args.for_reviewer))
        else:
            from storage.services import panels

            for panel_id in args.panel:  # refused before the file is opened
                panels.get_panel(sessions, panel_id)
            with atomic_text_file(args.out) as target:
                count = write_results(sessions, args.run, target, fmt, args.panel,
                                      sight=export_sight(args.for_reviewer))
    except RubricWorkbenchError as exc:
        error(str(exc))
        return EXIT_FAILED_GRADES
    except OSError as exc:
        error(f"cannot write {args.out}: {exc.strerror}")
        return EXIT_FAILED_GRADES
    if args.out not in (None, "-"):
        print(f"wrote {count} records to {args.out}", file=sys.stderr)
    return EXIT_OK
