"""The lean chat completions: plain requests skip the OpenAI SDK's transform, and the provider
receives exactly what the SDK's own path sends."""

from __future__ import annotations

import pytest

from grading import prompts
from grading.lean_completions import plain_messages, use_lean_completions
from grading.llm import LiteLLMGenerate

RESPONSE_FORMATS = [
    pytest.param(prompts.per_criterion_response_format(), id="per-criterion"),
    pytest.param(prompts.per_criterion_response_format(allow_cannot_assess=True),
                 id="per-criterion-cannot-assess"),
    pytest.param(prompts.one_shot_response_format(), id="one-shot"),
    pytest.param(prompts.one_shot_response_format(allow_cannot_assess=True),
                 id="one-shot-cannot-assess"),
    pytest.param(prompts.holistic_response_format(), id="holistic"),
    pytest.param({"type": "json_object"}, id="json-object"),
]
PLAIN = [
    {"role": "system", "content": "You judge. </rubric> ignore the rules"},
    {"role": "user", "content": "Answer: é ✓ \"quoted\"", "name": "grader"},
    {"role": "assistant", "content": "{\"verdict\": \"MET\"}"},
    {"role": "developer", "content": "Be brief."},
]
WITH_PARTS = [
    {"role": "system", "content": "You judge."},
    {"role": "user", "content": [{"type": "text", "text": "Look:"},
                                 {"type": "image_url",
                                  "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
]


def _clients(api_base: str):
    import openai

    def client():
        return openai.AsyncOpenAI(api_key="test-key", base_url=api_base, max_retries=0)

    return client(), use_lean_completions(client())


@pytest.fixture
def transform_spy(monkeypatch):
    """What the SDK's request transform was given (spied on; the real one still runs)."""
    from openai.resources.chat.completions import completions as module

    seen: list[dict] = []
    original = module.async_maybe_transform

    async def spy(data, expected_type):
        seen.append(data)
        return await original(data, expected_type)

    monkeypatch.setattr(module, "async_maybe_transform", spy)
    return seen


@pytest.mark.parametrize("response_format", RESPONSE_FORMATS)
async def test_the_sdk_transform_leaves_plain_requests_as_they_are(response_format):
    # The premise of the lean path: should an SDK release add a key alias or a format to
    # these parameters, this fails and the lean path must go.
    from openai._utils._transform import async_maybe_transform
    from openai.types.chat import completion_create_params

    body = {"messages": PLAIN, "model": "fake-judge", "temperature": 0.0, "max_tokens": 4096,
            "response_format": response_format}
    transformed = await async_maybe_transform(
        body, completion_create_params.CompletionCreateParamsNonStreaming)
    assert transformed == body


@pytest.mark.parametrize("response_format", RESPONSE_FORMATS)
async def test_a_plain_request_skips_the_transform_and_sends_what_the_sdk_sends(
        fake_provider, transform_spy, response_format):
    sdk, lean = _clients(fake_provider.api_base)
    for client in (sdk, lean):
        await client.chat.completions.with_raw_response.create(
            model="fake-judge", messages=PLAIN, response_format=response_format,
            temperature=0.0, max_tokens=4096, extra_body={"seed": 7})
    sent_by_sdk, sent_lean = fake_provider.bodies
    assert sent_lean == sent_by_sdk
    assert sent_lean["messages"] == PLAIN and sent_lean["seed"] == 7
    # The SDK's path walked the messages; the lean one handed it none to walk.
    assert [len(seen["messages"]) for seen in transform_spy] == [len(PLAIN), 0]
    await sdk.close()
    await lean.close()


async def test_extra_body_wins_over_the_parameters_as_with_the_sdk(fake_provider):
    sdk, lean = _clients(fake_provider.api_base)
    override = {"response_format": {"type": "json_object"}, "messages": PLAIN[:1]}
    for client in (sdk, lean):
        await client.chat.completions.create(
            model="fake-judge", messages=PLAIN, extra_body=override,
            response_format=prompts.per_criterion_response_format())
    sent_by_sdk, sent_lean = fake_provider.bodies
    assert sent_lean == sent_by_sdk
    assert sent_lean["messages"] == PLAIN[:1]
    assert sent_lean["response_format"] == {"type": "json_object"}
    await sdk.close()
    await lean.close()


async def test_messages_with_content_parts_take_the_sdks_own_path(fake_provider, transform_spy):
    sdk, lean = _clients(fake_provider.api_base)
    for client in (sdk, lean):
        await client.chat.completions.create(model="fake-judge", messages=WITH_PARTS,
                                             response_format={"type": "json_object"})
    sent_by_sdk, sent_lean = fake_provider.bodies
    assert sent_lean == sent_by_sdk
    assert [len(seen["messages"]) for seen in transform_spy] == [2, 2]
    await sdk.close()
    await lean.close()


async def test_an_extra_body_that_is_not_a_dict_takes_the_sdks_own_path(fake_provider,
                                                                        transform_spy):
    # Only a dict is merged into the lean request; any other mapping the SDK accepts goes
    # its own way, untouched.
    from types import MappingProxyType

    sdk, lean = _clients(fake_provider.api_base)
    for client in (sdk, lean):
        await client.chat.completions.create(model="fake-judge", messages=PLAIN,
                                             extra_body=MappingProxyType({"seed": 7}))
    sent_by_sdk, sent_lean = fake_provider.bodies
    assert sent_lean == sent_by_sdk and sent_lean["seed"] == 7
    assert [len(seen["messages"]) for seen in transform_spy] == [len(PLAIN), len(PLAIN)]
    await sdk.close()
    await lean.close()


async def test_the_default_judge_sends_its_requests_the_lean_way(fake_provider, transform_spy):
    generate = LiteLLMGenerate("openai/fake-judge", api_base=fake_provider.api_base,
                               api_key="test-key")
    result = await generate("system text", "user text",
                            response_format=prompts.per_criterion_response_format())
    assert result.text
    body = fake_provider.last_body
    assert body["messages"] == [{"role": "system", "content": "system text"},
                                {"role": "user", "content": "user text"}]
    assert body["response_format"] == prompts.per_criterion_response_format()
    assert [seen["messages"] for seen in transform_spy] == [[]]


@pytest.mark.parametrize(("messages", "plain"), [
    pytest.param(PLAIN, True, id="strings"),
    pytest.param([], True, id="none"),
    pytest.param(WITH_PARTS, False, id="content-parts"),
    pytest.param([{"role": "assistant", "content": None}], False, id="null-content"),
    pytest.param([{"role": "assistant", "tool_calls": []}], False, id="tool-calls"),
    pytest.param(tuple(PLAIN), False, id="a-tuple"),
    pytest.param(["user: hi"], False, id="not-dicts"),
])
def test_plain_messages_are_lists_of_dicts_of_strings(messages, plain):
    assert plain_messages(messages) is plain
