"""PerCriterionOneShotGrader: every criterion judged in a single call."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from grading.autograders.base import Autograder, Judgment, quotable_texts
from grading.autograders.per_criterion import summarize_failures
from grading.autograders.reports import (
    answered_report,
    fallback_report,
    judged_report,
    option_order_for,
)
from grading.calibration import ReviewedExample, render_examples_by_criterion
from grading.option_parsing import parse_mixed_criteria_answer
from grading.option_prompts import one_shot_mixed_response_format, one_shot_mixed_user_prompt
from grading.parsing import parse_criteria_answer
from grading.prompts import ONE_SHOT_SYSTEM_PROMPT, one_shot_response_format, one_shot_user_prompt
from grading.types import Criterion, ToGradeInput


class PerCriterionOneShotGrader(Autograder):
    """One call returning a verdict per numbered criterion; cheaper, a little less careful."""

    default_system_prompt = ONE_SHOT_SYSTEM_PROMPT
    takes_examples = True

    async def judge(
        self, to_grade: ToGradeInput, rubric: Sequence[Criterion], query: str | None = None,
        *, examples: Sequence[Sequence[ReviewedExample]] | None = None,
        reference_submission: str | None = None,
    ) -> Judgment:
        """``examples``: per criterion, the reviewed examples to show (calibration); each
        example response appears once with people's verdicts on its criteria."""
        criteria = list(rubric)
        examples_block = render_examples_by_criterion(examples) if examples else ""
        orders = [option_order_for(self, c, to_grade) if c.options else None for c in criteria]
        if any(order is not None for order in orders):
            parse: Any = functools.partial(
                parse_mixed_criteria_answer, criteria=criteria, orders=orders,
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
                parse_criteria_answer,
                count=len(criteria),
                allow_cannot_assess=self.allow_cannot_assess,
                quoted=quotable_texts(to_grade, query),
            )
            prompt = one_shot_user_prompt(
                criteria, to_grade, query, allow_cannot_assess=self.allow_cannot_assess,
                examples_block=examples_block, reference=reference_submission,
            )
            response_format = one_shot_response_format(
                allow_cannot_assess=self.allow_cannot_assess)
        outcome = await self._ask(prompt, parse, response_format)
        if outcome.ok:
            reports = [
                answered_report(criterion, answer, reason, order)
                for criterion, (answer, reason), order in zip(criteria, outcome.value, orders,
                                                              strict=True)
            ]
            return Judgment(criteria=criteria, reports=reports, spend=outcome.spend)
        if not outcome.fatal and self.fallback_verdicts is not None:
            # One answer covers every criterion, so a failed answer fails them all.
            reports = []
            used = []
            for index, criterion in enumerate(criteria, start=1):
                verdict = self.fallback_for(criterion)
                assert verdict is not None
                report = fallback_report(criterion, verdict, outcome.error or "")
                reports.append(report)
                used.append(f"criterion {index} ({report.choice})")
            error = summarize_failures(len(criteria), [], used)
            return Judgment(criteria=criteria, reports=reports, error=error, spend=outcome.spend)
        self._fail(f"judging all {len(criteria)} criteria in one call", outcome)
        reports = [judged_report(c, None, error=outcome.error) for c in criteria]
        error = f"the judge gave no usable answer for the {len(criteria)} criteria: {outcome.error}"
        return Judgment(criteria=criteria, reports=reports, error=error, spend=outcome.spend)
