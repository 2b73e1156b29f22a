"""Prompt pieces and answer schemas for multi-choice criteria. Pure functions, no I/O.

Options are listed numbered from 1 in the order shown to the judge (``order``: shown
position -> original option index, a shuffle when the grader shuffles). The judge answers
with the label; ``grading.option_parsing`` also reads the number or the value.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from grading import placeholders
from grading.options import shown_label
from grading.prompts import (
    _before,
    _kind,
    complete_list,
    format_to_grade,
    neutralize,
    reason_schema,
)
from grading.reference import check_reference, extra_tags
from grading.types import Criterion, ToGradeInput

OPTIONS_TAG = "options"
OPTION_SCHEMA_NAME = "criterion_option"


def _graded(to_grade: ToGradeInput, query: str | None, reference: str | None) -> str:
    return format_to_grade(to_grade, query, reference, (OPTIONS_TAG,))


def option_order(criterion: Criterion, *, shuffle: bool, seed: object = 0,
                 salt: str = "") -> tuple[int, ...]:
    """Shown position -> original option index. Shuffled orders are a pure function of the
    seed, the criterion and ``salt`` (the response), so a rerun sends the same prompt."""
    indices = list(range(len(criterion.options or ())))
    if shuffle:
        random.Random(f"{seed}\x00{criterion.requirement}\x00{salt}").shuffle(indices)
    return tuple(indices)


def render_options(criterion: Criterion, order: Sequence[int],
                   extra: tuple[str, ...] = ()) -> str:
    options = criterion.options or ()
    lines = "\n".join(f"{position}. {neutralize(shown_label(options[index]), extra)}"
                      for position, index in enumerate(order, start=1))
    return f"<{OPTIONS_TAG}>\n{lines}\n</{OPTIONS_TAG}>"


def scale_words(criterion: Criterion) -> str:
    if criterion.scale_type == "ordinal":
        return "a rating on an ordered scale"
    return "a choice among unordered categories"


def option_user_prompt(
    criterion: Criterion, to_grade: ToGradeInput, query: str | None = None, *,
    order: Sequence[int], reference: str | None = None, examples_block: str = "",
) -> str:
    """The user message asking the judge to choose one option of one criterion."""
    extra = (OPTIONS_TAG, *extra_tags(check_reference(reference)))
    kind = _kind(criterion)
    penalty = (" It describes something to avoid: the options say how much of it the "
               "response shows." if kind == "NEGATIVE" else "")
    return (
        f"{_before(examples_block)}{_graded(to_grade, query, reference)}\n\n"
        f'<criterion kind="{kind}" scale="{criterion.scale_type}">\n'
        f"{neutralize(criterion.requirement, extra)}\n</criterion>\n"
        f"{render_options(criterion, order, extra)}\n\n"
        f"This criterion is {scale_words(criterion)}: choose the one option that best "
        f"describes the response.{penalty}\n"
        "Answer with JSON only, in exactly this shape:\n"
        f'{{"reason": "{placeholders.REASON}", "option": "{placeholders.OPTION}"}}'
    )


def option_labels(criterion: Criterion, order: Sequence[int]) -> list[str]:
    options = criterion.options or ()
    return [options[index].label for index in order]


def option_item_schema(criterion: Criterion, order: Sequence[int]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reason": reason_schema(),
            "option": {"type": "string", "enum": option_labels(criterion, order)},
        },
        "required": ["reason", "option"],
        "additionalProperties": False,
    }


def option_response_format(criterion: Criterion, order: Sequence[int]) -> dict[str, Any]:
    """OpenAI-style ``response_format``: the answer must be one of the criterion's labels."""
    return {"type": "json_schema", "json_schema": {
        "name": OPTION_SCHEMA_NAME, "schema": option_item_schema(criterion, order),
        "strict": True}}


# -- rubrics that mix binary and multi-choice criteria (one-shot and holistic graders) --------
def mixed_listing(criteria: Sequence[Criterion], orders: Sequence[Sequence[int] | None],
                  extra: tuple[str, ...]) -> str:
    """Every criterion numbered from 1 with kind and weight; multi-choice ones with their
    scale and options."""
    blocks = []
    for number, (criterion, order) in enumerate(zip(criteria, orders, strict=True), start=1):
        head = (f'<criterion number="{number}" kind="{_kind(criterion)}" '
                f'weight="{criterion.weight:g}"' + (' required="yes"' if criterion.required
                                                    else ""))
        body = neutralize(criterion.requirement, extra)
        if order is None:
            blocks.append(f"{head}>\n{body}\n</criterion>")
        else:
            blocks.append(f'{head} scale="{criterion.scale_type}">\n{body}\n'
                          f"{render_options(criterion, order, extra)}\n</criterion>")
    return "\n".join(blocks)


