"""Estimates: calls by grader, tokens from the real prompt builders, cost when known."""

from __future__ import annotations

import math

import pytest

from grading.prompts import (
    PER_CRITERION_SYSTEM_PROMPT,
    per_criterion_response_format,
    per_criterion_user_prompt,
)
from storage.jobs import estimate_run, total_estimate
from storage.jobs.estimate import COMPLETION_TOKENS_PER_VERDICT
from tests.jobs.helpers import CRITERIA, make_dataset, make_rubric


@pytest.fixture
def scope(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 10)
    return sessions, version, dataset, responses


@pytest.mark.parametrize(("grader", "calls"), [
    pytest.param("per_criterion", 30, id="per-criterion"),
    pytest.param("one_shot", 10, id="one-shot"),
    pytest.param("rubric_as_judge", 10, id="holistic"),
])
def test_calls_per_grader(scope, grader, calls):
    sessions, version, dataset, _ = scope
    estimate = estimate_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader=grader, model="openai/fake-judge")
    assert (estimate.calls, estimate.responses, estimate.criteria) == (calls, 10, 3)
    assert estimate.prompt_tokens > 0 and estimate.completion_tokens > 0


def test_prompt_tokens_come_from_the_real_prompts(scope):
    sessions, version, dataset, responses = scope
    estimate = estimate_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/fake-judge",
                            response_ids=[responses[0].id, responses[1].id])
    schema = str(per_criterion_response_format()).replace("'", '"')
    expected = 0
    for response in responses[:2]:
        for criterion in CRITERIA:
            prompt = per_criterion_user_prompt(criterion, response.output, response.query)
            expected += math.ceil(len(PER_CRITERION_SYSTEM_PROMPT) / 4)
            expected += math.ceil((len(prompt) + len(schema.replace(": ", ": "))) / 4)
    assert estimate.calls == 6
    assert estimate.prompt_tokens == pytest.approx(expected, rel=0.02)
    assert estimate.completion_tokens == 6 * COMPLETION_TOKENS_PER_VERDICT


def test_a_custom_system_prompt_changes_the_estimate(scope):
    sessions, version, dataset, _ = scope
    kwargs = {"rubric_version_id": version.id, "dataset_id": dataset.id,
              "grader": "one_shot", "model": "openai/fake-judge"}
    plain = estimate_run(sessions, **kwargs)
    empty = estimate_run(sessions, **kwargs, settings={"system_prompt": ""})
    longer = estimate_run(sessions, **kwargs, settings={"system_prompt": "x" * 4000})
    assert empty.prompt_tokens < plain.prompt_tokens  # the default prompt counts
    assert longer.prompt_tokens == empty.prompt_tokens + 10 * 1000  # 4000 chars per call


def test_cost_for_a_priced_model_and_unknown_otherwise(scope):
    sessions, version, dataset, _ = scope
    kwargs = {"rubric_version_id": version.id, "dataset_id": dataset.id,
              "grader": "per_criterion"}
    priced = estimate_run(sessions, **kwargs, model="openai/gpt-4o-mini")
    # gpt-4o-mini in litellm's map: $0.15 per million prompt tokens, $0.60 per million out.
    assert priced.cost == pytest.approx(
        priced.prompt_tokens * 0.15e-6 + priced.completion_tokens * 0.6e-6)
    unknown = estimate_run(sessions, **kwargs, model="openai/fake-judge")
    assert unknown.cost is None and "no price for 'openai/fake-judge'" in unknown.note
    assert total_estimate([priced, unknown])[3] is None
    assert total_estimate([priced, priced]) == (60, 2 * priced.prompt_tokens,
                                                2 * priced.completion_tokens,
                                                pytest.approx(2 * priced.cost))


def test_large_datasets_are_sampled_and_scaled(scope):
    sessions, version, dataset, _ = scope
    kwargs = {"rubric_version_id": version.id, "dataset_id": dataset.id,
              "grader": "per_criterion", "model": "openai/fake-judge"}
    full = estimate_run(sessions, **kwargs)
    sampled = estimate_run(sessions, **kwargs, sample_size=3)
    assert sampled.calls == full.calls == 30
    assert sampled.prompt_tokens == pytest.approx(full.prompt_tokens, rel=0.05)
    assert "3 of 10 responses" in sampled.note
    assert "every response" in full.note


def test_an_unknown_grader_is_refused(scope):
    sessions, version, dataset, _ = scope
    from grading.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown grader"):
        estimate_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                     grader="vibes", model="m")


@pytest.mark.parametrize("sample_size", [pytest.param(200, id="every-response"),
                                         pytest.param(4, id="sampled")])
def test_a_price_set_in_settings_gives_the_estimate_a_cost(scope, sample_size):
    sessions, version, dataset, _ = scope
    kwargs = {"rubric_version_id": version.id, "dataset_id": dataset.id,
              "grader": "per_criterion", "model": "openai/fake-judge",
              "sample_size": sample_size}
    unknown = estimate_run(sessions, **kwargs)
    assert unknown.cost is None and "Settings" in unknown.note
    priced = estimate_run(sessions, settings={"price": {"input_per_million": 3.0,
                                                        "output_per_million": 15.0}}, **kwargs)
    assert priced.cost == pytest.approx(
        (priced.prompt_tokens * 3.0 + priced.completion_tokens * 15.0) / 1_000_000)
    assert priced.cost > 0 and "price set in Settings" in priced.note
