"""The litellm path against a server that misbehaves the way real ones do (127.0.0.1 only)."""

from __future__ import annotations

import email.utils
import resource
import time

import pytest

from grading import Criterion, Rubric
from grading.answer_budget import VERDICT_TOKENS
from grading.autograders import PerCriterionGrader
from grading.llm import LiteLLMGenerate
from grading.redact import redact, strip_url_credentials
from grading.retry import MAX_RETRY_AFTER, parse_retry_after, retry_after_from_headers
from tests.fake_provider import Reply
from tests.fault_provider import Fault, fault_provider, fault_provider_server

__all__ = ["fault_provider", "fault_provider_server"]

MODEL = "openai/fake-judge"
ONE = Rubric([Criterion(name="alpha", requirement="Alpha")])
MET = '{"verdict": "MET", "reason": "ok"}'
FAST = {"retry_base_delay": 0.001, "retry_max_delay": 0.01, "on_error": "report"}


def judge(fault, **kwargs) -> LiteLLMGenerate:
    kwargs.setdefault("timeout", 10.0)
    return LiteLLMGenerate(MODEL, api_base=fault.api_base, **kwargs)


# -- 10.1: a key from the provider's own variable, echoed by the provider ----------------------
async def test_a_key_from_the_providers_own_variable_is_never_in_an_error(fault_provider,
                                                                         monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-THE-REAL-OPENAI-KEY-0123456789")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-another-secret-987654")
    fault_provider.always(Fault(kind="echo_auth", status=400))

    result = await ONE.grade("answer", autograder=PerCriterionGrader(judge(fault_provider),
                                                                     **FAST))

    seen = fault_provider.headers_seen[0]["authorization"]
    assert seen == "Bearer sk-proj-THE-REAL-OPENAI-KEY-0123456789"  # the fault is real
    texts = [result.error or "", *(r.error or "" for r in result.report or [])]
    assert any("received headers" in t for t in texts)  # the provider's words are kept...
    assert not any("THE-REAL-OPENAI-KEY" in t for t in texts)  # ...but never the key


@pytest.mark.parametrize(("url", "hidden"), [
    pytest.param("http://alice:pa55word@127.0.0.1:9/v1", "pa55word", id="userinfo"),
    pytest.param("http://127.0.0.1:9/v1?api-key=qwerty123&x=1", "qwerty123", id="query"),
])
def test_credentials_in_an_api_base_are_masked(url, hidden):
    masked = strip_url_credentials(url)
    assert hidden not in masked and "***" in masked
    assert hidden not in redact(f"could not reach {url}", set())


def test_redact_masks_authorization_headers_it_was_not_told_about():
    text = 'headers: {"Authorization": "Bearer sk-unknown-1234567"} x-api-key: abcdef123456'
    assert "sk-unknown" not in redact(text, set()) and "abcdef123456" not in redact(text, set())


# -- connection faults are transient: retried, then the answer --------------------------------
@pytest.mark.parametrize("fault", [
    pytest.param(Fault(kind="reset"), id="reset"),
    pytest.param(Fault(kind="truncate"), id="truncated-body"),
    pytest.param(Fault(kind="html", status=502), id="html-502"),
    pytest.param(Fault(kind="empty_choices"), id="empty-choices"),
])
async def test_a_transient_fault_is_retried_and_the_grade_is_made(fault_provider, fault):
    fault_provider.enqueue(fault, MET)

    result = await ONE.grade("answer", autograder=PerCriterionGrader(
        judge(fault_provider, api_key="k"), **FAST))

    assert result.error is None, result.error
    assert result.score == 1.0
    assert fault_provider.requests == 2


async def test_html_with_200_is_a_failed_grade_in_plain_words(fault_provider):
    fault_provider.always(Fault(kind="html", status=200))
    result = await ONE.grade("answer", autograder=PerCriterionGrader(
        judge(fault_provider, api_key="k"), transport_retries=1, **FAST))
    assert result.score is None
    assert "Traceback" not in result.error and "IndexError" not in result.error


# -- 10.8: one total deadline per call --------------------------------------------------------
async def test_a_hang_ends_at_the_call_deadline_with_attempts_in_the_error(fault_provider):
    fault_provider.always(Reply(MET, hang=60))
    started = time.monotonic()

    result = await ONE.grade("answer", autograder=PerCriterionGrader(
        judge(fault_provider, api_key="k", timeout=1.0), transport_retries=10,
        call_deadline=2.5, **FAST))

    elapsed = time.monotonic() - started
    assert elapsed < 6, elapsed  # not 11 attempts x the per-attempt timeout
    assert result.score is None
    assert "call deadline of 2.5 s" in result.error
    assert "attempts" in result.error


async def test_a_body_trickling_a_byte_a_second_ends_at_the_attempt_timeout(fault_provider):
    fault_provider.always(Fault(kind="trickle", interval=1.0))
    started = time.monotonic()

    result = await ONE.grade("answer", autograder=PerCriterionGrader(
        judge(fault_provider, api_key="k", timeout=2.0), transport_retries=0, **FAST))

    assert time.monotonic() - started < 6  # the body is ~300 bytes: 300 s before
    assert result.score is None and "did not answer after 2 s" in result.error


# -- 10.9: a huge answer is not read to the end -----------------------------------------------
async def test_a_huge_answer_is_refused_without_reading_it(fault_provider):
    fault_provider.always(Fault(kind="huge", size=200 * 1024 * 1024))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()

    result = await ONE.grade("answer", autograder=PerCriterionGrader(
        judge(fault_provider, api_key="k"), transport_retries=0, max_retries=0, **FAST))

    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.score is None and "larger than 4 MB" in result.error
    assert grown_mb < 100, grown_mb  # reading 200 MB and parsing it costs gigabytes
    assert time.monotonic() - started < 20
    assert fault_provider.bodies[0]["max_tokens"] == VERDICT_TOKENS  # asked to be short


# -- 10.5: absurd Retry-After values are capped -----------------------------------------------
@pytest.mark.parametrize("value", [
    pytest.param("3600", id="an-hour"),
    pytest.param("inf", id="infinity"),
    pytest.param("1e309", id="overflow"),
    pytest.param(email.utils.format_datetime(
        email.utils.parsedate_to_datetime("Fri, 01 Jan 2100 00:00:00 GMT")), id="year-2100"),
])
def test_absurd_retry_after_values_become_the_cap(value):
    assert parse_retry_after(value) == MAX_RETRY_AFTER
    assert retry_after_from_headers({"Retry-After": value}) == MAX_RETRY_AFTER
    assert retry_after_from_headers({"retry-after-ms": "1e12"}) == MAX_RETRY_AFTER


# -- 9.1: a local server that needs no key ----------------------------------------------------
async def test_a_server_at_an_api_base_needs_no_key(fault_provider):
    result = await ONE.grade("answer", autograder=PerCriterionGrader(judge(fault_provider)))
    assert result.score == 1.0
    assert fault_provider.headers_seen[0]["authorization"].startswith("Bearer ")


async def test_an_unknown_provider_is_refused_before_any_call(fault_provider):
    from grading.errors import FatalProviderError

    generate = LiteLLMGenerate("nosuchprovider/x", api_base=fault_provider.api_base)
    with pytest.raises(FatalProviderError, match="provider/model"):
        await generate("s", "u")
    assert fault_provider.requests == 0
