#!/usr/bin/env bash
# Install Rubric Workbench into ./.venv and start the app on http://127.0.0.1:8501.
# Needs only Python >= 3.11. The database is a SQLite file (see README); no server to install.
# The first start installs (about a minute); later starts skip pip while pyproject.toml is
# unchanged. Ctrl+C (or SIGTERM to this script's process) stops the app.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${RUBRIC_WORKBENCH_VENV:-.venv}"
STAMP="$VENV/.rubric-workbench-install"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
# What the install depends on: the project file and the interpreter it went into.
wanted="$("$VENV/bin/python" -c 'import hashlib, sys
print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest(), sys.version.split()[0])')"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$wanted" ]; then
  echo "Installing Rubric Workbench into $VENV (the first start takes about a minute)..."
  # The venv a killed run left half made (no pip yet) is made whole first.
  "$VENV/bin/python" -m pip --version >/dev/null 2>&1 || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e .
  printf '%s\n' "$wanted" > "$STAMP"
fi
# exec: the app replaces this shell, so Ctrl+C and SIGTERM reach the server itself.
exec "$VENV/bin/rubric-workbench" ui "$@"
