"""PerCriterionOneShotGrader: every criterion judged in a single call.

A judge whose list leaves criteria out (a small model answering criteria 1-2 of 5), or whose
entry for a criterion only copies the format's placeholder, keeps the verdicts it gave; each
criterion not judged is asked in a call of its own, with the same model and settings, and the
grade says so (``Judgment.reason`` and ``notes``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from grading.autograders.base import Autograder, Judgment
from grading.autograders.judge_io import quotable_texts
from grading.autograders.per_criterion import Tally, judge_each, summarize_failures
from grading.autograders.reports import (
    answered_report,
    fallback_report,
    judged_report,
    option_order_for,
)
from grading.calibration import ReviewedExample, render_examples_by_criterion
from grading.criterion_order import criterion_order
from grading.option_parsing import parse_mixed_criteria_verdicts
from grading.option_prompts import one_shot_mixed_response_format, one_shot_mixed_user_prompt
from grading.parsing import CriteriaAnswer, missing_numbers, parse_criteria_verdicts
from grading.prompts import (
    ONE_SHOT_SYSTEM_PROMPT,
    PER_CRITERION_SYSTEM_PROMPT,
    one_shot_response_format,
    one_shot_user_prompt,
)
from grading.retry import Spend
from grading.types import Criterion, CriterionReport, ToGradeInput


def left_out_note(missing: Sequence[int], copied: Sequence[int], count: int) -> str:
    """What the grade records when the one-shot answer did not judge every criterion."""
    def numbers(values: Sequence[int]) -> str:
        return ", ".join(str(n) for n in values)

    left_out = [n for n in missing if n not in copied]
    parts = []
    if left_out:
        parts.append(f"left out criterion number(s) {numbers(left_out)} of {count}")
    if copied:
        parts.append(f"copied the answer format's placeholder instead of judging criterion "
                     f"number(s) {numbers(copied)} of {count}")
    each = ("it was judged in a call of its own" if len(missing) == 1
            else "each was judged in a call of its own")
    return f"the judge's one-shot answer {' and '.join(parts)}; {each}"


class PerCriterionOneShotGrader(Autograder):
    """One call returning a verdict per numbered criterion; cheaper, a little less careful."""

    default_system_prompt = ONE_SHOT_SYSTEM_PROMPT
    takes_examples = True
    takes_criterion_shuffle = True

    async def judge(
        self, to_grade: ToGradeInput, rubric: Sequence[Criterion], query: str | None = None,
        *, examples: Sequence[Sequence[ReviewedExample]] | None = None,
        reference_submission: str | None = None,
    ) -> Judgment:
        """``examples``: per criterion, the reviewed examples to show (calibration); each
        example response appears once with people's verdicts on its criteria. With
        ``shuffle_criteria`` the prompt lists the criteria in this response's own order
        (grading.criterion_order); the verdicts come back in the rubric's order, each with
        the position it was listed at."""
        rubric_criteria = list(rubric)
        if not self.shuffle_criteria:
            return await self._judge_listed(to_grade, rubric_criteria, query,
                                            examples=examples,
                                            reference_submission=reference_submission)
        shown = criterion_order(rubric_criteria, shuffle=True, seed=self.seed,
                                salt=repr(to_grade))
        judgment = await self._judge_listed(
            to_grade, [rubric_criteria[i] for i in shown], query,
            examples=None if examples is None else [examples[i] for i in shown],
            reference_submission=reference_submission, shown=shown)
        listed = judgment.reports or []  # one report per criterion, in the listed order
        by_rubric = sorted(zip(shown, listed, strict=True), key=lambda pair: pair[0])
        return dataclasses.replace(judgment, criteria=rubric_criteria,
                                   reports=[report for _index, report in by_rubric])

    async def _judge_listed(
        self, to_grade: ToGradeInput, criteria: list[Criterion], query: str | None, *,
        examples: Sequence[Sequence[ReviewedExample]] | None,
        reference_submission: str | None, shown: tuple[int, ...] | None = None,
    ) -> Judgment:
        """One call about ``criteria`` in the order given (reports in that order too).
        ``shown``: the criteria were shuffled (listed position -> rubric index), so each
        verdict the answer gave records its position and notes speak of rubric numbers."""
        examples_block = render_examples_by_criterion(examples) if examples else ""
        orders = [option_order_for(self, c, to_grade) if c.options else None for c in criteria]
        if any(order is not None for order in orders):
            parse: Any = functools.partial(
                parse_mixed_criteria_verdicts, criteria=criteria, orders=orders,
                allow_cannot_assess=self.allow_cannot_assess,
                quoted=quotable_texts(to_grade, query))
            prompt = one_shot_mixed_user_prompt(
                criteria, to_grade, query, orders=orders,
                allow_cannot_assess=self.allow_cannot_assess, reference=reference_submission,
                examples_block=examples_block)
            response_format = one_shot_mixed_response_format(
                criteria, orders, allow_cannot_assess=self.allow_cannot_assess)
        else:
            parse = functools.partial(
                parse_criteria_verdicts,
                count=len(criteria),
                allow_cannot_assess=self.allow_cannot_assess,
                quoted=quotable_texts(to_grade, query),
            )
            prompt = one_shot_user_prompt(
                criteria, to_grade, query, allow_cannot_assess=self.allow_cannot_assess,
                examples_block=examples_block, reference=reference_submission,
            )
            response_format = one_shot_response_format(
                allow_cannot_assess=self.allow_cannot_assess, count=len(criteria))
        outcome = await self._ask(prompt, parse, response_format)
        if outcome.ok:
            answer: CriteriaAnswer = outcome.value
            found = answer.verdicts
            reports: list[CriterionReport | None] = [
                _listed_at(answered_report(criterion, *found[number], orders[number - 1],
                                           shuffled=self.shuffle_options),
                           number if shown is not None else None)
                if number in found else None
                for number, criterion in enumerate(criteria, start=1)
            ]
            missing = missing_numbers(found, len(criteria))
            if not missing:
                return Judgment(criteria=criteria, reports=[r for r in reports if r],
                                spend=outcome.spend)
            return await self._judge_left_out(
                criteria, reports, missing, to_grade, query, orders=orders, examples=examples,
                reference=reference_submission, spend=outcome.spend, copied=answer.copied,
                shown=shown)
        if not outcome.fatal and self.fallback_verdicts is not None:
            # One answer covers every criterion, so a failed answer fails them all.
            fallbacks = []
            used = []
            for index, criterion in enumerate(criteria, start=1):
                verdict = self.fallback_for(criterion)
                assert verdict is not None
                report = fallback_report(criterion, verdict, outcome.error or "")
                fallbacks.append(report)
                used.append((_rubric_number(index, shown), report.choice))
            error = summarize_failures(len(criteria), [], [
                f"criterion {number} ({choice})" for number, choice in sorted(used)])
            return Judgment(criteria=criteria, reports=fallbacks, error=error,
                            spend=outcome.spend)
        self._fail(f"judging all {len(criteria)} criteria in one call", outcome)
        failed = [judged_report(c, None, error=outcome.error) for c in criteria]
        error = f"the judge gave no usable answer for the {len(criteria)} criteria: {outcome.error}"
        return Judgment(criteria=criteria, reports=failed, error=error, spend=outcome.spend)

    async def _judge_left_out(
        self, criteria: list[Criterion], reports: list[CriterionReport | None],
        missing: list[int], to_grade: ToGradeInput, query: str | None, *,
        orders: Sequence[tuple[int, ...] | None],
        examples: Sequence[Sequence[ReviewedExample]] | None, reference: str | None,
        spend: Spend, copied: Sequence[int] = (), shown: tuple[int, ...] | None = None,
    ) -> Judgment:
        """One per-criterion call for each criterion the one-shot answer left out, with the
        same model and settings; the verdicts that came back are kept as they are."""
        # The one-shot system prompt speaks of a numbered list; a call about one criterion
        # gets the per-criterion one, unless the user wrote their own.
        system = (PER_CRITERION_SYSTEM_PROMPT if self.system_prompt == ONE_SHOT_SYSTEM_PROMPT
                  else self.system_prompt)
        outcomes = await judge_each(
            self, [(n, criteria[n - 1]) for n in missing], to_grade, query, orders=orders,
            examples=examples, reference=reference, system_prompt=system)
        tally = Tally()
        total = Spend()
        total.merge(spend)
        for number in missing:
            outcome = outcomes[number][0]
            total.merge(outcome.spend)
            reports[number - 1] = tally.report(self, _rubric_number(number, shown),
                                               criteria[number - 1], outcome,
                                               orders[number - 1])
        note = left_out_note(sorted(_rubric_number(n, shown) for n in missing),
                             sorted(_rubric_number(n, shown) for n in copied), len(criteria))
        return Judgment(
            criteria=criteria, reports=[r for r in reports if r is not None],
            error=summarize_failures(len(criteria), tally.failed, tally.fallbacks),
            spend=total, reason=note, notes=(note,))


def _listed_at(report: CriterionReport, position: int | None) -> CriterionReport:
    """The report with the position its criterion was listed at (None: not shuffled)."""
    return report if position is None else report.model_copy(
        update={"prompt_position": position})


def _rubric_number(listed: int, shown: tuple[int, ...] | None) -> int:
    """The rubric's number (from 1) of the criterion listed at ``listed`` (from 1)."""
    return listed if shown is None else shown[listed - 1] + 1
