"""Per-criterion preferences -> the pair's result, through the one aggregation function.

The rule (documented in docs/guide/pairwise.md): each criterion becomes a three-option
criterion of the same name and requirement, weight ``|w|``, whose options are B's preference:
``A`` (A better) = 0, ``TIE`` = 0.5, ``B`` (B better) = 1 — the +1 / 0 / -1 of a preference for
B, shifted onto the 0..1 option scale. For a NEGATIVE (penalty) criterion the question asked
was which response better *avoids* the mistake, so its preference already points at the
better response and its weight counts with its magnitude: a penalty weighs as much in a
comparison as it costs in a grade. ``grading.aggregation.aggregate_verdicts`` then scores the
preferences exactly as it scores verdicts:

- score = sum(value x |w|) / sum(|w|) over the scored criteria: B's weighted preference
  share (normalised, the only way a comparison is read); margin = 2 x score - 1;
- weight 0: recorded, never scored;
- CANNOT_ASSESS, and a criterion whose judge call failed (no preference), are left out of
  numerator and denominator (the ``skip`` strategy; the others would count a criterion no
  one could judge as a win for A or B, so a PairwiseGrader refuses them);
- the winner is B above 0.5, A below, TIE at exactly 0.5 (within 1e-9); none when nothing
  was scored.
``required`` gates do not apply to a comparison (both responses may fail a gate): the
derived criteria are not required. Swapping A and B turns a score s into 1 - s.
"""

from __future__ import annotations

from collections.abc import Sequence

from grading.aggregation import Aggregate, aggregate_verdicts
from grading.options import CriterionOption
from grading.pairwise.report import CriterionPreference, Winner
from grading.types import Criterion, Verdict

PREFERENCE_OPTIONS = (
    CriterionOption(label="A", value=0.0),
    CriterionOption(label="TIE", value=0.5),
    CriterionOption(label="B", value=1.0),
)
HOLISTIC_CRITERION = Criterion(name="overall", weight=1.0,
                               requirement="The response better satisfies the rubric as a whole")
_EVEN_TOLERANCE = 1e-9


def preference_criterion(criterion: Criterion) -> Criterion:
    """The three-option criterion a preference on ``criterion`` is scored as."""
    return Criterion(name=criterion.name, requirement=criterion.requirement,
                     section=criterion.section, weight=abs(criterion.weight),
                     options=PREFERENCE_OPTIONS)


def aggregate_preferences(preferences: Sequence[CriterionPreference]) -> Aggregate:
    """B's weighted preference share over ``preferences`` (see the module's rule)."""
    criteria = [preference_criterion(p.criterion) for p in preferences]
    choices = [p.preference if p.preference is not None else Verdict.CANNOT_ASSESS
               for p in preferences]
    return aggregate_verdicts(criteria, choices, normalize=True, cannot_assess="skip")


def winner(score: float | None) -> Winner | None:
    """B above 0.5, A below, TIE at 0.5; None when nothing was scored."""
    if score is None:
        return None
    if abs(score - 0.5) <= _EVEN_TOLERANCE:
        return "TIE"
    return "B" if score > 0.5 else "A"
