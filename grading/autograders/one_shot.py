"""PerCriterionOneShotGrader: every criterion judged in a single call."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from grading.autograders.base import (
    Autograder,
    Judgment,
    fallback_report,
    judged_report,
    quotable_texts,
)
from grading.autograders.per_criterion import summarize_failures
from grading.calibration import ReviewedExample, render_examples_by_criterion
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
    ) -> Judgment:
        """``examples``: per criterion, the reviewed examples to show (calibration); each
        example response appears once with people's verdicts on its criteria."""
        criteria = list(rubric)
        parse = functools.partial(
            parse_criteria_answer,
            count=len(criteria),
            allow_cannot_assess=self.allow_cannot_assess,
            quoted=quotable_texts(to_grade, query),
        )
        prompt = one_shot_user_prompt(
            criteria, to_grade, query, allow_cannot_assess=self.allow_cannot_assess,
            examples_block=render_examples_by_criterion(examples) if examples else "",
        )
        outcome = await self._ask(
            prompt, parse, one_shot_response_format(allow_cannot_assess=self.allow_cannot_assess)
        )
        if outcome.ok:
            reports = [
                judged_report(criterion, verdict, reason)
                for criterion, (verdict, reason) in zip(criteria, outcome.value, strict=True)
            ]
            return Judgment(criteria=criteria, reports=reports, spend=outcome.spend)
        if not outcome.fatal and self.fallback_verdicts is not None:
            # One answer covers every criterion, so a failed answer fails them all.
            reports = []
            used = []
            for index, criterion in enumerate(criteria, start=1):
                verdict = self.fallback_for(criterion)
                assert verdict is not None
                reports.append(fallback_report(criterion, verdict, outcome.error or ""))
                used.append(f"criterion {index} ({verdict.value})")
            error = summarize_failures(len(criteria), [], used)
            return Judgment(criteria=criteria, reports=reports, error=error, spend=outcome.spend)
        self._fail(f"judging all {len(criteria)} criteria in one call", outcome)
        reports = [judged_report(c, None, error=outcome.error) for c in criteria]
        error = f"the judge gave no usable answer for the {len(criteria)} criteria: {outcome.error}"
        return Judgment(criteria=criteria, reports=reports, error=error, spend=outcome.spend)
