"""What a run will cost before it runs: calls, approximate tokens, and money when known.

Calls: per-criterion = responses x criteria; one-shot and rubric-as-judge = responses.
Prompt tokens come from the graders' real prompt builders (on a sample of the responses when
there are many), at about four characters per token; completion tokens from the answer shape.
Retries and cache hits are not counted: the estimate is an upper bound for a first run.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grading.autograders import PerCriterionOneShotGrader, RubricAsJudgeGrader
from grading.autograders.per_criterion import PerCriterionGrader
from grading.calibration import RubricExamples, render_examples, render_examples_by_criterion
from grading.llm import _load_litellm
from grading.option_prompts import (
    holistic_mixed_user_prompt,
    one_shot_mixed_response_format,
    one_shot_mixed_user_prompt,
    option_response_format,
    option_user_prompt,
)
from grading.prompts import (
    holistic_response_format,
    holistic_user_prompt,
    one_shot_response_format,
    one_shot_user_prompt,
    per_criterion_response_format,
    per_criterion_user_prompt,
)
from grading.types import Criterion, ToGradeInput
from storage.engine import SessionFactory
from storage.jobs.run_options import calls_per_response
from storage.run_settings import RunSettings, TokenPrice
from storage.services import calibration
from storage.services import datasets as dataset_service
from storage.services import rubrics as rubric_service
from storage.services.calibration import CalibrationRefusedError

CHARS_PER_TOKEN = 4.0
SAMPLE_SIZE = 200
# Typical answer lengths in tokens: a verdict with a sentence or two of reason, per criterion.
COMPLETION_TOKENS_PER_VERDICT = 60
COMPLETION_TOKENS_HOLISTIC = 90
_SYSTEM_PROMPTS = {
    "per_criterion": PerCriterionGrader.default_system_prompt,
    "one_shot": PerCriterionOneShotGrader.default_system_prompt,
    "rubric_as_judge": RubricAsJudgeGrader.default_system_prompt,
}


@dataclass(frozen=True)
class RunEstimate:
    grader: str
    model: str
    responses: int
    criteria: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None  # USD; None when litellm has no price for the model
    note: str

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _prompts(grader: str, criteria: Sequence[Criterion], to_grade: ToGradeInput,
             query: str | None, allow_cannot_assess: bool,
             examples: RubricExamples | None = None, reference: str | None = None) -> list[str]:
    """The user messages one response costs, built as the graders build them: a rating's own
    prompt and schema (its options in the rubric's order), the reference answer's block."""
    shown = [s.examples for s in examples.sets] if examples is not None else None
    orders = [tuple(range(len(c.options))) if c.options else None for c in criteria]
    if grader == "per_criterion":
        schema = json.dumps(per_criterion_response_format(allow_cannot_assess=allow_cannot_assess))
        prompts = []
        for i, (c, order) in enumerate(zip(criteria, orders, strict=True)):
            block = render_examples(shown[i]) if shown else ""
            prompts.append(
                option_user_prompt(c, to_grade, query, order=order, reference=reference,
                                   examples_block=block)
                + json.dumps(option_response_format(c, order)) if order is not None else
                per_criterion_user_prompt(c, to_grade, query,
                                          allow_cannot_assess=allow_cannot_assess,
                                          examples_block=block, reference=reference) + schema)
        return prompts
    if grader == "one_shot":
        block = render_examples_by_criterion(shown) if shown else ""
        if any(order is not None for order in orders):
            return [one_shot_mixed_user_prompt(
                criteria, to_grade, query, orders=orders, allow_cannot_assess=allow_cannot_assess,
                reference=reference, examples_block=block) + json.dumps(
                one_shot_mixed_response_format(criteria, orders,
                                               allow_cannot_assess=allow_cannot_assess))]
        schema = json.dumps(one_shot_response_format(
            allow_cannot_assess=allow_cannot_assess, count=len(criteria)))
        return [one_shot_user_prompt(
            criteria, to_grade, query, allow_cannot_assess=allow_cannot_assess,
            examples_block=block, reference=reference) + schema]
    holistic = (holistic_mixed_user_prompt if any(c.options or c.required for c in criteria)
                else holistic_user_prompt)
    return [holistic(criteria, to_grade, query, reference=reference)
            + json.dumps(holistic_response_format())]


def _sample(count: int, size: int) -> list[int]:
    if count <= size:
        return list(range(count))
    return sorted({round(i * (count - 1) / (size - 1)) for i in range(size)})


def price(model: str, prompt_tokens: int, completion_tokens: int,
          user_price: TokenPrice | None = None) -> tuple[float | None, str]:
    """USD from the price set in Settings, else litellm's price map, or None and why."""
    if user_price is not None:
        return (user_price.cost(prompt_tokens, completion_tokens),
                f"cost at the price set in Settings (${user_price.input_per_million:g} in, "
                f"${user_price.output_per_million:g} out per million tokens)")
    litellm = _load_litellm()
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    except Exception:  # litellm raises for models it has no price for
        return None, (f"litellm has no price for '{model}', so the cost is unknown (set a "
                      "price for the model on the Settings page)")
    return float(prompt_cost + completion_cost), "cost from litellm's price map"


def estimate_for(
    *, grader: str, model: str, criteria: Sequence[Criterion],
    responses: Sequence[tuple[ToGradeInput, str | None]
                        | tuple[ToGradeInput, str | None, str | None]],
    settings: RunSettings | Mapping[str, Any] | None = None, sample_size: int = SAMPLE_SIZE,
    examples: RubricExamples | None = None,
) -> RunEstimate:
    """The estimate from criteria and (to_grade, query) pairs (and, for a calibrated run,
    the reviewed examples every prompt shows); no database. A response is (to_grade, query)
    or (to_grade, query, reference answer)."""
    settings = settings if isinstance(settings, RunSettings) else RunSettings.model_validate(
        dict(settings or {}))
    system = (settings.system_prompt if settings.system_prompt is not None
              else _SYSTEM_PROMPTS[grader])  # as the graders read it: "" is no prompt
    per_response = calls_per_response(grader, len(criteria), settings.samples)
    calls = per_response * len(responses)
    sample = _sample(len(responses), sample_size)
    prompt_tokens = 0
    for index in sample:
        to_grade, query, *more = responses[index]
        prompts = _prompts(grader, criteria, to_grade, query, settings.allow_cannot_assess,
                           examples, more[0] if more else None)
        prompt_tokens += sum(approx_tokens(system) + approx_tokens(p) for p in prompts)
    if sample:  # every sample of a criterion sends the same prompt again
        prompt_tokens = round(prompt_tokens * len(responses) / len(sample)) * (
            settings.samples if grader == "per_criterion" else 1)
    per_call_completion = {
        "per_criterion": COMPLETION_TOKENS_PER_VERDICT,
        "one_shot": 10 + COMPLETION_TOKENS_PER_VERDICT * len(criteria),
        "rubric_as_judge": COMPLETION_TOKENS_HOLISTIC,
    }[grader]
    completion_tokens = per_call_completion * calls
    cost, cost_note = price(model, prompt_tokens, completion_tokens, settings.price)
    sampled = (f"prompt tokens measured on {len(sample)} of {len(responses)} responses"
               if len(sample) < len(responses) else "prompt tokens measured on every response")
    if examples is not None:
        sampled += f"; with {examples.sets[0].requested} reviewed examples per criterion"
    note = (f"Approximate: about {CHARS_PER_TOKEN:g} characters per token; {sampled}; "
            f"answers assumed ~{per_call_completion} tokens per call; retries and cache hits "
            f"not counted; {cost_note}.")
    return RunEstimate(grader=grader, model=model, responses=len(responses),
                       criteria=len(criteria), calls=calls, prompt_tokens=prompt_tokens,
                       completion_tokens=completion_tokens, cost=cost, note=note)


def estimate_run(
    sessions: SessionFactory, *, rubric_version_id: int, dataset_id: int, grader: str,
    model: str, settings: RunSettings | Mapping[str, Any] | None = None,
    response_ids: Sequence[int] | None = None, sample_size: int = SAMPLE_SIZE,
) -> RunEstimate:
    """The estimate of one run (one grader, one model) over a dataset or a selection of it."""
    if grader not in _SYSTEM_PROMPTS:
        from grading.errors import ConfigurationError

        raise ConfigurationError(
            f"unknown grader {grader!r}; use one of {', '.join(_SYSTEM_PROMPTS)}")
    version = rubric_service.get_version(sessions, rubric_version_id)
    ids = list(response_ids) if response_ids is not None else _dataset_ids(sessions, dataset_id)
    sample = [ids[i] for i in _sample(len(ids), sample_size)]
    sampled = dataset_service.get_responses(sessions, sample)
    run_settings = (settings if isinstance(settings, RunSettings)
                    else RunSettings.model_validate(dict(settings or {})))
    examples = None
    if run_settings.calibration is not None:
        # Too few examples: the launch refuses it with the reason; estimated without them.
        with contextlib.suppress(CalibrationRefusedError):
            examples = calibration.preview_examples(sessions, rubric_version_id, grader,
                                                    run_settings.calibration)
    estimate = estimate_for(
        grader=grader, model=model, criteria=version.to_criteria(),
        responses=[(r.to_grade, r.query, r.reference) for r in sampled], settings=run_settings,
        sample_size=sample_size, examples=examples,
    )
    if len(sample) == len(ids):
        return estimate
    scale = len(ids) / len(sample)
    prompt_tokens = round(estimate.prompt_tokens * scale)
    completion_tokens = round(estimate.completion_tokens * scale)
    run_price = (settings if isinstance(settings, RunSettings)
                 else RunSettings.model_validate(dict(settings or {}))).price
    cost, _ = (price(model, prompt_tokens, completion_tokens, run_price)
               if estimate.cost is not None else (None, ""))
    note = estimate.note.replace(
        "prompt tokens measured on every response",
        f"prompt tokens measured on {len(sample)} of {len(ids)} responses")
    return RunEstimate(grader=grader, model=model, responses=len(ids),
                       criteria=estimate.criteria,
                       calls=calls_per_response(grader, estimate.criteria,
                                                run_settings.samples) * len(ids),
                       prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                       cost=cost, note=note)


def _dataset_ids(sessions: SessionFactory, dataset_id: int) -> list[int]:
    from storage.repositories import datasets as dataset_repo

    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        return dataset_repo.response_ids(session, dataset_id)


def total_estimate(estimates: Sequence[RunEstimate]) -> tuple[int, int, int, float | None]:
    """(calls, prompt tokens, completion tokens, cost or None if any cost is unknown)."""
    costs = [e.cost for e in estimates]
    return (sum(e.calls for e in estimates), sum(e.prompt_tokens for e in estimates),
            sum(e.completion_tokens for e in estimates),
            None if any(c is None for c in costs) else sum(c for c in costs if c is not None))


__all__ = ["RunEstimate", "estimate_for", "estimate_run", "total_estimate"]
