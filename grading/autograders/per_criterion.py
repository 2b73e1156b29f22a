"""PerCriterionGrader: one judge call per criterion, run concurrently under the grader's bound."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from grading.autograders.base import Autograder, Judgment, criterion_label, quotable_texts
from grading.autograders.reports import (
    answered_report,
    fallback_report,
    judged_report,
    option_order_for,
)
from grading.calibration import ReviewedExample, render_examples
from grading.option_parsing import parse_option_answer
from grading.option_prompts import option_response_format, option_user_prompt
from grading.parsing import parse_verdict_answer
from grading.prompts import (
    PER_CRITERION_SYSTEM_PROMPT,
    per_criterion_response_format,
    per_criterion_user_prompt,
)
from grading.retry import CallOutcome, Spend
from grading.types import Criterion, CriterionReport, ToGradeInput


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The first real failure in a TaskGroup's exception group (siblings were cancelled)."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return first_error(exc)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
    return group


class PerCriterionGrader(Autograder):
    """Asks the judge about each criterion separately; the most careful and the most calls."""

    default_system_prompt = PER_CRITERION_SYSTEM_PROMPT
    takes_examples = True

    async def judge(
        self, to_grade: ToGradeInput, rubric: Sequence[Criterion], query: str | None = None,
        *, examples: Sequence[Sequence[ReviewedExample]] | None = None,
        reference_submission: str | None = None,
    ) -> Judgment:
        """``examples``: per criterion, the reviewed examples its call shows (calibration)."""
        criteria = list(rubric)
        response_format = per_criterion_response_format(
            allow_cannot_assess=self.allow_cannot_assess
        )
        parse = functools.partial(
            parse_verdict_answer, allow_cannot_assess=self.allow_cannot_assess,
            quoted=quotable_texts(to_grade, query),
        )

        orders = [option_order_for(self, c, to_grade) if c.options else None for c in criteria]

        async def judge_one(index: int, criterion: Criterion) -> CallOutcome[Any]:
            examples_block = render_examples(examples[index - 1]) if examples else ""
            order = orders[index - 1]
            if order is not None:
                prompt = option_user_prompt(
                    criterion, to_grade, query, order=order, reference=reference_submission,
                    examples_block=examples_block)
                outcome = await self._ask(
                    prompt, functools.partial(parse_option_answer, options=criterion.options,
                                              order=order, quoted=quotable_texts(to_grade, query)),
                    option_response_format(criterion, order))
            else:
                prompt = per_criterion_user_prompt(
                    criterion, to_grade, query, allow_cannot_assess=self.allow_cannot_assess,
                    examples_block=examples_block, reference=reference_submission,
                )
                outcome = await self._ask(prompt, parse, response_format)
            if not outcome.ok and (outcome.fatal or self.fallback_for(criterion) is None):
                # In raise mode this ends the TaskGroup, which cancels and awaits the others.
                self._fail(criterion_label(index, criterion), outcome)
            return outcome

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(judge_one(index, criterion))
                    for index, criterion in enumerate(criteria, start=1)
                ]
        except BaseExceptionGroup as failures:
            error = first_error(failures)
            raise error from error.__cause__  # keep its own cause, drop the group wrapper

        spend = Spend()
        reports: list[CriterionReport] = []
        fallbacks: list[str] = []
        failed: list[str] = []
        for index, (criterion, task) in enumerate(zip(criteria, tasks, strict=True), start=1):
            outcome = task.result()
            spend.merge(outcome.spend)
            label = criterion_label(index, criterion)
            if outcome.ok:
                answer, reason = outcome.value
                reports.append(answered_report(criterion, answer, reason, orders[index - 1]))
                continue
            fallback = None if outcome.fatal else self.fallback_for(criterion)
            if fallback is not None:
                report = fallback_report(criterion, fallback, outcome.error or "")
                reports.append(report)
                fallbacks.append(f"{label} ({report.choice})")
            else:
                reports.append(judged_report(criterion, None, error=outcome.error))
                failed.append(f"{label}: {outcome.error}")
        return Judgment(
            criteria=criteria,
            reports=reports,
            error=summarize_failures(len(criteria), failed, fallbacks),
            spend=spend,
        )


def summarize_failures(total: int, failed: list[str], fallbacks: list[str]) -> str | None:
    """One line for EvaluationReport.error; None when every criterion was judged."""
    parts = []
    if failed:
        parts.append(
            f"{len(failed)} of {total} criteria could not be judged; first: {failed[0]}"
        )
    if fallbacks:
        parts.append(
            f"fallback verdicts used for {len(fallbacks)} of {total} criteria: "
            + ", ".join(fallbacks)
        )
    return "; ".join(parts) or None



