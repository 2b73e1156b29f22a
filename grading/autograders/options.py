"""The checks of an Autograder's options that need no grader: each refusal says which option
is wrong, what it was given and what it takes (``ConfigurationError``)."""

from __future__ import annotations

from typing import Any

from grading.errors import ConfigurationError
from grading.types import CANNOT_ASSESS_STRATEGIES, DefaultFallbackVerdicts, Verdict

ON_ERROR_MODES = ("raise", "report")


def check_call_options(*, cannot_assess: Any, on_error: Any, max_retries: Any,
                       transport_retries: Any, max_concurrency: Any, retry_base_delay: float,
                       retry_max_delay: float, call_deadline: float | None) -> None:
    """Refuse an unknown strategy or mode, and counts, delays or deadlines out of range."""
    if cannot_assess not in CANNOT_ASSESS_STRATEGIES:
        raise ConfigurationError(
            f"unknown cannot_assess strategy {cannot_assess!r}; "
            f"use one of {', '.join(CANNOT_ASSESS_STRATEGIES)}"
        )
    if on_error not in ON_ERROR_MODES:
        raise ConfigurationError(f"on_error must be 'raise' or 'report', got {on_error!r}")
    for name, value in (("max_retries", max_retries), ("transport_retries", transport_retries)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigurationError(f"{name} must be a whole number >= 0, got {value!r}")
    if max_concurrency is not None and (
        isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int)
        or max_concurrency < 1
    ):
        raise ConfigurationError(f"max_concurrency must be >= 1, got {max_concurrency!r}")
    if retry_base_delay < 0 or retry_max_delay < 0:
        raise ConfigurationError("retry delays must be >= 0")
    if call_deadline is not None and not call_deadline > 0:
        raise ConfigurationError(
            f"call_deadline must be a number of seconds > 0 (or None), got {call_deadline!r}")


def check_fallbacks(
    fallbacks: DefaultFallbackVerdicts | None,
) -> dict[str, Verdict] | None:
    """The fallback verdicts by weight sign, checked (None: none set)."""
    if fallbacks is None:
        return None
    if not isinstance(fallbacks, dict):
        raise ConfigurationError("default_fallback_verdicts must be a dict")
    unknown = set(fallbacks) - {"positive", "negative"}
    if unknown:
        raise ConfigurationError(
            f"default_fallback_verdicts keys must be 'positive'/'negative', got "
            f"{sorted(unknown)}"
        )
    checked = {}
    for key, value in fallbacks.items():
        try:
            checked[key] = Verdict.parse(value)
        except ValueError as exc:
            raise ConfigurationError(f"default_fallback_verdicts[{key!r}]: {exc}") from None
    return checked
