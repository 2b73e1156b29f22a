"""Rows an import has checked, parked in a temporary file until it writes them.

An import checks a whole file before it writes anything (never a half-written import), but
keeping every checked row in memory grows with the file (a 200,000-row verdict sheet: ~80
MB). The rows go to an anonymous temporary file instead, pickled a batch at a time, and come
back a batch at a time for the write: memory holds one batch, whatever the file's length,
and the write transaction reads a compact file instead of parsing the sheet again.
"""

from __future__ import annotations

import contextlib
import pickle
import tempfile
from collections.abc import Iterator
from typing import Any


class RowSpill:
    """Append rows, then read them back in batches (as often as needed: a retried write)."""

    def __init__(self, batch: int):
        self.batch = batch
        self.count = 0
        self._pending: list[Any] = []
        # Deleted by the OS when closed (or when the process dies); in the system temp folder.
        self.folder = tempfile.gettempdir()
        self._file = tempfile.TemporaryFile(dir=self.folder)  # noqa: SIM115 - closed by close()

    def append(self, row: Any) -> None:
        self._pending.append(row)
        self.count += 1
        if len(self._pending) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            try:
                pickle.dump(self._pending, self._file, protocol=pickle.HIGHEST_PROTOCOL)
                self._file.flush()
            except OSError as exc:  # a full temporary folder is not the database's disk
                raise OSError(exc.errno, exc.strerror, f"the temporary folder {self.folder}"
                              ) from exc
            self._pending = []

    def batches(self) -> Iterator[list[Any]]:
        self._flush()
        self._file.seek(0)
        while True:
            try:
                yield pickle.load(self._file)  # our own file, written above
            except EOFError:
                return

    def close(self) -> None:
        # A full disk on the last flush: the rows are thrown away anyway.
        with contextlib.suppress(OSError):
            self._file.close()

    def __enter__(self) -> RowSpill:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
