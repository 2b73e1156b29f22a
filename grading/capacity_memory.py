"""What the last process learned about an endpoint's capacity, kept in a small file so that
the next process grading on that endpoint does not start from scratch: the way Linux keeps
each destination's slow-start threshold after a connection closes (``tcp_metrics``; RFC 9040
on sharing TCP control blocks). A script run again then reaches the provider's capacity in a
round or two instead of a slow start of several seconds.

One JSON file (``capacity.json`` in ``$RUBRIC_WORKBENCH_CACHE_DIR``, else
``$XDG_CACHE_HOME/rubric-workbench``, else ``~/.cache/rubric-workbench``) maps a hash of the
endpoint (provider, model, api_base: nothing readable, no credentials) to the limit last
held, whether the provider refused just above it, when, and by which process. Only a
process that finds no other one *live* on the endpoint (its process exists and wrote within
``LIVE_SECONDS``) starts from the remembered level, and it claims the endpoint under a file
lock as it does: eight processes started
together on one endpoint do not each take the whole of it. Entries older than
``FORGET_SECONDS`` are dropped. Best effort: a file that cannot be read, locked or written
is as if there were none. ``RUBRIC_WORKBENCH_CAPACITY_MEMORY=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no memory (starting cold is always safe)
    fcntl = None  # type: ignore[assignment]

CACHE_DIR_ENV = "RUBRIC_WORKBENCH_CACHE_DIR"
SWITCH_ENV = "RUBRIC_WORKBENCH_CAPACITY_MEMORY"
FILE_NAME = "capacity.json"
FORGET_SECONDS = 6 * 3600.0  # capacity changes with the time of day and the account's tier
LIVE_SECONDS = 15.0  # a holder that wrote this recently and still runs is live
MAX_ENTRIES = 256


def enabled() -> bool:
    off = os.environ.get(SWITCH_ENV, "1").strip().lower() in ("0", "off", "false", "no")
    return fcntl is not None and not off


def path() -> Path:
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured) / FILE_NAME
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rubric-workbench" / FILE_NAME


def endpoint_id(key: tuple[str, ...]) -> str:
    return hashlib.sha256("\0".join(key).encode()).hexdigest()[:32]


def _number(entry: object, name: str, default: float) -> float:
    try:
        return float(entry[name])  # type: ignore[index]
    except (TypeError, KeyError, ValueError, IndexError):
        return default


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return True


@contextlib.contextmanager
def _locked_entries(now: float, *, wait: bool = True) -> Iterator[dict[str, dict]]:
    """The file's recent entries, under an exclusive lock; written back (atomically) when
    the block changed them. ``wait=False``: a lock held elsewhere raises ``BlockingIOError``
    (an ``OSError``) at once instead of waiting."""
    file = path()
    file.parent.mkdir(parents=True, exist_ok=True)
    with open(file.with_name(FILE_NAME + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        entries = {k: v for k, v in (data.items() if isinstance(data, dict) else ())
                   if isinstance(v, dict) and now - _number(v, "seen", -1e18) <= FORGET_SECONDS}
        before = json.dumps(entries, sort_keys=True)
        yield entries
        if json.dumps(entries, sort_keys=True) == before:
            return
        if len(entries) > MAX_ENTRIES:
            newest = sorted(entries.items(), key=lambda item: _number(item[1], "seen", 0))
            entries = dict(newest[-MAX_ENTRIES:])
        handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".capacity-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entries, out)
            os.replace(temporary, file)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def claim(key: tuple[str, ...], *, now: float | None = None) -> tuple[float, bool] | None:
    """The limit the last process held on this endpoint and whether the provider refused
    just above it (``capped``), when it is recent and no other process is live on the
    endpoint; this process then holds the endpoint's entry."""
    if not enabled():
        return None
    now = time.time() if now is None else now
    with contextlib.suppress(OSError), _locked_entries(now) as entries:
        entry = entries.get(endpoint_id(key))
        if entry is None:
            return None
        holder = int(_number(entry, "pid", 0))
        if (holder != os.getpid() and now - _number(entry, "seen", -1e18) <= LIVE_SECONDS
                and _alive(holder)):
            return None  # another process is at work on it: start cold, beside it
        limit = _number(entry, "limit", 0)
        if not 1 <= limit < 1e6:
            return None
        entry.update(pid=os.getpid(), seen=round(now, 1))
        return limit, bool(entry.get("capped"))
    return None


def remember(key: tuple[str, ...], limit: float, capped: bool = False, *,
             now: float | None = None, wait: bool = True) -> None:
    """Keep this endpoint's limit for the next process. With several processes on the
    endpoint, the last one to write is remembered. ``wait=False`` (a caller on an event
    loop): when another process holds the file's lock, skip this write rather than wait."""
    if not enabled():
        return
    now = time.time() if now is None else now
    with contextlib.suppress(OSError), _locked_entries(now, wait=wait) as entries:
        entries[endpoint_id(key)] = {"limit": round(float(limit), 1), "capped": bool(capped),
                                     "seen": round(now, 1), "pid": os.getpid()}
