"""Database failures in plain words: which ones pass (retry) and how to say them without SQL."""

from __future__ import annotations

import errno
import sqlite3

from sqlalchemy import exc as sa_exc

_NOT_FAULTS = (sa_exc.IntegrityError, sa_exc.DataError, sa_exc.ProgrammingError)


def _root(exc: BaseException) -> BaseException:
    orig = getattr(exc, "orig", None)
    return orig if isinstance(orig, BaseException) else exc


def is_storage_fault(exc: BaseException) -> bool:
    """The database could not take a write for a reason outside the data: full disk, lost
    connection, restart, lock held too long, read-only file. Worth waiting for."""
    if isinstance(exc, _NOT_FAULTS):
        return False
    if isinstance(exc, sa_exc.DBAPIError | sa_exc.DisconnectionError):
        return True
    if isinstance(exc, sa_exc.ResourceClosedError | sa_exc.PendingRollbackError):
        return True
    return isinstance(exc, sqlite3.OperationalError | OSError)


SERVER_UNREACHABLE = "the database server cannot be reached (restarting or down)"


def _unreachable(lowered: str) -> bool:
    return any(word in lowered for word in ("connection", "terminat", "shutdown",
                                            "server closed", "not accepting", "starting up",
                                            "could not connect"))


def is_server_unreachable(exc: BaseException) -> bool:
    """A lost or refused connection (a PostgreSQL restart): likely to pass within seconds."""
    return is_storage_fault(exc) and _unreachable(str(_root(exc)).split("\n", 1)[0].lower())


def describe_db_error(exc: BaseException) -> str:
    """A short cause (never the SQL statement or parameters)."""
    root = _root(exc)
    text = str(root).split("\n", 1)[0].strip()
    lowered = text.lower()
    if isinstance(root, OSError) and root.errno == errno.ENOSPC and root.filename:
        # A file of ours outside the database (a temporary file, an export): name its place.
        return f"the disk holding {root.filename} is full"
    if "disk is full" in lowered or "no space left" in lowered or (
        isinstance(root, OSError) and root.errno == errno.ENOSPC
    ):
        return "the disk holding the database is full"
    if "readonly" in lowered or "read-only" in lowered or "read only" in lowered:
        return "the database is read-only"
    if "locked" in lowered or "busy" in lowered:
        return "the database stayed locked by another process"
    if _unreachable(lowered):
        return SERVER_UNREACHABLE
    name = type(root).__name__
    return f"the database refused the write ({name}: {text[:160]})"
