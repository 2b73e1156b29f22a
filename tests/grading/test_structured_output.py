"""Servers that refuse OpenAI's json_schema option: one probe, then what works (real HTTP)."""

from __future__ import annotations

import pytest

from grading import Rubric
from grading.autograders import PerCriterionGrader, PerCriterionOneShotGrader
from grading.errors import ProviderError
from grading.llm import LiteLLMGenerate
from grading.structured_output import output_mode, request_format

MODEL = "openai/local-judge"
FAST = {"retry_base_delay": 0.001, "retry_max_delay": 0.01}
RUBRIC = Rubric.from_dict([
    {"weight": 10, "requirement": "Alpha"},
    {"weight": 5, "requirement": "Beta"},
    {"weight": -3, "requirement": "Gamma"},
])


def judge(fake, **kwargs) -> LiteLLMGenerate:
    return LiteLLMGenerate(MODEL, api_base=fake.api_base, timeout=10.0, **kwargs)


def kinds(fake) -> list[str | None]:
    return [(body.get("response_format") or {}).get("type") for body in fake.bodies]


async def test_a_server_that_refuses_json_schema_costs_one_probe_then_gets_json_mode(
        fake_provider):
    fake_provider.accepted_formats = {"json_object"}  # llama-cpp-python's server
    result = await RUBRIC.grade("answer", autograder=PerCriterionGrader(judge(fake_provider)))
    assert result.error is None
    assert result.score == pytest.approx(12 / 15)
    # three verdicts, one refused probe: never the 11 attempts x 4 passes of a "transient" 500
    assert fake_provider.requests == 4
    assert kinds(fake_provider) == ["json_schema", "json_object", "json_object", "json_object"]
    schema = fake_provider.answered[0]["response_format"]["schema"]
    assert schema["required"] == ["verdict", "reason"] or set(schema["required"]) >= {"verdict"}


async def test_what_an_endpoint_accepted_is_remembered_by_the_next_judge(fake_provider):
    fake_provider.accepted_formats = {"json_object"}
    await RUBRIC.grade("answer", autograder=PerCriterionGrader(judge(fake_provider)))
    fake_provider.reset()
    fake_provider.accepted_formats = {"json_object"}
    again = await RUBRIC.grade("answer", autograder=PerCriterionGrader(judge(fake_provider)))
    assert again.error is None
    assert kinds(fake_provider) == ["json_object"] * 3  # no probe the second time


async def test_a_server_with_no_json_option_at_all_grades_from_the_text(fake_provider):
    fake_provider.accepted_formats = set()
    result = await RUBRIC.grade(
        "answer", autograder=PerCriterionOneShotGrader(judge(fake_provider)))
    assert result.error is None
    assert result.raw_score == 12.0
    assert kinds(fake_provider) == ["json_schema", "json_object", None]


async def test_a_400_that_names_the_option_steps_down_too(fake_provider):
    fake_provider.accepted_formats = set()
    fake_provider.format_refusal_status = 400
    result = await RUBRIC.grade("answer", autograder=PerCriterionGrader(judge(fake_provider)))
    assert result.error is None
    assert fake_provider.requests == 5  # two refusals on the first call, then plain text


async def test_an_explicit_json_schema_mode_never_steps_down(fake_provider):
    fake_provider.accepted_formats = {"json_object"}
    fake_provider.format_refusal_status = 400
    generate = judge(fake_provider, structured_output="json_schema")
    with pytest.raises(ProviderError, match="json_object"):
        await generate("system", "user", response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}})
    assert kinds(fake_provider) == ["json_schema"]


async def test_an_error_that_is_not_about_the_option_is_not_a_refusal(fake_provider):
    from tests.fake_provider import Reply

    fake_provider.enqueue(Reply(status=400, error_message="context length exceeded"))
    with pytest.raises(ProviderError, match="context length"):
        await judge(fake_provider)("s", "u", response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}})
    assert kinds(fake_provider) == ["json_schema"]


async def test_json_object_and_off_modes_send_what_they_say(fake_provider):
    await RUBRIC.grade("a", autograder=PerCriterionGrader(
        judge(fake_provider, structured_output="json_object")))
    await RUBRIC.grade("a", autograder=PerCriterionGrader(
        judge(fake_provider, structured_output="off")))
    assert kinds(fake_provider) == ["json_object"] * 3 + [None] * 3


@pytest.mark.parametrize(("value", "mode"), [
    pytest.param(True, "auto", id="old-true"), pytest.param(False, "off", id="old-false"),
    pytest.param("JSON-Object", "json_object", id="spelling"),
    pytest.param(None, "auto", id="unset")])
def test_settings_map_to_modes(value, mode):
    assert output_mode(value) == mode


def test_an_unknown_mode_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="auto, json_schema, json_object, off"):
        output_mode("yaml")


def test_cache_keys_keep_a_bool_for_structured_output():
    assert LiteLLMGenerate("openai/x", structured_output="json_object").structured_output is True
    assert LiteLLMGenerate("openai/x", structured_output=False).structured_output is False
    assert request_format("off", {"type": "json_schema"}) is None
