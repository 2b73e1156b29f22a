"""What the database-kept caches share (issue 41: the judges' count, the trust share, the
panel members' alpha): the stamp they were made at as stored, and replacing a kept row.

A kept row is derived data: used only while its stamp is the current one, replaced when made
again. Replacing never fails a read: when another process stored its own at the same time
(theirs stays: each is checked by its stamp before use) or the database stayed busy
(SQLite locked), the caller shows what it made now and a later read stores it.
"""

from __future__ import annotations

import json

from sqlalchemy import delete, insert
from sqlalchemy.exc import IntegrityError, OperationalError

from storage.engine import SessionFactory


def stamp_text(stamp: tuple, format: int) -> str:
    """A stamp as stored: canonical JSON with the format of what it keeps (a row stored by
    code that made it differently never matches)."""
    return json.dumps({"format": format, "stamp": stamp}, separators=(",", ":"))


def replace(sessions: SessionFactory, model, where: dict, values: dict) -> bool:
    """Delete ``model``'s rows matching ``where`` (column: value) and insert one with
    ``where`` and ``values``, in one transaction; False if another writer got there or the
    database stayed busy."""
    try:
        with sessions() as session, session.begin():
            session.execute(delete(model).where(
                *(getattr(model, column) == value for column, value in where.items())))
            session.execute(insert(model).values(**where, **values))
    except (IntegrityError, OperationalError):
        return False
    return True
