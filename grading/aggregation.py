"""The one aggregation function: criteria + verdicts + settings -> score and raw_score.

Every score in the product comes from here: the per-criterion graders, the holistic grader's
conversion, human overrides and human-only scores in storage. Do not write a second copy.

Rules:
- positive criterion MET earns ``w``; negative criterion MET subtracts ``|w|``; UNMET adds 0;
  weight 0 is recorded but never scored. A multi-choice criterion's chosen option earns
  ``value x w``; an NA option is an abstention, scored like CANNOT_ASSESS.
- CANNOT_ASSESS, by strategy: ``skip`` leaves the criterion out of numerator and denominator;
  ``zero`` keeps it in the denominator with no contribution; ``partial`` earns
  ``partial_credit * w`` on positive criteria and contributes 0 on negative ones; ``fail``
  takes the worst case for the weight's sign (positive: 0, negative: ``-|w|``; multi-choice:
  the worst scored option, lowest value for a positive weight, highest for a negative one).
- normalised: ``clamp01(sum / total positive weight)``; when the scored criteria are all
  negative: ``clamp01(1 + sum / sum|w|)``. Not normalised: the sum itself.
- when nothing is left to score, both score and raw_score are ``None``.
- a required criterion whose gate closed (``grading.gates``) makes the score 0 (not
  normalised: the sum if it is lower); raw_score stays the weighted sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grading import gates
from grading.length_penalty import apply_length_penalty, compute_length_penalty
from grading.options import find_option, worst_scored_option
from grading.text import normalize_to_grade_input
from grading.types import (
    CANNOT_ASSESS_STRATEGIES,
    Criterion,
    ScoringSettings,
    ToGradeInput,
    Verdict,
)


@dataclass(frozen=True)
class Aggregate:
    """A score before the length penalty, with the counts behind it."""

    score: float | None
    raw_score: float | None
    scored_count: int
    cannot_assess_count: int
    # Required criteria whose gate closed (0-based indices): the score is then 0.
    closed_gates: tuple[int, ...] = ()


def _clamp01(value: float) -> float:
    return max(0.0, min(1.0, value))


def aggregate_verdicts(
    criteria: Sequence[Criterion],
    verdicts: Sequence[Verdict | str],
    *,
    normalize: bool = True,
    cannot_assess: str = "skip",
    partial_credit: float = 0.5,
) -> Aggregate:
    """Score one response from one verdict per criterion (same order as ``criteria``)."""
    if len(criteria) != len(verdicts):
        raise ValueError(f"{len(criteria)} criteria but {len(verdicts)} verdicts")
    if cannot_assess not in CANNOT_ASSESS_STRATEGIES:
        raise ValueError(
            f"unknown CANNOT_ASSESS strategy {cannot_assess!r}; "
            f"use one of {', '.join(CANNOT_ASSESS_STRATEGIES)}"
        )
    if not 0.0 <= partial_credit <= 1.0:
        raise ValueError(f"partial_credit must be between 0 and 1, got {partial_credit}")

    total = 0.0
    positive_weight = 0.0
    negative_weight = 0.0
    scored = 0
    cannot_assess_count = 0
    closed: list[int] = []
    for index, (criterion, raw_verdict) in enumerate(zip(criteria, verdicts, strict=True)):
        value = read_choice(criterion, raw_verdict, index)
        weight = criterion.weight
        if value is None:  # an abstention: CANNOT_ASSESS or an NA option
            cannot_assess_count += 1
            if cannot_assess == "skip":
                continue
        if weight == 0:
            continue
        scored += 1
        if weight > 0:
            positive_weight += weight
        else:
            negative_weight += -weight
        if value is not None:
            contribution = value * weight
        elif cannot_assess == "partial" and weight > 0:
            contribution = partial_credit * weight
        elif cannot_assess == "fail":
            contribution = worst_value(criterion) * weight
        else:
            contribution = 0.0
        total += contribution
        if criterion.required and gates.closes(contribution, worst_value(criterion) * weight):
            closed.append(index)

    if scored == 0:
        return Aggregate(None, None, 0, cannot_assess_count)
    if not normalize:
        score = total
    elif positive_weight > 0:
        score = _clamp01(total / positive_weight)
    else:
        score = _clamp01(1.0 + total / negative_weight)
    if closed:
        score = gates.gated_score(score, total, normalize=normalize)
    return Aggregate(score, total, scored, cannot_assess_count, tuple(closed))


def read_choice(criterion: Criterion, raw: Verdict | str, index: int = 0) -> float | None:
    """The value (0..1) a verdict earns on this criterion, None for an abstention.

    Binary: MET 1, UNMET 0, CANNOT_ASSESS None. Multi-choice: the option named by its label
    (case and outer spaces ignored); an NA option or CANNOT_ASSESS (no option named) is an
    abstention."""
    if criterion.options is None:
        verdict = Verdict.parse(raw)
        if verdict is Verdict.CANNOT_ASSESS:
            return None
        return 1.0 if verdict is Verdict.MET else 0.0
    if isinstance(raw, str):
        found = find_option(criterion.options, raw)
        if found is not None:
            option = criterion.options[found]
            return None if option.na else option.value
        if raw.strip().upper().replace(" ", "_") == Verdict.CANNOT_ASSESS.value:
            return None
    labels = ", ".join(repr(o.label) for o in criterion.options)
    where = f"criterion {index + 1}" + (f" ('{criterion.name}')" if criterion.name else "")
    raise ValueError(f"{where}: {raw!r} is not one of its options ({labels})")


def worst_value(criterion: Criterion) -> float:
    """The value of the worst case for the weight's sign (the FAIL strategy): UNMET or MET
    on a binary criterion, the worst scored option on a multi-choice one."""
    if criterion.options is None:
        return 1.0 if criterion.weight < 0 else 0.0
    return criterion.options[worst_scored_option(criterion.options, criterion.weight)].value


def holistic_to_scores(
    criteria: Sequence[Criterion], llm_score: float, *, normalize: bool = True
) -> Aggregate:
    """Convert a holistic 0-100 judgment into the weighted-sum scale of the rubric."""
    if not 0.0 <= llm_score <= 100.0:
        raise ValueError(f"holistic score must be between 0 and 100, got {llm_score}")
    fraction = llm_score / 100.0
    positive_weight = sum(c.weight for c in criteria if c.weight > 0)
    negative_weight = sum(-c.weight for c in criteria if c.weight < 0)
    if positive_weight > 0:
        raw = fraction * positive_weight
    else:
        raw = -negative_weight * (1.0 - fraction)
    score = _clamp01(fraction) if normalize else raw
    return Aggregate(score, raw, len(criteria), 0)


def score_verdicts(
    criteria: Sequence[Criterion],
    verdicts: Sequence[Verdict | str],
    settings: ScoringSettings,
    to_grade: ToGradeInput | None = None,
) -> tuple[Aggregate, float | None, float | None]:
    """Aggregate, then apply the length penalty: returns (aggregate, penalty, final score).

    This is the path storage takes for effective and human scores; graders take the same
    two steps in ``Autograder.grade``.
    """
    result = aggregate_verdicts(
        criteria,
        verdicts,
        normalize=settings.normalize,
        cannot_assess=settings.cannot_assess,
        partial_credit=settings.partial_credit,
    )
    penalty = final_penalty(settings, to_grade)
    final = apply_length_penalty(result.score, penalty or 0.0, normalize=settings.normalize)
    return result, penalty, final


def final_penalty(settings: ScoringSettings, to_grade: ToGradeInput | None) -> float | None:
    """The length penalty these settings impose on this response (None when not configured)."""
    if settings.length_penalty is None or to_grade is None:
        return None
    return compute_length_penalty(normalize_to_grade_input(to_grade), settings.length_penalty)
