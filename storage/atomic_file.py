"""Files written whole or not at all: a temporary file beside the target, renamed at the end."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_text_file(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A text handle whose content replaces ``path`` only once all of it is on disk.

    A full disk, a file-size limit or an error while the records are produced leaves the
    previous ``path`` (or none) as it was, and no truncated file: the temporary file is removed.
    """
    target = Path(path)
    handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                   suffix=".partial")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
