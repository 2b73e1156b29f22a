"""A wording trial's figures: the judge's verdicts (or options) against people's, before and
after the rewording, on the same responses.

On a binary criterion: percent agreement, Cohen's kappa and macro-F1 (``compare_verdicts``).
On a multi-choice criterion the verdicts are option labels and the figures are the Agreement
page's (``grading.option_agreement.compare_options``): exact-match rate (percent agreement),
quadratic-weighted kappa on an ordinal scale (Cohen's kappa on a nominal one), macro-F1 over
the options. NA options and CANNOT_ASSESS are abstentions there, as everywhere. The bootstrap
intervals are on macro-F1 in both cases, resampling the responses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grading.agreement import PairwiseAgreement, compare_verdicts
from grading.bootstrap import Interval, bootstrap_interval
from grading.option_agreement import OptionPairwiseAgreement, OptionScale, compare_options
from grading.options import find_option
from grading.types import CriterionReport, Verdict
from storage.dto import Choice, CriterionInfo


@dataclass(frozen=True)
class AgreementFigures:
    agreement: PairwiseAgreement | OptionPairwiseAgreement
    macro_f1_interval: Interval | None


def scale_of(criterion: CriterionInfo) -> OptionScale | None:
    return OptionScale.of(criterion)


def compare(humans: Sequence[Choice], judged: Sequence[Choice | None],
            scale: OptionScale | None) -> PairwiseAgreement | OptionPairwiseAgreement:
    if scale is None:
        return compare_verdicts(list(humans), list(judged))
    return compare_options(list(humans), list(judged), scale)


def figures(humans: Sequence[Choice], judged: Sequence[Choice | None],
            scale: OptionScale | None) -> AgreementFigures:
    def macro_f1(indices: Sequence[int]) -> float | None:
        return compare([humans[i] for i in indices], [judged[i] for i in indices],
                       scale).balanced_f1

    return AgreementFigures(compare(humans, judged, scale),
                            bootstrap_interval(len(humans), macro_f1, seed=1))


def difference_interval(humans: Sequence[Choice], before: Sequence[Choice | None],
                        after: Sequence[Choice | None], scale: OptionScale | None
                        ) -> Interval | None:
    """After minus before, macro-F1, paired resamples of the responses."""
    def difference(indices: Sequence[int]) -> float | None:
        people = [humans[i] for i in indices]
        old = compare(people, [before[i] for i in indices], scale)
        new = compare(people, [after[i] for i in indices], scale)
        if old.balanced_f1 is None or new.balanced_f1 is None:
            return None
        return new.balanced_f1 - old.balanced_f1

    return bootstrap_interval(len(humans), difference, seed=1)


def human_choice(criterion: CriterionInfo, verdict: Verdict, option: str | None
                 ) -> Choice | None:
    """What people decided, as a trial compares it; None when it cannot be compared: an
    abstention (CANNOT_ASSESS, an NA option), or a decision carried from a version where the
    criterion was of another kind or had an option it no longer has."""
    if criterion.options is None:
        return verdict if option is None and verdict is not Verdict.CANNOT_ASSESS else None
    index = None if option is None else find_option(criterion.options, option)
    if index is None or criterion.options[index].na:
        return None
    return criterion.options[index].label


def stored_choice(verdict: str | None, option: str | None) -> Choice | None:
    """A stored judge verdict (grade_criteria row or trial result) as a choice."""
    if option is not None:
        return option
    return None if verdict is None else Verdict(verdict)


def report_entry(report: CriterionReport) -> dict[str, Any]:
    """A trial result's verdict and option from the judge's report on the criterion: the
    option label (verdict MET, or CANNOT_ASSESS for an NA option) on a multi-choice one."""
    choice = report.choice
    if choice is None or isinstance(choice, Verdict):
        return {"verdict": None if choice is None else choice.value, "option": None}
    na = report.multi_choice_verdict is not None and report.multi_choice_verdict.na
    return {"verdict": "CANNOT_ASSESS" if na else "MET", "option": choice}


def choice_text(choice: Choice | None) -> str:
    """A choice as the pages show it."""
    if choice is None:
        return "failed"
    return choice.value if isinstance(choice, Verdict) else choice
