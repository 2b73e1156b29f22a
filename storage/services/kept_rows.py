"""What the database-kept caches share (issue 41: the judges' count, the trust share, the
panel members' alpha): the stamp they were made at as stored, replacing a kept row, and the
"the stored one if made at the current stamp, else made and stored" step.

A kept row is derived data: used only while its stamp is the current one, replaced when made
again. Replacing never fails a read: when another process stored its own at the same time
(theirs stays: each is checked by its stamp before use) or the database stayed busy
(SQLite locked), the caller shows what it made now and a later read stores it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import delete, text
from sqlalchemy.exc import IntegrityError, OperationalError

from storage import big_values
from storage.engine import SessionFactory

T = TypeVar("T")


def stamp_text(stamp: tuple, format: int) -> str:
    """A stamp as stored: canonical JSON with the format of what it keeps (a row stored by
    code that made it differently never matches)."""
    return json.dumps({"format": format, "stamp": stamp}, separators=(",", ":"))


# PostgreSQL compresses a kept row's megabytes (TOAST) with its default, pglz: ~0.35 s for
# the people's rows at 100,000 responses (10 MB of arrays) against ~0.04 s with lz4, read
# back as fast. The default is set for this transaction only (the columns keep none of their
# own: a row stored before, with pglz, reads back as ever), where the server has lz4
# (PostgreSQL 14 and later, built with it); elsewhere it stays as it is.
_LZ4 = text(
    "SELECT set_config('default_toast_compression', 'lz4', true) FROM pg_settings"
    " WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")


def replace(sessions: SessionFactory, model, where: dict, values: dict) -> bool:
    """Delete ``model``'s rows matching ``where`` (column: value) and insert one with
    ``where`` and ``values``, in one transaction; False if another writer got there or the
    database stayed busy."""
    try:
        with sessions() as session, session.begin():
            if session.get_bind().dialect.name == "postgresql":
                session.execute(_LZ4)
            session.execute(delete(model).where(
                *(getattr(model, column) == value for column, value in where.items())))
            # large bytes through SQLite's blob I/O (storage.big_values: not copied whole
            # twice over while written)
            big_values.insert_row(session, model, {**where, **values})
    except (IntegrityError, OperationalError):
        return False
    return True


def kept(stamp: tuple, current: Callable[[], tuple], read: Callable[[], T | None],
         make: Callable[[], T], store: Callable[[T], object]) -> T:
    """What was made at ``stamp`` (the stamp the caller read): the stored one when ``stamp``
    is still the ``current`` one and ``read`` finds it; else made now and stored only if the
    stamp did not move before or while it was made (what a stale caller makes is shown to
    it, never kept)."""
    now = current()
    if now == stamp:
        stored = read()
        if stored is not None:
            return stored
    made = make()
    if now == stamp and current() == stamp:
        store(made)
    return made
