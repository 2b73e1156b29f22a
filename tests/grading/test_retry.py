"""Backoff arithmetic and Retry-After reading."""

from __future__ import annotations

import email.utils
import time

import pytest

from grading.errors import TransientProviderError
from grading.retry import RetryPolicy, as_transient, parse_retry_after, retry_after_from_headers


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("3", 3.0, id="seconds"),
        pytest.param(" 1.5 ", 1.5, id="fractional"),
        pytest.param("-4", 0.0, id="negative-is-now"),
        pytest.param("soon", None, id="garbage"),
        pytest.param(None, None, id="absent"),
        pytest.param("nan", None, id="nan"),
    ],
)
def test_parse_retry_after(value, expected):
    assert parse_retry_after(value) == expected


def test_parse_retry_after_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after(when) <= 31


def test_retry_after_ms_wins_and_header_names_are_case_insensitive():
    assert retry_after_from_headers({"Retry-After": "2"}) == 2.0
    assert retry_after_from_headers({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_from_headers({}) is None
    assert retry_after_from_headers(None) is None


@pytest.mark.parametrize(
    ("failure", "rand", "retry_after", "expected"),
    [
        pytest.param(1, 1.0, None, 0.5, id="first-ceiling"),
        pytest.param(3, 1.0, None, 2.0, id="doubles"),
        pytest.param(3, 0.25, None, 0.5, id="full-jitter"),
        pytest.param(20, 1.0, None, 10.0, id="capped"),
        pytest.param(1, 0.0, 4.0, 4.0, id="retry-after-is-a-floor"),
        pytest.param(1, 0.0, 99.0, 10.0, id="retry-after-capped-by-max-delay"),
    ],
)
def test_backoff(failure, rand, retry_after, expected):
    policy = RetryPolicy(base_delay=0.5, max_delay=10.0)
    assert policy.backoff(failure, retry_after, lambda: rand) == pytest.approx(expected)


def test_as_transient_recognises_foreign_exceptions():
    class FakeResponse:
        headers = (("retry-after", "7"),)

    class RateLimited(Exception):
        status_code = 429
        response = FakeResponse()

    class APIConnectionError(Exception):
        pass

    class BadRequest(Exception):
        status_code = 400

    limited = as_transient(RateLimited("slow down"))
    assert isinstance(limited, TransientProviderError)
    assert (limited.retry_after, limited.status_code) == (7.0, 429)
    assert as_transient(APIConnectionError()) is not None
    assert as_transient(TimeoutError()) is not None
    assert as_transient(BadRequest()) is None
    assert as_transient(ValueError()) is None
