"""PerCriterionGrader: one judge call per criterion, run concurrently under the grader's bound."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from grading.autograders.base import Autograder, Judgment
from grading.autograders.judge_io import criterion_label, quotable_texts
from grading.autograders.reports import (
    CRITERION_FIELDS,
    answered_report,
    fallback_report,
    judged_report,
    option_order_for,
)
from grading.calibration import ReviewedExample, render_examples
from grading.option_parsing import parse_option_answer
from grading.option_prompts import option_response_format, option_user_prompt
from grading.options import MultiChoiceVerdict
from grading.panels import combine_options
from grading.parsing import parse_verdict_answer
from grading.prompts import (
    PER_CRITERION_SYSTEM_PROMPT,
    per_criterion_response_format,
    per_criterion_user_prompt,
)
from grading.retry import CallOutcome, Spend
from grading.samples import TIE, majority, sampling, tally
from grading.ties import binary_tie
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
    takes_samples = True

    async def judge(
        self, to_grade: ToGradeInput, rubric: Sequence[Criterion], query: str | None = None,
        *, examples: Sequence[Sequence[ReviewedExample]] | None = None,
        reference_submission: str | None = None,
    ) -> Judgment:
        """``examples``: per criterion, the reviewed examples its call shows (calibration)."""
        criteria = list(rubric)
        orders = [option_order_for(self, c, to_grade) if c.options else None for c in criteria]
        outcomes = await judge_each(
            self, list(enumerate(criteria, start=1)), to_grade, query, orders=orders,
            examples=examples, reference=reference_submission, samples=self.samples)
        spend = Spend()
        tally = Tally()
        reports: list[CriterionReport] = []
        for index, criterion in enumerate(criteria, start=1):
            sampled = outcomes[index]
            for outcome in sampled:
                spend.merge(outcome.spend)
            if self.samples == 1:
                reports.append(tally.report(self, index, criterion, sampled[0],
                                            orders[index - 1]))
            else:
                reports.append(tally.sampled_report(self, index, criterion, sampled,
                                                    orders[index - 1]))
        return Judgment(
            criteria=criteria,
            reports=reports,
            error=summarize_failures(len(criteria), tally.failed, tally.fallbacks),
            spend=spend,
        )


async def ask_criterion(
    grader: Autograder, criterion: Criterion, to_grade: ToGradeInput, query: str | None, *,
    order: tuple[int, ...] | None, examples_block: str = "", reference: str | None = None,
    system_prompt: str | None = None,
) -> CallOutcome[Any]:
    """One criterion's own judge call: a verdict, or a multi-choice criterion's option."""
    quoted = quotable_texts(to_grade, query)
    if order is not None:
        prompt = option_user_prompt(criterion, to_grade, query, order=order, reference=reference,
                                    examples_block=examples_block)
        parse: Any = functools.partial(parse_option_answer, options=criterion.options,
                                       order=order, quoted=quoted)
        return await grader._ask(prompt, parse, option_response_format(criterion, order),
                                 system_prompt=system_prompt)
    allow = grader.allow_cannot_assess
    prompt = per_criterion_user_prompt(criterion, to_grade, query, allow_cannot_assess=allow,
                                       examples_block=examples_block, reference=reference)
    parse = functools.partial(parse_verdict_answer, allow_cannot_assess=allow, quoted=quoted)
    return await grader._ask(prompt, parse,
                             per_criterion_response_format(allow_cannot_assess=allow),
                             system_prompt=system_prompt)


async def judge_each(
    grader: Autograder, numbered: Sequence[tuple[int, Criterion]], to_grade: ToGradeInput,
    query: str | None, *, orders: Sequence[tuple[int, ...] | None],
    examples: Sequence[Sequence[ReviewedExample]] | None = None, reference: str | None = None,
    system_prompt: str | None = None, samples: int = 1,
) -> dict[int, list[CallOutcome[Any]]]:
    """``samples`` calls per (number, criterion), all run concurrently under the grader's
    bound; each number's outcomes in sample order. In raise mode the first failure no
    fallback covers is raised (the other calls are cancelled and awaited)."""

    async def judge_one(index: int, criterion: Criterion, sample: int) -> CallOutcome[Any]:
        with sampling(sample):  # this task's own context: the cache keys the sample apart
            outcome = await ask_criterion(
                grader, criterion, to_grade, query, order=orders[index - 1],
                examples_block=render_examples(examples[index - 1]) if examples else "",
                reference=reference, system_prompt=system_prompt)
        if not outcome.ok and (outcome.fatal or grader.fallback_for(criterion) is None):
            # In raise mode this ends the TaskGroup, which cancels and awaits the others.
            grader._fail(criterion_label(index, criterion), outcome)
        return outcome

    try:
        async with asyncio.TaskGroup() as group:
            tasks = {index: [group.create_task(judge_one(index, criterion, sample))
                             for sample in range(samples)]
                     for index, criterion in numbered}
    except BaseExceptionGroup as failures:
        error = first_error(failures)
        raise error from error.__cause__  # keep its own cause, drop the group wrapper
    return {index: [task.result() for task in sampled] for index, sampled in tasks.items()}


class Tally:
    """The criteria that fell back or failed, for ``summarize_failures``."""

    def __init__(self) -> None:
        self.fallbacks: list[str] = []
        self.failed: list[str] = []

    def report(self, grader: Autograder, index: int, criterion: Criterion,
               outcome: CallOutcome[Any], order: tuple[int, ...] | None) -> CriterionReport:
        """The report for one criterion's call: judged, a fallback verdict, or a failure."""
        if outcome.ok:
            answer, reason = outcome.value
            return answered_report(criterion, answer, reason, order,
                                   shuffled=grader.shuffle_options)
        label = criterion_label(index, criterion)
        fallback = None if outcome.fatal else grader.fallback_for(criterion)
        if fallback is not None:
            report = fallback_report(criterion, fallback, outcome.error or "")
            self.fallbacks.append(f"{label} ({report.choice})")
            return report
        self.failed.append(f"{label}: {outcome.error}")
        return judged_report(criterion, None, error=outcome.error)

    def sampled_report(self, grader: Autograder, index: int, criterion: Criterion,
                       outcomes: Sequence[CallOutcome[Any]],
                       order: tuple[int, ...] | None) -> CriterionReport:
        """The samples that answered combined (grading.samples: the majority on a binary
        criterion, the panels' option rule on a multi-choice one), with every sample's
        choice kept; when none answered, the first sample's failure or fallback."""
        answered = [answered_report(criterion, *o.value, order,
                                    shuffled=grader.shuffle_options) if o.ok else None
                    for o in outcomes]
        choices = tuple(None if r is None or r.choice is None else str(r.choice)
                        for r in answered)
        if criterion.options is not None:
            return self._options_report(grader, index, criterion, outcomes, answered,
                                        choices, order)
        winner = majority(choices)
        if winner is None:
            first = self.report(grader, index, criterion, outcomes[0], order)
            return first.model_copy(update={"samples": choices})
        if winner == TIE:  # the one tie rule a panel follows too (grading.ties)
            verdict, _note = binary_tie(tally(choices), criterion_weight=criterion.weight)
            reason = f"the samples tied ({tally(choices)}): undecided"
            fields = {name: getattr(criterion, name) for name in CRITERION_FIELDS}
            return CriterionReport(**fields, verdict=verdict, reason=reason, samples=choices)
        chosen = next(r for r, c in zip(answered, choices, strict=True) if c == winner)
        reason = f"{chosen.reason} (majority of samples: {tally(choices)})".lstrip()
        return chosen.model_copy(update={"samples": choices, "reason": reason})

    def _options_report(self, grader: Autograder, index: int, criterion: Criterion,
                        outcomes: Sequence[CallOutcome[Any]],
                        answered: Sequence[CriterionReport | None],
                        choices: tuple[str | None, ...],
                        order: tuple[int, ...] | None) -> CriterionReport:
        """A multi-choice criterion's samples by ``combine_options``, the rule panels use:
        an ordinal scale takes the median (a mode of 1, 3, 5 would abstain), a nominal one
        the most chosen option; a tie goes to the worse option, NA options abstain."""
        decision = combine_options(choices, criterion)
        if decision.choice is None:  # every sample failed
            first = self.report(grader, index, criterion, outcomes[0], order)
            return first.model_copy(update={"samples": choices})
        chosen = next((r for r, c in zip(answered, choices, strict=True)
                       if c == decision.choice), None)
        if chosen is None:  # every sample abstained (CANNOT_ASSESS or an NA option)
            first = next(r for r in answered if r is not None)
            fields = {name: getattr(criterion, name) for name in CRITERION_FIELDS}
            return CriterionReport(
                **fields, multi_choice_verdict=MultiChoiceVerdict(value=0.0, na=True),
                reason=f"every sample abstained ({tally(choices)})",
                shuffle_order=first.shuffle_order, samples=choices)
        reason = f"{chosen.reason} (samples: {decision.note})".lstrip()
        return chosen.model_copy(update={"samples": choices, "reason": reason})


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



