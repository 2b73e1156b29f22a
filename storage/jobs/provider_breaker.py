"""When the provider keeps failing, stop calling it (a circuit breaker on provider calls).

A provider that resets every connection, answers 5xx, sends an HTML page or a reply without
any choice, or never answers, used to get every call of the run, each with its transport
retries and retry passes: 1,760 calls to fail 10 responses. The breaker counts the run's
failed calls by kind since the last call that got an answer; once one kind reaches the
run's ``pause_after_failures`` (``DEFAULT_PAUSE_AFTER``; 0 turns the breaker off) it opens:
no call passes any more and the runner pauses the run (status ``failed``, an error that
begins with ``PROVIDER_PAUSE`` and names the provider, the kind and the count).

Resuming the run (Resume/Requeue on the Grade page, the same ``grade`` command again) starts
the breaker half open: the first call is the probe and every other call waits for it. An
answer closes the breaker and the run goes on; a failure of a breaker kind opens it again
and the run stays paused, its reason updated. The pause is remembered in the run's notice
(``run_job_stats.notice``), which a requeue keeps, so no migration is needed.

A 429 is the provider answering (the limiter waits), and a refusal (4xx) is the request's
fault: neither counts, neither resets the count.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, datetime

from grading.errors import TransientProviderError
from storage.dto import PROVIDER_PAUSE

DEFAULT_PAUSE_AFTER = 30
# How the notice of a resumed run begins while its probe call is out.
PROBING = "probing the provider before resuming"

KIND_WORDS = {
    "connection": "connection reset or refused",
    "timeout": "no answer in time",
    "server": "HTTP 5xx",
    "html": "an HTML page instead of an answer",
    "no_choices": "answers without any choice",
}
_COUNT = re.compile(
    r"failed (\d+) calls? in a row \((.+?)\) with no answer(?: in between, since (\S+ UTC))?")


def failure_kind(exc: BaseException) -> str | None:
    """The breaker kind of a failed call (a key of ``KIND_WORDS``); None when it does not say
    the provider is broken (a 429, a refusal)."""
    if not isinstance(exc, TransientProviderError) or exc.status_code == 429:
        return None
    text = str(exc).lower()
    if exc.status_code == 408 or "did not answer" in text or "call deadline" in text:
        return "timeout"
    if "without any choice" in text:
        return "no_choices"
    if "<html" in text or "<!doctype html" in text or "invalid response from llm" in text:
        return "html"
    if "connection" in text or exc.status_code is None:
        return "connection"
    if exc.status_code >= 500:
        return "server"
    return None


def describe(kind: str, status: int | None) -> str:
    words = KIND_WORDS[kind]
    if kind in ("server", "html") and status:
        return f"{words}, last HTTP {status}"
    return words


def paused_count(notice: str | None) -> tuple[int, str, str | None] | None:
    """(count, kind words, since when) of the pause a run's notice remembers; None when the
    breaker did not pause the run (or its probe got an answer)."""
    if not notice or not notice.startswith((PROVIDER_PAUSE, PROBING)):
        return None
    found = _COUNT.search(notice)
    return (int(found.group(1)), found.group(2), found.group(3)) if found else (0, "", None)


def pause_reason(provider: str, count: int, kind_words: str, since: str,
                 probe_at: datetime | None = None) -> str:
    probe = (f"; the last was the probe call made on resuming at {probe_at:%H:%M:%S} UTC"
             if probe_at is not None else "")
    calls = f"{count} call{'s' if count != 1 else ''}"
    return (f"{PROVIDER_PAUSE} {provider} failed {calls} in a row ({kind_words}) with no "
            f"answer in between, since {since}{probe}; no more calls are made. "
            "Resume the run once the provider works again (Resume on the Grade page, or the "
            "same grade command): one probe call goes first")


class ProviderBreaker:
    """Counts a run's failed provider calls by kind; opens at ``threshold`` of one kind.

    ``paused``: the notice of a run the breaker paused before (``paused_count``); the
    breaker then starts half open and lets one probe call through first. ``halting`` says
    whether the run is stopping (its calls cancelled then are not timeouts); ``on_close``
    is called when the probe got an answer."""

    def __init__(self, threshold: int, provider: str, *, on_trip: Callable[[str], None],
                 on_close: Callable[[], None] = lambda: None,
                 halting: Callable[[], bool] = lambda: False, paused: str | None = None):
        self.threshold = threshold
        self.provider = provider
        self._on_trip = on_trip
        self._on_close = on_close
        self._halting = halting
        self._counts: dict[str, int] = {}
        self._status: int | None = None
        self._since: datetime | None = None
        self._closed = asyncio.Event()
        self._changed = asyncio.Event()  # set (and replaced) when the half-open state moves
        self.before = paused_count(paused)  # the pause being resumed from, if any
        self.probing = self.before is not None and threshold > 0
        self._probe_out = False
        self.reason: str | None = None  # why it opened
        if not self.probing:
            self._closed.set()

    @property
    def open(self) -> bool:
        return self.reason is not None

    @property
    def probe_notice(self) -> str | None:
        if not self.probing or self.before is None:
            return None
        count, words, since = self.before
        return (f"{PROBING} (paused after it failed {count} calls in a row ({words}) with no "
                f"answer in between, since {since}): one probe call goes first")

    async def before_call(self) -> bool:
        """Return when a call may go to the provider: at once while closed; the first
        caller while half open (the probe: True); never while open (the run is stopping)."""
        while not self._closed.is_set():
            if self.probing and not self._probe_out and not self.open:
                self._probe_out = True
                return True
            await self._changed.wait()
        return False

    def abandon_probe(self) -> None:
        """The probe was cut off before it reached the provider (while it waited for a
        slot): the next call is the probe."""
        if self.probing and not self.open:
            self._probe_out = False
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def still_closed(self) -> None:
        """Never return once the breaker opened (a call let through before it did waits for
        the run to stop it, rather than go to the provider)."""
        if self.open:
            await asyncio.Event().wait()

    def answered(self) -> None:
        """A call got an answer: the provider works."""
        self._counts.clear()
        self._since = None
        if self.probing and not self.open:
            self.probing = False
            self._closed.set()
            self._notify()
            self._on_close()

    def failed(self, exc: BaseException) -> None:
        kind = failure_kind(exc)
        if kind is None:
            if self.probing and not self.open:
                self.answered()  # it answered, if only to refuse: calls may go on
            return
        # litellm calls an HTML page sent with 200 an HTTP 500: no status is named then
        made_up = "invalid response from llm" in str(exc).lower()
        self._status = None if made_up else getattr(exc, "status_code", None)
        self._count(kind)

    def cancelled(self) -> None:
        """A call was cut off while it waited for the provider: the call deadline, unless
        the run is stopping."""
        if not self._halting():
            self._count("timeout")

    def _count(self, kind: str) -> None:
        if self.threshold <= 0 or self.open:
            return
        now = datetime.now(UTC)
        self._since = self._since or now
        self._counts[kind] = self._counts.get(kind, 0) + 1
        words = describe(kind, self._status if kind in ("server", "html") else None)
        since = f"{self._since:%H:%M:%S} UTC"
        if self.probing:  # the probe failed: paused again, the count going on
            before, before_words, before_since = self.before or (0, "", None)
            if before_words.split(",")[0] == KIND_WORDS[kind]:
                self._trip(pause_reason(self.provider, before + 1, words,
                                        before_since or since, now))
            else:
                self._trip(pause_reason(self.provider, 1, words, since, now))
        elif self._counts[kind] >= self.threshold:
            self._trip(pause_reason(self.provider, self._counts[kind], words, since))

    def _trip(self, reason: str) -> None:
        self.reason = reason
        self._closed.clear()
        self._on_trip(reason)
