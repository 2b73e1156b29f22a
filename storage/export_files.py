"""An export written to a temporary file a page at a time, handed to whoever serves it as
an open binary file: the app's download buttons (Streamlit reads a file it is given; a
string built in memory held the whole export two or three times over while it was built).

The file is removed from the directory at once (its name is unlinked while it stays open),
so nothing is left on disk when the reader is closed or collected, even after a crash.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable
from typing import IO, Any


def to_temp_file(write: Callable[[IO[str]], Any]) -> io.BufferedReader:
    """``write(text_file)`` into a temporary file (UTF-8, newlines written as given, as into
    ``io.StringIO(newline="")``), then the file, open for reading from its start."""
    fd, path = tempfile.mkstemp(prefix="rubric-workbench-export-")
    try:
        with open(fd, "w", encoding="utf-8", newline="") as text:
            write(text)
        reader = open(path, "rb")  # noqa: SIM115 - the caller (Streamlit) reads and drops it
    finally:
        os.unlink(path)
    return reader
