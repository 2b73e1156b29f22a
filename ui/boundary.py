"""What the authoring pages show instead of a traceback, and markdown-safe user text."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st
from sqlalchemy.exc import OperationalError, ProgrammingError

from storage.config import DATABASE_URL_VARIABLE, DatabaseUrlError, describe_url
from storage.errors import StorageError
from storage.services.reviewers import PermissionDeniedError
from ui import safe_text
from ui.runtime import database_key

# SQLite's words for a table the schema lacks (an OperationalError), and PostgreSQL's (a
# ProgrammingError, SQLSTATE 42P01).
_MISSING_TABLE = re.compile(r'no such table: ([\w.]+)|relation "([\w.]+)" does not exist')


def plain(text: str) -> str:
    """User text to put inside markdown (titles, captions, messages) without it becoming markup."""
    return safe_text.md(text)


def count(n: int, noun: str) -> str:
    """'1 response', '3 responses'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@contextmanager
def page_boundary(clear: Callable[[], None]) -> Iterator[None]:
    """Turn the failures a person can act on into a message saying what to do."""
    try:
        yield
    except PermissionDeniedError as exc:  # the service refused: the message says whom to ask
        st.error(plain(f"Not allowed: {exc}"), icon=":material/lock:")
    except DatabaseUrlError as exc:  # the configured value is no URL (never repeated: a password)
        st.error(plain(f"{exc}. Set it where the app is started and start the app again."))
    except StorageError as exc:  # e.g. the rubric was deleted from another tab
        clear()
        st.error(plain(f"{exc}. Reload the page to see the current state."))
    except (OperationalError, ProgrammingError) as exc:
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0][:300]
        missing = _MISSING_TABLE.search(reason)
        if missing:  # reached, but not the tables its version stamp promises
            table = missing.group(1) or missing.group(2)
            st.error(
                f"The database at {describe_url(database_key())} has no table "
                f"{table!r}, which its recorded version says it has: it was changed "
                "by another version of the app or by hand. Restore it from a backup, or start "
                f"with a new database ({DATABASE_URL_VARIABLE}), then reload the page."
            )
            return
        if isinstance(exc, ProgrammingError):  # a defect, not the database's state
            raise
        st.error(
            f"The database at {describe_url(database_key())} cannot be reached ({reason}). "
            f"Check that it is running and that {DATABASE_URL_VARIABLE} points at it, then "
            "reload the page."
        )
