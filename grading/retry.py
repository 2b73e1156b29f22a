"""The retry loop around one judge call: parse retries and transport retries, separately budgeted,
all inside one total deadline.

- A ``ParseError`` (unusable answer) is retried at once, up to ``max_retries`` times.
- A transient transport failure (429, 5xx, timeout, lost connection) is retried after an
  exponential backoff with full jitter, never sooner than the provider's ``Retry-After`` (itself
  capped: a server asking for an hour, for ever or until 2100 gets ``MAX_RETRY_AFTER``), up to
  ``transport_retries`` times.
- A non-transient ``ProviderError`` (bad key, bad request, unknown model) ends the call at once.
- ``deadline`` bounds the whole call (every attempt, every wait, every slow read).
Anything else is a bug and propagates untouched.

The loop is written out here (a dozen lines) rather than taken from tenacity: the grading
library installs with pydantic and pyyaml only (``packaging/grading``), and this loop's two
budgets, Retry-After floor and outer deadline are all it needs. The app's database retries
(``storage.engine.retry_db``) do use tenacity.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from grading.errors import ProviderError, TransientProviderError
from grading.parsing import ParseError, preview
from grading.types import GenerateResult, TokenUsage

# No provider wait is honoured beyond this: a run must not freeze on one absurd header.
MAX_RETRY_AFTER = 60.0
# One judge call, all attempts included, ends by then unless configured otherwise.
DEFAULT_CALL_DEADLINE = 300.0

T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT_CLASS_NAMES = frozenset({"APIConnectionError", "APITimeoutError"})


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. Delays are in seconds."""

    max_retries: int = 2
    transport_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 60.0
    deadline: float | None = None  # total seconds for one call, every attempt included

    def backoff(self, failure: int, retry_after: float | None, rand: Callable[[], float]) -> float:
        """Delay before retry number ``failure`` (1-based): full jitter, at least Retry-After."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (failure - 1))
        delay = rand() * ceiling
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_delay))
        return delay


@dataclass
class Spend:
    """Tokens and money spent over several calls. Cost is unknown if any call's cost is."""

    calls: int = 0
    usage: TokenUsage | None = None
    _cost: float = 0.0
    _cost_unknown: bool = False

    def add(self, result: GenerateResult) -> None:
        self.calls += 1
        if result.usage is not None:
            self.usage = result.usage if self.usage is None else self.usage + result.usage
        if result.cost is None:
            self._cost_unknown = True
        else:
            self._cost += result.cost

    def merge(self, other: Spend) -> None:
        self.calls += other.calls
        if other.usage is not None:
            self.usage = other.usage if self.usage is None else self.usage + other.usage
        self._cost += other._cost
        self._cost_unknown = self._cost_unknown or other._cost_unknown

    @property
    def cost(self) -> float | None:
        if self.calls == 0 or self._cost_unknown:
            return None
        return self._cost


@dataclass
class CallOutcome(Generic[T]):
    """What came of one judged call after all its attempts.

    ``value`` is set on success. Otherwise ``error`` says what went wrong; ``fatal`` marks a
    non-transient provider error (configuration trouble that fallback verdicts must not hide).
    """

    value: T | None = None
    error: str | None = None
    fatal: bool = False
    exception: BaseException | None = None
    last_raw: str | None = None
    attempts: int = 0
    spend: Spend = field(default_factory=Spend)

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_retry_after(value: Any) -> float | None:
    """Seconds to wait from a Retry-After value (seconds or an HTTP date); None if unreadable.

    Absurd values (an hour, ``inf``, a date in 2100) become ``MAX_RETRY_AFTER``.
    """
    if value is None:
        return None
    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, OverflowError):
            return None
        seconds = when.timestamp() - time.time()
    if math.isnan(seconds):
        return None
    return min(MAX_RETRY_AFTER, max(0.0, seconds))


def retry_after_from_headers(headers: Any) -> float | None:
    """Read ``retry-after-ms`` or ``retry-after`` from a headers mapping, if any."""
    if not headers:
        return None
    try:
        lowered = {str(k).lower(): v for k, v in dict(headers).items()}
    except (TypeError, ValueError):
        return None
    if "retry-after-ms" in lowered:
        try:
            ms = float(str(lowered["retry-after-ms"]).strip())
        except ValueError:
            ms = math.nan
        if not math.isnan(ms):
            return min(MAX_RETRY_AFTER, max(0.0, ms / 1000.0))
    return parse_retry_after(lowered.get("retry-after"))