def one_shot_mixed_user_prompt(
    criteria: Sequence[Criterion], to_grade: ToGradeInput, query: str | None = None, *,
    orders: Sequence[Sequence[int] | None], allow_cannot_assess: bool = False,
    reference: str | None = None, examples_block: str = "",
) -> str:
    """The one-shot user message for a rubric with at least one multi-choice criterion."""
    from grading.prompts import _verdict_words

    extra = (OPTIONS_TAG, *extra_tags(check_reference(reference)))
    return (
        f"{_before(examples_block)}{_graded(to_grade, query, reference)}\n\n"
        f"<criteria>\n{mixed_listing(criteria, orders, extra)}\n</criteria>\n\n"
        "For a NEGATIVE criterion, MET means the response makes that mistake. A criterion "
        "listed with <options> is answered by choosing the one option that best describes "
        "the response.\n"
        f"Answer with JSON only, with exactly one entry for each number from 1 to "
        f"{len(criteria)}, in this shape:\n"
        f'{{"criteria": [{{"number": {placeholders.CRITERION_NUMBER}, '
        f'"reason": "{placeholders.REASON}", '
        f'"verdict": <{_verdict_words(allow_cannot_assess)}>}}, ...]}}\n'
        f'For a criterion with options, give "option": "{placeholders.OPTION}" instead of '
        '"verdict".'
    )


def one_shot_mixed_response_format(
    criteria: Sequence[Criterion], orders: Sequence[Sequence[int] | None], *,
    allow_cannot_assess: bool = False,
) -> dict[str, Any]:
    """Each entry is either a binary criterion's verdict or one multi-choice criterion's
    option, constrained to that criterion's labels; exactly one entry per criterion."""
    verdicts = ["MET", "UNMET", "CANNOT_ASSESS"] if allow_cannot_assess else ["MET", "UNMET"]
    binary = [n for n, o in enumerate(orders, start=1) if o is None]
    variants: list[dict[str, Any]] = []
    if binary:
        variants.append({
            "type": "object",
            "properties": {"number": {"type": "integer", "enum": binary},
                           "reason": reason_schema(),
                           "verdict": {"type": "string", "enum": verdicts}},
            "required": ["number", "reason", "verdict"], "additionalProperties": False})
    for number, (criterion, order) in enumerate(zip(criteria, orders, strict=True), start=1):
        if order is not None:
            item = option_item_schema(criterion, order)
            item = {**item, "properties": {"number": {"type": "integer", "enum": [number]},
                                           **item["properties"]},
                    "required": ["number", *item["required"]]}
            variants.append(item)
    schema = {"type": "object",
              "properties": {"criteria": complete_list({"anyOf": variants}, len(criteria))},
              "required": ["criteria"], "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {
        "name": "criteria_verdicts", "schema": schema, "strict": True}}


def holistic_mixed_user_prompt(
    criteria: Sequence[Criterion], to_grade: ToGradeInput, query: str | None = None, *,
    reference: str | None = None,
) -> str:
    """The holistic user message when some criteria are ratings or gates: the options are
    listed (in their own order) so that the judge can weigh where the response falls, and
    required criteria are marked with the gate rule (the holistic score has no verdicts for
    the aggregation to close a gate on, so the judge applies it)."""
    extra = (OPTIONS_TAG, *extra_tags(check_reference(reference)))
    orders = [tuple(range(len(c.options))) if c.options else None for c in criteria]
    return (
        f"{_graded(to_grade, query, reference)}\n\n<criteria>\n"
        f"{mixed_listing(criteria, orders, extra)}\n</criteria>\n\n"
        "Score the response from 0 to 100, taking the weights into account: meeting a "
        "POSITIVE criterion earns its weight, making the mistake a NEGATIVE criterion "
        "describes costs its weight, and a criterion with options earns its weight in "
        "proportion to how good the best-fitting option is.\n"
        f"{REQUIRED_RULE if any(c.required for c in criteria) else ''}"
        "Answer with JSON only, in exactly this shape:\n"
        f'{{"score": {placeholders.SCORE}, "reason": "{placeholders.HOLISTIC_REASON}"}}'
    )


REQUIRED_RULE = (
    'A criterion marked required="yes" is a gate: if the response fails it (a required '
    "POSITIVE criterion not met, a required NEGATIVE criterion's mistake made, a required "
    "rating at its worst option), the score is 0 whatever else it does.\n")
