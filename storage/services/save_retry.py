"""Saving a verdict against other writers: run its transaction again until it lands.

Human verdicts are append-only streams with a unique key per position: two writers that
append to one stream at once collide, and the loser runs its whole transaction again
(including its stale-form check). A SQLite lock time-out, or a PostgreSQL server that is
restarting, is waited out for a bounded time; anything else is one clear error.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.exc import IntegrityError, OperationalError

from storage.db_errors import describe_db_error, is_server_unreachable, is_storage_fault
from storage.errors import DatabaseUnavailableError, StaleVerdictError

# Concurrent writers on one stream retry until their verdict lands, for at most this long
# (then the error says the database is too busy); the wait between tries grows from
# _FIRST_WAIT_S to _MAX_WAIT_S with jitter, so colliding writers spread out.
SAVE_DEADLINE_S = 30.0
# A database server that cannot be reached (restarting) is waited for this long at most.
UNREACHABLE_DEADLINE_S = 15.0
_FIRST_WAIT_S = 0.005
_MAX_WAIT_S = 0.5
T = TypeVar("T")


class Collision(Exception):
    """Another writer appended to the same stream first: run the transaction again."""


def retry_until_saved(work: Callable[[], T], *, deadline_s: float | None = None) -> T:
    """Run ``work`` (one whole transaction) until it lands, with backoff, bounded by time.

    A unique-key collision (another writer appended to the same stream first) or a SQLite
    lock time-out runs the transaction again.
    """
    limit = time.monotonic() + (SAVE_DEADLINE_S if deadline_s is None else deadline_s)
    unreachable_limit = time.monotonic() + min(UNREACHABLE_DEADLINE_S, limit - time.monotonic())
    wait = _FIRST_WAIT_S
    while True:
        try:
            return work()
        except Collision:
            pass
        except IntegrityError as exc:
            if not is_unique_violation(exc):
                raise
        except OperationalError as exc:
            # SQLite under heavy contention can give up on the write lock; the whole
            # transaction (including the stale-form check) simply runs again.
            if "locked" not in str(exc).lower():
                _unless_unreachable_for_now(exc, unreachable_limit, wait)
        except Exception as exc:
            if not is_storage_fault(exc):
                raise
            _unless_unreachable_for_now(exc, unreachable_limit, wait)
        if time.monotonic() + wait > limit:
            raise StaleVerdictError(
                "the database was too busy to save this verdict for "
                f"{SAVE_DEADLINE_S if deadline_s is None else deadline_s:.0f} s; "
                "nothing was saved — try again", current_id=None)
        time.sleep(wait * (0.5 + random.random()))
        wait = min(wait * 2, _MAX_WAIT_S)


def _unless_unreachable_for_now(exc: Exception, limit: float, wait: float) -> None:
    """A database server that went away (a PostgreSQL restart) is waited for until ``limit``
    (the pool's pre-ping reconnects); any other fault, or a longer absence, is one clear
    error. Nothing was written: the transaction never committed."""
    if not is_storage_fault(exc):
        raise exc
    unreachable = is_server_unreachable(exc)
    if unreachable and time.monotonic() + wait <= limit:
        return
    cause = describe_db_error(exc)
    advice = ("try again in a moment" if unreachable
              else "free some disk space, then try again" if "full" in cause
              else "make the database writable, then try again" if "read-only" in cause
              else "try again")
    raise DatabaseUnavailableError(f"{cause}; nothing was saved — {advice}") from None


def is_unique_violation(exc: IntegrityError) -> bool:
    text = str(exc.orig).lower()
    return "unique" in text or "duplicate key" in text
