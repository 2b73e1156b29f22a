"""The length penalty: how much to subtract from a score for an overly long response."""

from __future__ import annotations

from grading.text import normalize_to_grade_input, word_count
from grading.types import LengthPenalty, ToGradeInput


def compute_length_penalty(to_grade: ToGradeInput, config: LengthPenalty) -> float:
    """The amount to subtract: 0 up to ``free_budget``, ``penalty_at_cap`` from ``max_cap`` on.

    A string is all output, as in ``rubric.utils.compute_length_penalty`` (its tags are not
    parsed here; ``Autograder.grade`` splits a tagged string before it gets here).
    """
    if isinstance(to_grade, str):
        sections = {"thinking": "", "output": to_grade}
    else:
        sections = normalize_to_grade_input(to_grade)
    if config.penalty_type == "OUTPUT_ONLY":
        text = sections["output"]
    elif config.penalty_type == "THINKING_ONLY":
        text = sections["thinking"]
    else:
        # Exactly rubric's text: a custom count_fn (e.g. len) sees the same string.
        text = sections["thinking"] + " " + sections["output"]
    count = (config.count_fn or word_count)(text)
    if count <= config.free_budget:
        return 0.0
    if count >= config.max_cap:
        return float(config.penalty_at_cap)
    fraction = (count - config.free_budget) / (config.max_cap - config.free_budget)
    return float(config.penalty_at_cap * fraction**config.exponent)


def apply_length_penalty(
    score: float | None, penalty: float, *, normalize: bool
) -> float | None:
    """Subtract the penalty from a score; clamp at 0 for normalised scores; None stays None."""
    if score is None:
        return None
    penalised = score - penalty
    return max(0.0, penalised) if normalize else penalised
