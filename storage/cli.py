"""The ``rubric-workbench`` command."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from storage.config import add_db_argument

APP = Path(__file__).resolve().parent.parent / "ui" / "app.py"


def _run_ui(args: argparse.Namespace) -> int:
    command = [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.headless", "true",
        "--server.address", args.host,
        "--server.port", str(args.port),
        "--browser.gatherUsageStats", "false",
    ]
    print(f"Rubric Workbench: http://{args.host}:{args.port} (Ctrl+C stops it)", flush=True)
    if os.name == "posix":
        # Become the server: a SIGTERM or Ctrl+C sent to this process then reaches Streamlit
        # itself, instead of killing a parent and leaving the server serving the port.
        os.execv(sys.executable, command)
    return _call_forwarding_signals(command)


def _call_forwarding_signals(command: list[str]) -> int:
    """Where exec does not replace the process (Windows): run the server as a child, pass
    termination signals on to it and wait for it to stop."""
    child = subprocess.Popen(command, env=os.environ.copy())

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    for name in ("SIGTERM", "SIGINT", "SIGBREAK"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), forward)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:  # a second Ctrl+C: keep waiting for the child to stop
            continue


def _db_upgrade(args: argparse.Namespace) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from storage.config import database_url, describe_url
    from storage.migrate import HalfUpgradedDatabaseError, current_revision, upgrade_to_head

    url = args.db or database_url()
    try:
        upgrade_to_head(url)
        revision = current_revision(url)
    except HalfUpgradedDatabaseError as exc:
        print(f"error: cannot upgrade {describe_url(url)}: {exc}", file=sys.stderr)
        return 1
    except SQLAlchemyError as exc:
        print(f"error: cannot upgrade {describe_url(url)}: {exc.__class__.__name__}: "
              f"{str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    print(f"{describe_url(url)} is at schema revision {revision}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rubric-workbench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    ui = commands.add_parser("ui", help="start the web app")
    ui.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default: %(default)s, this computer only)")
    ui.add_argument("--port", type=int, default=8501, help="port (default: %(default)s)")
    ui.set_defaults(func=_run_ui)
    db = commands.add_parser("db", help="manage the database schema")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser(
        "upgrade", help="apply the schema migrations (the app also does this at start-up)")
    add_db_argument(upgrade)
    upgrade.set_defaults(func=_db_upgrade)

    from storage.jobs import commands as jobs

    grade = commands.add_parser(
        "grade", help="grade a responses file with one or more graders and models")
    jobs.add_grade_arguments(grade)
    grade.set_defaults(func=jobs.grade_command)
    worker = commands.add_parser(
        "worker", help="execute queued grading runs from the database until stopped")
    jobs.add_worker_arguments(worker)
    worker.set_defaults(func=jobs.worker_command)
    export = commands.add_parser("export", help="write results (or labels) as JSONL or CSV")
    jobs.add_export_arguments(export)
    export.set_defaults(func=jobs.export_command)

    from storage import label_commands

    verdicts = commands.add_parser(
        "import-verdicts", help="append human verdicts from a CSV (nothing on any problem)")
    label_commands.add_import_arguments(verdicts)
    # Guarded: a read-only, locked or unreachable database is one sentence, not a traceback.
    verdicts.set_defaults(func=jobs.guarded(label_commands.import_verdicts_command))

    from storage import agreement_command

    agree = commands.add_parser(
        "agreement", help="per-criterion agreement: judges vs the human verdict, reviewers "
                          "vs each other (the human baseline)")
    agreement_command.add_arguments(agree)
    agree.set_defaults(func=jobs.guarded(agreement_command.agreement_command))

    from storage import compare_command

    compare = commands.add_parser(
        "compare", help="which responses are better: compare two files pair by pair on a "
                        "rubric, in both orders (prints the table and B's win rate)")
    compare_command.add_arguments(compare)
    compare.set_defaults(func=compare_command.compare_command)

    from storage import rebuild_commands

    rebuild = commands.add_parser(
        "rebuild-effective", help="recompute the effective human verdicts (adjudicated or "
                                  "agreed, carried over) from the history of every verdict")
    rebuild_commands.add_arguments(rebuild)
    rebuild.set_defaults(func=jobs.guarded(rebuild_commands.rebuild_effective_command))
    rebuild_panels = commands.add_parser(
        "rebuild-panels", help="recompute the judge panels' decisions (verdicts and scores) "
                               "from their members' grades")
    rebuild_commands.add_arguments(rebuild_panels)
    rebuild_panels.set_defaults(func=jobs.guarded(rebuild_commands.rebuild_panels_command))
    rebuild_keys = commands.add_parser(
        "rebuild-verdict-keys", help="recompute each judge grade's verdict key (what the "
                                     "judges' disagreement compares) from its criteria")
    rebuild_commands.add_arguments(rebuild_keys)
    rebuild_keys.set_defaults(func=jobs.guarded(rebuild_commands.rebuild_verdict_keys_command))

    from storage import panel_commands

    panel = commands.add_parser("panel", help="judge panels: runs combined by a voting rule")
    panel_commands.add_panel_arguments(panel)
    panel.set_defaults(func=jobs.guarded(panel_commands.panel_command))
    return parser


def _plain_warnings() -> None:
    """Warnings meant for the person (ignored rubric fields, text left out) as one plain line
    each, without Python's file-and-line preamble."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"warning: {message}", file=file or sys.stderr)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    from storage.config import DatabaseUrlError

    args = build_parser().parse_args(argv)
    # From the command line (no argv given), the command owns its process: the grading
    # commands then tune it for grading (``storage.jobs.run_options.freeze_heap``).
    args.own_process = argv is None
    _plain_warnings()
    try:
        return args.func(args)
    except DatabaseUrlError as exc:  # $RUBRIC_WORKBENCH_DATABASE_URL (--db is checked above)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C where a command does not say more (reading its input)
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
