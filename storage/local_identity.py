"""Local mode's remembered reviewer: a name kept in a small file in the data directory.

One person on their own machine is asked once; the name survives reloads, browser restarts
and app restarts, and changes only when they change it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from storage.config import data_dir
from storage.errors import InvalidInputError

IDENTITY_FILENAME = "identity.json"
MAX_NAME = 200


def identity_path() -> Path:
    return data_dir() / IDENTITY_FILENAME


def remembered_name() -> str:
    """The remembered name, or "" when none was set (or the file is unreadable)."""
    try:
        data = json.loads(identity_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    name = data.get("name") if isinstance(data, dict) else None
    return " ".join(name.split())[:MAX_NAME] if isinstance(name, str) else ""


def remember_name(name: str) -> str:
    """Save the name for this machine; returns it cleaned up."""
    cleaned = " ".join(name.split())
    if not cleaned:
        raise InvalidInputError("type your name: it is recorded with your verdicts and changes")
    if len(cleaned) > MAX_NAME:
        raise InvalidInputError(f"a name has at most {MAX_NAME} characters")
    path = identity_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".identity-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"name": cleaned}, out)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return cleaned
