"""Agreement on preferences: a judge against people, and people among themselves.

A preference is a nominal answer over three classes, A, TIE and B (the options of
``aggregation.PREFERENCE_OPTIONS``); CANNOT_ASSESS is an abstention, and a key where either
side abstained is left out and counted (``grading.option_agreement``'s convention), as is a
key with no answer (``None``).

- Judge vs people: Cohen's kappa (unweighted: A, TIE and B are not points on a scale a judge
  is graded on by distance), percent agreement, ``n`` the pairs compared, and a 95% percentile
  bootstrap interval of the kappa over those pairs (seeded).
- People among themselves: on the pairs answered by two or more people, percent agreement over
  every two reviewers of the same pair, and Krippendorff's alpha (nominal; it allows any
  number of reviewers per pair and missing answers) with its bootstrap interval.
A figure that cannot be computed is None and ``note`` says why.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from itertools import combinations

from grading.bootstrap import Interval
from grading.option_agreement import (
    OptionConfusion,
    OptionScale,
    alpha_interval,
    compare_options,
    kappa_interval,
    options_alpha,
)
from grading.pairwise.aggregation import PREFERENCE_OPTIONS

PREFERENCE_SCALE = OptionScale(PREFERENCE_OPTIONS, "nominal", "preference")
_ABSTAIN = "CANNOT_ASSESS"


@dataclass(frozen=True)
class JudgeVsPeople:
    criterion: str
    n: int  # pairs with a preference (A, TIE or B) from both
    excluded_cannot_assess: int
    only_judge: int
    only_people: int
    percent_agreement: float | None  # 0-100
    kappa: float | None
    kappa_interval: Interval | None
    confusion: OptionConfusion  # rows: the judge, columns: people; A, TIE, B
    note: str


@dataclass(frozen=True)
class PeopleAgreement:
    criterion: str
    pairs: int  # pairs with a preference (A, TIE or B) from two or more people
    reviewer_pairs: int  # two reviewers of one pair, over those pairs
    percent_agreement: float | None  # share of those reviewer pairs that agree, 0-100
    alpha: float | None
    alpha_interval: Interval | None
    note: str


def _given(source: Mapping[Hashable, str | None]) -> dict[Hashable, str]:
    return {k: v for k, v in source.items() if v is not None}


def judge_vs_people(judge: Mapping[Hashable, str | None], people: Mapping[Hashable, str | None],
                    *, criterion: str = "", resamples: int = 1000, seed: int = 0,
                    level: float = 0.95) -> JudgeVsPeople:
    """How far the people's preference agrees with the judge's, keyed alike (pair ids)."""
    a, b = _given(judge), _given(people)
    found = compare_options(a, b, PREFERENCE_SCALE)
    interval = kappa_interval(a, b, PREFERENCE_SCALE, resamples=resamples, seed=seed,
                              level=level) if found.kappa is not None else None
    return JudgeVsPeople(
        criterion=criterion, n=found.pairs_used,
        excluded_cannot_assess=found.excluded_cannot_assess, only_judge=found.only_in_a,
        only_people=found.only_in_b, percent_agreement=found.percent_agreement,
        kappa=found.kappa, kappa_interval=interval, confusion=found.confusion,
        note=found.note.replace("Cohen's kappa undefined", "kappa undefined"))


def people_agreement(answers: Mapping[Hashable, Mapping[str, str | None]], *,
                     criterion: str = "", resamples: int = 1000, seed: int = 0,
                     level: float = 0.95) -> PeopleAgreement:
    """``answers``: pair -> reviewer -> their preference. Only pairs with two or more
    preferences (CANNOT_ASSESS left out) count."""
    units = {key: {who: side for who, side in per.items()
                   if side is not None and side != _ABSTAIN}
             for key, per in answers.items()}
    units = {key: per for key, per in units.items() if len(per) >= 2}
    for per in units.values():  # a side that is no preference is named, never dropped
        for side in per.values():
            PREFERENCE_SCALE.parse(side)
    couples = [(x, y) for per in units.values() for x, y in combinations(per.values(), 2)]
    if not units:
        return PeopleAgreement(criterion, 0, 0, None, None, None,
                               "no pair has a preference from two or more people")
    reviewers = sorted({who for per in units.values() for who in per})
    sources = [{key: per[who] for key, per in units.items() if who in per}
               for who in reviewers]
    alpha = options_alpha(sources, PREFERENCE_SCALE)
    interval = (alpha_interval(sources, PREFERENCE_SCALE, resamples=resamples, seed=seed,
                               level=level) if alpha.alpha is not None else None)
    return PeopleAgreement(
        criterion=criterion, pairs=len(units), reviewer_pairs=len(couples),
        percent_agreement=100 * sum(x == y for x, y in couples) / len(couples),
        alpha=alpha.alpha, alpha_interval=interval, note=alpha.note)
