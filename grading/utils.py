"""``rubric.utils``: text helpers, the length penalty, JSON answer parsing, default generate."""

from __future__ import annotations

import json
from typing import Any

from grading.length_penalty import compute_length_penalty
from grading.llm import default_generate_fn
from grading.parsing import ParseError, extract_json_object
from grading.schemas import OneShotOutput, PerCriterionOutput, RubricAsJudgeOutput
from grading.text import normalize_to_grade_input, parse_thinking_output, word_count
from grading.types import LengthPenalty, ThinkingOutputDict, ToGradeInput

# rubric 2.x names: ours returns text (or a GenerateResult), which every grader reads.
default_per_criterion_generate_fn = default_generate_fn
default_oneshot_generate_fn = default_generate_fn
default_rubric_as_judge_generate_fn = default_generate_fn


def parse_json_to_dict(json_string: str) -> dict[str, Any]:
    """The JSON object in an LLM answer: bare, in a code fence, or amid prose.

    Like ``rubric.utils.parse_json_to_dict``, except that when the answer holds several
    objects the LAST one is taken (the model's own answer after anything it quoted).
    Raises ``json.JSONDecodeError`` when there is none, as rubric does.
    """
    try:
        return extract_json_object(json_string)
    except ParseError as exc:
        text = json_string if isinstance(json_string, str) else ""
        raise json.JSONDecodeError(str(exc), text, 0) from None


__all__ = [
    "LengthPenalty",
    "OneShotOutput",
    "PerCriterionOutput",
    "RubricAsJudgeOutput",
    "ThinkingOutputDict",
    "ToGradeInput",
    "compute_length_penalty",
    "default_generate_fn",
    "default_oneshot_generate_fn",
    "default_per_criterion_generate_fn",
    "default_rubric_as_judge_generate_fn",
    "normalize_to_grade_input",
    "parse_json_to_dict",
    "parse_thinking_output",
    "word_count",
]