def as_transient(exc: BaseException) -> TransientProviderError | None:
    """Recognise retryable failures raised by any ``generate_fn``, not only ours."""
    if isinstance(exc, TransientProviderError):
        return exc
    status = getattr(exc, "status_code", None)
    names = {cls.__name__ for cls in type(exc).__mro__}
    transient = (
        isinstance(exc, TimeoutError | ConnectionError)
        or bool(names & _TRANSIENT_CLASS_NAMES)
        or (isinstance(status, int) and (status in _TRANSIENT_STATUS or status >= 500))
    )
    if not transient:
        return None
    response = getattr(exc, "response", None)
    retry_after = retry_after_from_headers(getattr(response, "headers", None))
    message = str(exc) or type(exc).__name__
    return TransientProviderError(
        message, retry_after=retry_after, status_code=status if isinstance(status, int) else None
    )


async def call_with_retries(
    call: Callable[[], Awaitable[GenerateResult]],
    parse: Callable[[str], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> CallOutcome[T]:
    """Call, parse, and retry as the policy allows; never raises for provider trouble."""
    outcome: CallOutcome[T] = CallOutcome()
    failures = {"parse": 0, "transport": 0}
    started = time.monotonic()

    async def attempt() -> T:
        outcome.attempts += 1
        result = await call()
        outcome.spend.add(result)
        outcome.last_raw = result.text
        value = parse(result.text)
        if result.accept is not None:  # the answer is usable: its caller may keep it
            result.accept()
        return value

    def should_retry(exc: BaseException) -> bool:
        if isinstance(exc, ParseError):
            failures["parse"] += 1
            return failures["parse"] <= policy.max_retries
        if isinstance(exc, ProviderError) or as_transient(exc) is None:
            return False
        failures["transport"] += 1
        return failures["transport"] <= policy.transport_retries

    def wait(exc: BaseException) -> float:
        transient = as_transient(exc)
        if transient is None:  # an unusable answer: ask again at once
            return 0.0
        return policy.backoff(failures["transport"], transient.retry_after, rand)

    async def attempts() -> T:
        while True:
            try:
                return await attempt()
            except Exception as exc:
                if not should_retry(exc):
                    raise
                await sleep(wait(exc))

    deadline = (asyncio.timeout(policy.deadline) if policy.deadline
                else contextlib.nullcontext())
    try:
        async with deadline:
            outcome.value = await attempts()
    except TimeoutError as exc:
        if not (policy.deadline and getattr(deadline, "expired", lambda: False)()):
            raise  # a generate_fn's own TimeoutError is handled by the retry loop above
        outcome.error = (
            f"no answer within the call deadline of {policy.deadline:g} s "
            f"({_attempts(outcome.attempts)}, {time.monotonic() - started:.0f} s)")
        outcome.exception = TransientProviderError(outcome.error, status_code=408)
        outcome.exception.__cause__ = exc
    except ProviderError as exc:
        outcome.error, outcome.fatal, outcome.exception = str(exc), True, exc
    except ParseError as exc:
        outcome.error = (
            f"no usable answer after {failures['parse']} attempts: {exc}; "
            f"last answer: {preview(outcome.last_raw or '')!r}"
        )
        outcome.exception = exc
    except Exception as exc:
        transient = as_transient(exc)
        if transient is None:
            status = getattr(exc, "status_code", None)
            if isinstance(status, int) and 400 <= status < 500:  # an SDK's client error
                outcome.error = f"the provider refused the request (HTTP {status}): {exc}"
                outcome.fatal, outcome.exception = True, exc
                return outcome
            raise
        limit = f", call deadline {policy.deadline:g} s" if policy.deadline else ""
        outcome.error = (
            f"the provider failed{_times(failures['transport'])} "
            f"({_attempts(outcome.attempts)} in {time.monotonic() - started:.0f} s{limit}); "
            f"last failure: {transient}"
        )
        outcome.exception = exc
    return outcome


def _times(count: int) -> str:
    return "" if count == 1 else f" {count} times in a row"


def _attempts(count: int) -> str:
    return f"{count} attempt{'s' if count != 1 else ''}"
