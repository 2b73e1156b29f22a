"""The real litellm HTTP path against the local fake provider (127.0.0.1 only)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from grading import Criterion, GradingError, ProviderError, Rubric, TokenUsage, Verdict
from grading.autograders import (
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.llm import LiteLLMGenerate, translate_error
from tests.fake_provider import Reply

MODEL = "openai/fake-judge"
FAST = {"retry_base_delay": 0.001, "retry_max_delay": 2.0}
RUBRIC = Rubric.from_dict([
    {"weight": 10, "requirement": "Alpha"},
    {"weight": 5, "requirement": "Beta"},
    {"weight": -3, "requirement": "Gamma"},
])
ONE = Rubric([Criterion(requirement="Alpha")])
MET = '{"verdict": "MET", "reason": "ok"}'


def judge(fake, **kwargs) -> LiteLLMGenerate:
    kwargs.setdefault("timeout", 10.0)
    return LiteLLMGenerate(MODEL, api_base=fake.api_base, api_key="test-key", **kwargs)


async def test_per_criterion_grade_with_usage_and_structured_output(fake_provider):
    result = await RUBRIC.grade("answer", autograder=PerCriterionGrader(judge(fake_provider)))
    assert result.score == pytest.approx(12 / 15)  # the fake says MET to everything
    assert [r.verdict for r in result.report] == [Verdict.MET] * 3
    assert result.token_usage == TokenUsage(prompt_tokens=33, completion_tokens=21,
                                            total_tokens=54)
    assert result.completion_cost is None  # no price known for fake-judge: unknown, not 0
    assert fake_provider.requests == 3
    body = fake_provider.bodies[0]
    assert body["model"] == "fake-judge"
    assert body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "criterion_verdict"
    assert response_format["json_schema"]["strict"] is True
    assert fake_provider.headers_seen[0]["authorization"] == "Bearer test-key"


async def test_one_shot_and_holistic_graders_through_litellm(fake_provider):
    one_shot = await RUBRIC.grade("a", autograder=PerCriterionOneShotGrader(judge(fake_provider)))
    holistic = await RUBRIC.grade("a", autograder=RubricAsJudgeGrader(judge(fake_provider)))
    assert one_shot.raw_score == 12.0
    assert (holistic.score, holistic.llm_raw_score) == (0.8, 80)
    names = [b["response_format"]["json_schema"]["name"] for b in fake_provider.bodies]
    assert names == ["criteria_verdicts", "holistic_score"]


async def test_known_model_price_gives_a_cost(fake_provider):
    generate = LiteLLMGenerate("openai/gpt-4o-mini", api_base=fake_provider.api_base,
                               api_key="test-key", timeout=10)
    result = await ONE.grade("a", autograder=PerCriterionGrader(generate))
    assert result.completion_cost is not None and result.completion_cost > 0


async def test_structured_output_can_be_switched_off(fake_provider):
    await ONE.grade("a", autograder=PerCriterionGrader(judge(fake_provider,
                                                             structured_output=False)))
    assert "response_format" not in fake_provider.last_body


async def test_temperature_none_is_not_sent(fake_provider):
    await ONE.grade("a", autograder=PerCriterionGrader(judge(fake_provider, temperature=None)))
    assert "temperature" not in fake_provider.last_body


async def test_rate_limit_waits_for_retry_after_then_succeeds(fake_provider):
    fake_provider.enqueue(Reply(status=429, headers={"Retry-After": "1"}))
    result = await ONE.grade("a", autograder=PerCriterionGrader(judge(fake_provider), **FAST))
    assert result.score == 1.0
    first, second = fake_provider.request_times
    assert second - first >= 0.95  # base delay is 1 ms: only Retry-After explains the wait


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_errors_are_retried(fake_provider, status):
    fake_provider.enqueue(Reply(status=status))
    result = await ONE.grade("a", autograder=PerCriterionGrader(judge(fake_provider), **FAST))
    assert result.score == 1.0
    assert fake_provider.requests == 2


async def test_persistent_server_errors_raise_after_the_transport_budget(fake_provider):
    fake_provider.enqueue(*[Reply(status=500, error_message="overloaded")] * 3)
    grader = PerCriterionGrader(judge(fake_provider), transport_retries=2, **FAST)
    with pytest.raises(GradingError, match=r"failed 3 times.*overloaded"):
        await ONE.grade("a", autograder=grader)
    assert fake_provider.requests == 3  # litellm's own retries are off


async def test_hang_past_timeout_is_retried(fake_provider):
    fake_provider.enqueue(Reply(MET, hang=10))
    grader = PerCriterionGrader(judge(fake_provider, timeout=0.3), **FAST)
    result = await ONE.grade("a", autograder=grader)
    assert result.score == 1.0
    # the hung call, a one-token probe that the server is free (a local server keeps
    # running a call we gave up on: grading.busy_server), the retry
    assert fake_provider.requests == 3
    probe = fake_provider.bodies[1]
    assert probe["max_tokens"] == 1 and "response_format" not in probe
    assert fake_provider.bodies[2]["response_format"]["type"] == "json_schema"


async def test_hang_with_no_retries_left_is_a_clear_timeout_error(fake_provider):
    fake_provider.enqueue(Reply(MET, hang=10))
    grader = PerCriterionGrader(judge(fake_provider, timeout=0.3), transport_retries=0, **FAST)
    with pytest.raises(GradingError, match=r"did not answer after 0\.3 s"):
        await ONE.grade("a", autograder=grader)


async def test_malformed_json_is_asked_again(fake_provider):
    fake_provider.enqueue('{"verdict": "MET", "reason": ', "I'd say it is met.")
    result = await ONE.grade("a", autograder=PerCriterionGrader(judge(fake_provider), **FAST))
    assert result.score == 1.0
    assert fake_provider.requests == 3
    assert result.token_usage.total_tokens == 3 * 18


async def test_fenced_json_is_accepted_first_time(fake_provider):
    fake_provider.enqueue('```json\n{"verdict": "UNMET", "reason": "missing"}\n```')
    result = await ONE.grade("a", autograder=PerCriterionGrader(judge(fake_provider)))
    assert result.report[0].verdict is Verdict.UNMET
    assert fake_provider.requests == 1


async def test_concurrency_bound_is_observed_by_the_server(fake_provider):
    fake_provider.latency = 0.1
    fake_provider.max_concurrency = 3  # the fake answers 429 beyond this
    rubric = Rubric([Criterion(requirement=f"Requirement {i}") for i in range(12)])
    result = await rubric.grade("a", autograder=PerCriterionGrader(judge(fake_provider),
                                                                   max_concurrency=3))
    assert result.score == 1.0
    assert fake_provider.rate_limited == 0
    assert 2 <= fake_provider.max_in_flight <= 3


async def test_server_side_rate_limits_are_recovered_from(fake_provider):
    fake_provider.latency = 0.05
    fake_provider.max_concurrency = 2
    rubric = Rubric([Criterion(requirement=f"Requirement {i}") for i in range(8)])
    grader = PerCriterionGrader(judge(fake_provider), max_concurrency=8, transport_retries=30,
                                retry_base_delay=0.01, retry_max_delay=0.1)
    result = await rubric.grade("a", autograder=grader)
    assert result.score == 1.0
    assert fake_provider.rate_limited > 0


async def test_wrong_key_is_a_clear_error_that_never_shows_the_key(fake_provider):
    fake_provider.required_api_key = "right-key"
    generate = LiteLLMGenerate(MODEL, api_base=fake_provider.api_base, api_key="sk-wrong-secret",
                               timeout=10)
    with pytest.raises(ProviderError) as caught:
        await ONE.grade("a", autograder=PerCriterionGrader(generate, **FAST))
    message = str(caught.value)
    assert "RUBRIC_WORKBENCH_API_KEY" in message
    assert "sk-wrong-secret" not in message
    assert caught.value.__cause__ is None  # the provider's own message may echo the key
    assert fake_provider.requests == 1  # not retried


async def test_a_missing_cloud_key_names_the_env_var_without_calling(fake_provider):
    # A server at an api_base needs no key (issue 9.1, tests/grading/test_provider_faults.py);
    # a cloud provider without its key is refused before any call.
    generate = LiteLLMGenerate("anthropic/claude-judge", timeout=10)
    with pytest.raises(ProviderError, match=r"No API key was found.*ANTHROPIC_API_KEY"):
        await ONE.grade("a", autograder=PerCriterionGrader(generate, **FAST))
    assert fake_provider.requests == 0


@pytest.mark.parametrize(
    ("model", "env_var"),
    [
        pytest.param("openai/gpt-4.1-mini", "OPENAI_API_KEY", id="openai"),
        pytest.param("anthropic/claude-x", "ANTHROPIC_API_KEY", id="anthropic"),
        pytest.param("gpt-4.1-mini", "OPENAI_API_KEY", id="no-prefix"),
    ],
)
def test_auth_error_without_api_base_names_the_provider_key(model, env_var):
    import litellm

    exc = litellm.AuthenticationError(
        message="Incorrect API key provided: sk-abc123", llm_provider="openai", model=model
    )
    error = translate_error(exc, model=model, api_key="sk-abc123")
    assert isinstance(error, ProviderError)
    assert env_var in str(error)
    assert "sk-abc123" not in str(error)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        pytest.param(Reply(status=400, error_message="context too long"),
                     "rejected the request.*HTTP 400.*context too long", id="bad-request"),
        pytest.param(Reply(status=404, error_message="no such model"),
                     "was not found.*check the model name", id="unknown-model"),
    ],
)
async def test_client_errors_fail_at_once_with_a_plain_message(fake_provider, reply, message):
    fake_provider.enqueue(reply)
    grader = PerCriterionGrader(judge(fake_provider), on_error="report", **FAST)
    result = await ONE.grade("a", autograder=grader)
    assert result.score is None
    assert fake_provider.requests == 1
    with pytest.raises(ProviderError, match=message):
        fake_provider.enqueue(reply)
        await ONE.grade("a", autograder=PerCriterionGrader(judge(fake_provider), **FAST))


async def test_connection_refused_is_transient_then_fails(fake_provider):
    generate = LiteLLMGenerate(MODEL, api_base="http://127.0.0.1:9/v1", api_key="k", timeout=5)
    grader = PerCriterionGrader(generate, transport_retries=1, **FAST)
    with pytest.raises(GradingError, match="failed 2 times"):
        await ONE.grade("a", autograder=grader)


async def test_settings_come_from_the_environment_at_call_time(fake_provider, monkeypatch):
    generate = LiteLLMGenerate(timeout=10)  # built before the environment is set
    monkeypatch.setenv("RUBRIC_WORKBENCH_MODEL", "openai/env-judge")
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_BASE", fake_provider.api_base)
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "env-key")
    await ONE.grade("a", autograder=PerCriterionGrader(generate))
    assert fake_provider.last_body["model"] == "env-judge"
    assert fake_provider.headers_seen[-1]["authorization"] == "Bearer env-key"
    assert "env-key" not in repr(generate)


async def test_rubric_grade_without_a_grader_uses_the_default_litellm_judge(
    fake_provider, monkeypatch
):
    monkeypatch.setenv("RUBRIC_WORKBENCH_MODEL", MODEL)
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_BASE", fake_provider.api_base)
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    result = await RUBRIC.grade("answer")
    assert result.score == pytest.approx(12 / 15)
    assert fake_provider.requests == 3


def test_grade_sync_through_litellm_twice(fake_provider):
    grader = PerCriterionGrader(judge(fake_provider))
    first = RUBRIC.grade_sync("answer", autograder=grader)
    second = RUBRIC.grade_sync("answer", autograder=grader)
    assert first.score == second.score == pytest.approx(12 / 15)
    assert fake_provider.requests == 6


def test_importing_grading_does_not_import_litellm():
    code = (
        "import sys, time\n"
        "start = time.process_time()\n"
        "import grading, grading.autograders, grading.llm\n"
        "print(round(time.process_time() - start, 3), 'litellm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    seconds, imported = out.stdout.split()
    assert imported == "False"
    # CPU seconds, not wall: importing litellm costs ~2.5 s of CPU; the wall clock of a loaded
    # machine (2.7 s seen at a load of 20) says nothing about the import.
    assert float(seconds) < 2.0


def test_fake_provider_records_json_bodies(fake_provider):
    import urllib.request

    request = urllib.request.Request(
        fake_provider.api_base + "/chat/completions",
        data=json.dumps({"model": "m", "messages": []}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        payload = json.loads(response.read())
    assert payload["object"] == "chat.completion"
    assert fake_provider.last_body == {"model": "m", "messages": []}


def test_graded_in_several_event_loops_the_process_exits_without_unclosed_session_noise(
        fake_provider):
    # grade_sync makes a loop per call; the connections each loop's client opened are closed
    # by the time the loop is gone or the process ends (no "Unclosed client session" lines,
    # no tracebacks at exit), and clients of finished loops are not kept.
    code = (
        "import asyncio, os\n"
        "from grading import Criterion, Rubric\n"
        "from grading.autograders import PerCriterionGrader\n"
        "from grading import http_limits\n"
        "rubric = Rubric([Criterion(requirement='Alpha'), Criterion(requirement='Beta')])\n"
        "grader = PerCriterionGrader()\n"
        "for _ in range(3):\n"
        "    assert rubric.grade_sync('answer', autograder=grader).score == 1.0\n"
        "async def more():\n"
        "    return await rubric.grade('answer', autograder=grader)\n"
        "assert asyncio.run(more()).score == 1.0\n"
        "print(len(http_limits._clients))\n"
    )
    env = {**__import__("os").environ, "RUBRIC_WORKBENCH_MODEL": MODEL,
           "RUBRIC_WORKBENCH_API_BASE": fake_provider.api_base,
           "RUBRIC_WORKBENCH_API_KEY": "test-key"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.split()[-1]) <= 1  # only the last loop's client may remain
    assert "Unclosed" not in out.stderr and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "Exception ignored" not in out.stderr, out.stderr[-3000:]
