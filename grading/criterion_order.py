"""The order a one-shot prompt lists the criteria in: the rubric's, or shuffled per response.

A judge that favours the criteria listed first (or last) in a one-shot prompt shows it only
when the same criterion is seen at different places. With ``shuffle_criteria`` every
response gets its own order, a pure function of the grader's seed, the rubric and the
response: a re-run sends the very same prompts (so the provider cache still answers them)
and each verdict records where its criterion was listed (``CriterionReport.
prompt_position``), from which ``grading.trust.criterion_position`` measures the effect.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from grading.types import Criterion


def criterion_order(criteria: Sequence[Criterion], *, shuffle: bool, seed: object = 0,
                    salt: str = "") -> tuple[int, ...]:
    """Shown position (0-based) -> index of the criterion in the rubric."""
    indices = list(range(len(criteria)))
    if shuffle:
        rubric = "\x00".join(c.requirement for c in criteria)
        random.Random(f"{seed}\x00criteria\x00{rubric}\x00{salt}").shuffle(indices)
    return tuple(indices)
