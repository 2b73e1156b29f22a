"""A small real filesystem for the tests that need one full or read-only (they run as root)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (made if missing) for the ``with`` block."""
    where.mkdir(exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              str(where)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a small tmpfs (the tests run as root): {mounted.stderr}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)
