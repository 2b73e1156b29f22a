"""Judge-vs-people agreement on preferences, as the Compare page and the Agreement page show
it: kappa over A / TIE / B with its 95 % interval and n, and a plain reading that says
"can't tell yet" while the pairs are too few for the interval to mean much."""

from __future__ import annotations

import pandas as pd

from grading.pairwise.agreement import JudgeVsPeople
from storage.services.pair_agreement import CriterionPreferenceAgreement

# Under this many pairs a kappa's interval spans most of its range: no reading is given.
MIN_PAIRS = 10


def _figure(value: float | None, digits: str = ".2f") -> str:
    return "—" if value is None else format(value, digits)


def _interval(j: JudgeVsPeople) -> str:
    i = j.kappa_interval
    return "—" if i is None or i.low is None else f"{i.low:.2f} – {i.high:.2f}"


def reading(j: JudgeVsPeople) -> str:
    """One honest line: nothing to read, can't tell yet (how many pairs), or the range the
    kappa lies in."""
    if j.n == 0:
        return "no pair with both the judge's and the people's preference yet"
    if j.kappa is None:
        return j.note or "kappa undefined"
    if j.n < MIN_PAIRS or j.kappa_interval is None or j.kappa_interval.low is None:
        return (f"can't tell yet: {j.n} pair{'s' if j.n != 1 else ''} "
                f"(about {MIN_PAIRS} or more tell)")
    return f"kappa between {j.kappa_interval.low:.2f} and {j.kappa_interval.high:.2f}"


def agreement_rows(rows: list[CriterionPreferenceAgreement], *,
                   with_people: bool = False) -> list[dict]:
    """Per criterion, the judge against the people; ``with_people``: and the people among
    themselves (pairs two or more answered, their percent agreement, Krippendorff's alpha
    over A / TIE / B with its 95 % interval)."""
    found = []
    for r in rows:
        row = {"criterion": r.criterion or "overall", "n": r.judge_vs_people.n,
               "kappa": _figure(r.judge_vs_people.kappa),
               "95% interval": _interval(r.judge_vs_people),
               "agreement %": _figure(r.judge_vs_people.percent_agreement, ".0f"),
               "reading": reading(r.judge_vs_people)}
        if with_people:
            alpha = r.people.alpha_interval
            row.update({
                "pairs with 2+ people": r.people.pairs,
                "people agree %": _figure(r.people.percent_agreement, ".0f"),
                "people's alpha": _figure(r.people.alpha),
                "alpha 95% interval": ("—" if alpha is None or alpha.low is None
                                       else f"{alpha.low:.2f} – {alpha.high:.2f}")})
        found.append(row)
    return found


def agreement_frame(rows: list[CriterionPreferenceAgreement]) -> pd.DataFrame:
    """Per criterion: n, kappa, its interval, percent agreement and the reading."""
    return pd.DataFrame(agreement_rows(rows))
