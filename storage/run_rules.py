"""Which run options a grader can honour — one rule for the CLI, the Grade page and
``runs.create_run`` (which enforces it); each surface words the refusal in its own terms.

Graders are named as the runs store them (``per_criterion``, ``one_shot``,
``rubric_as_judge``); the CLI's hyphenated names are accepted too.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum


class OptionsShuffle(Enum):
    """Why option shuffling cannot be launched."""

    ONE_SCORE_GRADER = "one_score_grader"  # rubric-as-judge shows no options
    NO_OPTIONS = "no_options"  # no criterion of the rubric has options


def _kinds(graders: Iterable[str]) -> set[str]:
    return {g.replace("-", "_") for g in graders}


def samples_need_other_graders(samples: int, graders: Iterable[str]) -> bool:
    """Several samples per criterion asked of a grader other than per-criterion (which alone
    asks about one criterion per call)."""
    return samples > 1 and bool(_kinds(graders) - {"per_criterion"})


def criteria_shuffle_needs_other_graders(shuffle: bool, graders: Iterable[str]) -> bool:
    """Criterion shuffling asked of a grader other than one-shot (which alone lists every
    criterion in one prompt)."""
    return shuffle and bool(_kinds(graders) - {"one_shot"})


def options_shuffle_refusal(shuffle: bool, graders: Iterable[str],
                            any_options: bool) -> OptionsShuffle | None:
    """Why option shuffling cannot be launched with these graders on a rubric that has
    (``any_options``) or lacks multi-choice criteria; None when it can (or is off)."""
    if not shuffle:
        return None
    if "rubric_as_judge" in _kinds(graders):
        return OptionsShuffle.ONE_SCORE_GRADER
    if not any_options:
        return OptionsShuffle.NO_OPTIONS
    return None
