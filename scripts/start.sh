#!/usr/bin/env bash
# Install Rubric Workbench into ./.venv and start the app on http://127.0.0.1:8501.
# Needs only Python >= 3.11. The database is a SQLite file (see README); no server to install.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/rubric-workbench ui "$@"
