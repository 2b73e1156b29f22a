"""What exports call things: the response id a user knows, and file names for downloads.

``response_id`` in every export is the user's id of the response (the id column of the
uploaded file), or ``#<number>`` for a response uploaded without one: the same value the
verdict sheet uses and its import accepts, so files join on it. The database's own id is
only ever written as ``workbench_response_id``.
"""

from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile(r"[^\w.-]+")
_MAX_PART = 60


def response_key(workbench_id: int, external_id: str | None) -> str:
    """The id a user knows a response by: theirs, or ``#<number>`` when it came without one."""
    return external_id if external_id is not None else f"#{workbench_id}"


def safe_part(text: str, fallback: str = "export") -> str:
    """A name as a file-name part: letters and digits of any script, ``-``, ``.`` and ``_``."""
    text = unicodedata.normalize("NFC", str(text))
    cleaned = _UNSAFE.sub("_", text).strip("._-")
    return re.sub(r"_{2,}", "_", cleaned) or fallback


def file_stem(kind: str, *parts: str | None, version: int | None = None) -> str:
    """``results-UX_50_replies-Dosing-v1``: the kind, the names the user sees and the version
    number as the app shows it (``v1``), in safe characters only."""
    pieces = [safe_part(kind)] + [safe_part(p)[:_MAX_PART].rstrip("._-") for p in parts if p]
    if version is not None:
        pieces.append(f"v{version}")
    return "-".join(pieces)


def download_name(kind: str, *parts: str | None, version: int | None = None,
                  ext: str) -> str:
    """``file_stem(...)`` with its extension: the one way downloads and the CLI name files."""
    return f"{file_stem(kind, *parts, version=version)}.{ext.lstrip('.')}"
