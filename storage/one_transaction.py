"""Several service calls as one transaction: every call gets the same session of a
transaction the caller opened, so what they write commits, or rolls back, together.

Services take a session factory and open their own transaction (``with sessions.begin()``);
``OneTransaction`` stands in for that factory. It opens nothing and closes nothing: a
service's error propagates to the caller's ``with sessions.begin()``, which rolls back every
call before it (no savepoint, so SQLite's driver cannot commit an inner one early). Use it
only for services that let their errors propagate; never hand it to a job runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session


class OneTransaction:
    def __init__(self, session: Session) -> None:
        self._session = session

    @contextmanager
    def __call__(self) -> Iterator[Session]:
        yield self._session

    @contextmanager
    def begin(self) -> Iterator[Session]:
        yield self._session
