"""The ``rubric-workbench`` command."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "ui" / "app.py"


def _run_ui(args: argparse.Namespace) -> int:
    command = [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.headless", "true",
        "--server.address", args.host,
        "--server.port", str(args.port),
        "--browser.gatherUsageStats", "false",
    ]
    print(f"Rubric Workbench: http://{args.host}:{args.port}", flush=True)
    return subprocess.call(command, env=os.environ.copy())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rubric-workbench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    ui = commands.add_parser("ui", help="start the web app")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=8501)
    ui.set_defaults(func=_run_ui)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
