"""PairwiseGrader: which of two responses better satisfies each criterion, asked in both
orders, scored through the one aggregation function."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from grading.autograders.base import Autograder, GenerateFn, OnError
from grading.autograders.judge_io import criterion_label
from grading.errors import ConfigurationError, GradingError
from grading.llm import default_generate_fn
from grading.pairwise import aggregation, orders
from grading.pairwise.calibration import PairExamples, render_pair_examples
from grading.pairwise.parsing import parse_preference_answer
from grading.pairwise.prompts import (
    PAIR_CRITERION_SYSTEM_PROMPT,
    PAIR_HOLISTIC_SYSTEM_PROMPT,
    pair_criterion_user_prompt,
    pair_holistic_user_prompt,
    preference_response_format,
)
from grading.pairwise.report import CriterionPreference, PairReport
from grading.retry import DEFAULT_CALL_DEADLINE, CallOutcome, Spend
from grading.text import normalize_to_grade_input
from grading.types import CannotAssessStrategy, Criterion, ToGradeInput, TokenUsage


class IdenticalResponsesError(GradingError):
    """The two responses of a pair are the same text: there is nothing to compare."""


class _Caller(Autograder):
    """The graders' configuration checks, concurrency bound, limiter and retry loop, for the
    pairwise questions (``Autograder._ask``); never grades one response itself."""

    default_system_prompt = PAIR_CRITERION_SYSTEM_PROMPT

    async def judge(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a pairwise grader compares two responses: call compare(a, b, rubric)")


class PairwiseGrader:
    """Compares response B with response A on a rubric.

    Per criterion (``holistic=True``: one question for the whole rubric) the judge says which
    response better satisfies it, A, B or TIE (for a negative criterion: which better avoids
    the mistake). Every question is asked twice, with A shown first and with B shown first;
    the second answer is mapped back, and answers that disagree make a TIE counted as
    position-inconsistent. Options as the other graders': ``generate_fn`` (default: litellm
    with the configured model), ``max_retries`` (unusable answers), ``transport_retries`` and
    the retry delays (429/5xx), ``call_deadline``, ``max_concurrency`` (litellm calls also
    take a slot of their endpoint's shared limiter), ``allow_cannot_assess``, ``on_error``
    (``"raise"``: a criterion no answer could be read for raises GradingError; ``"report"``:
    it is a failed preference with the reason, left out of the score), ``examples``
    (pairs people decided, per criterion, shown as worked examples: never the pair being
    compared itself; grading.pairwise.calibration).
    """

    def __init__(
        self,
        generate_fn: GenerateFn = default_generate_fn,
        *,
        holistic: bool = False,
        system_prompt: str | None = None,
        max_retries: int = 2,
        max_concurrency: int | None = None,
        cannot_assess: CannotAssessStrategy = "skip",
        allow_cannot_assess: bool = False,
        on_error: OnError = "raise",
        transport_retries: int = 4,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 60.0,
        call_deadline: float | None = DEFAULT_CALL_DEADLINE,
        examples: PairExamples | None = None,
    ):
        if cannot_assess != "skip":
            raise ConfigurationError(
                f"a comparison scores CANNOT_ASSESS only with the 'skip' strategy, not "
                f"{cannot_assess!r}: 'zero', 'partial' and 'fail' would count a criterion no "
                "one could judge as a win for one side")
        self.holistic = holistic
        self.examples = examples
        self._custom_system_prompt = system_prompt is not None
        self._caller = _Caller(
            generate_fn, system_prompt=system_prompt, max_retries=max_retries,
            max_concurrency=max_concurrency, allow_cannot_assess=allow_cannot_assess,
            on_error=on_error, transport_retries=transport_retries,
            retry_base_delay=retry_base_delay, retry_max_delay=retry_max_delay,
            call_deadline=call_deadline)

    @property
    def generate_fn(self) -> GenerateFn:
        return self._caller.generate_fn

    @property
    def on_error(self) -> OnError:
        return self._caller.on_error

    @property
    def allow_cannot_assess(self) -> bool:
        return self._caller.allow_cannot_assess

    @property
    def calls_per_pair_per_question(self) -> int:
        return 2  # both orders

    async def compare(self, a: ToGradeInput, b: ToGradeInput,
                      rubric: Sequence[Criterion] | Any, query: str | None = None
                      ) -> PairReport:
        """Compare ``b`` with ``a``; raises IdenticalResponsesError for the same text twice."""
        criteria = list(getattr(rubric, "rubric", rubric))
        if not criteria:
            raise ConfigurationError("the rubric has no criteria")
        first, second = normalize_to_grade_input(a), normalize_to_grade_input(b)
        if first == second:
            raise IdenticalResponsesError(
                "the two responses are the same text: there is nothing to compare")
        quoted = tuple(t for s in (first, second) for t in s.values() if t) + (
            (query,) if query else ())
        if self.holistic:
            questions = [(aggregation.HOLISTIC_CRITERION, functools.partial(
                pair_holistic_user_prompt, criteria))]
        else:
            questions = [(c, functools.partial(pair_criterion_user_prompt, c))
                         for c in criteria]
        blocks = self._example_blocks([c for c, _ in questions], first, second)
        allow = self.allow_cannot_assess
        parse = functools.partial(parse_preference_answer, allow_cannot_assess=allow,
                                  quoted=quoted)
        response_format = preference_response_format(holistic=self.holistic,
                                                      allow_cannot_assess=allow)
        system = None if self._custom_system_prompt else (
            PAIR_HOLISTIC_SYSTEM_PROMPT if self.holistic else PAIR_CRITERION_SYSTEM_PROMPT)

        async def ask(prompt_fn: Any, x: ToGradeInput, y: ToGradeInput,
                      block: str) -> CallOutcome[Any]:
            prompt = prompt_fn(x, y, query, allow_cannot_assess=allow, examples_block=block)
            return await self._caller._ask(prompt, parse, response_format,
                                           system_prompt=system)

        outcomes = await asyncio.gather(*(
            ask(prompt_fn, x, y, block) for (_c, prompt_fn), both in zip(questions, blocks,
                                                                       strict=True)
            for (x, y), block in zip(((first, second), (second, first)), both, strict=True)))
        spend = Spend()
        preferences = []
        for number, (criterion, _fn) in enumerate(questions, start=1):
            one, two = outcomes[2 * number - 2], outcomes[2 * number - 1]
            spend.merge(one.spend)
            spend.merge(two.spend)
            for outcome in (one, two):
                if not outcome.ok:
                    self._caller._fail(criterion_label(number, criterion), outcome)
            preferences.append(_preference(criterion, one, two))
        return _report(preferences, self.holistic, spend)

    def _example_blocks(self, questions: Sequence[Criterion], first: dict[str, str],
                        second: dict[str, str]) -> list[tuple[str, str]]:
        """Per question, the examples block for each order (A first, B first)."""
        if self.examples is None:
            return [("", "")] * len(questions)
        self.examples.check([c.requirement for c in questions])
        blocks = []
        for chosen in self.examples.sets:
            shown = chosen.for_pair(first["output"], second["output"])
            blocks.append((render_pair_examples(shown),
                           render_pair_examples(shown, swapped=True)))
        return blocks

    def compare_sync(self, a: ToGradeInput, b: ToGradeInput, rubric: Any,
                     query: str | None = None) -> PairReport:
        """``compare`` for scripts without an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.compare(a, b, rubric, query))
        raise RuntimeError("compare_sync() was called inside a running event loop; use "
                           "'await grader.compare(...)'")


def _preference(criterion: Criterion, one: CallOutcome[Any],
                two: CallOutcome[Any]) -> CriterionPreference:
    first, first_reason = one.value if one.ok else (None, "")
    second, second_reason = two.value if two.ok else (None, "")
    errors = [f"{order}: {o.error}" for order, o in (("A shown first", one),
                                                     ("B shown first", two)) if not o.ok]
    if errors:
        return CriterionPreference(criterion=criterion, first=first, second=second,
                                   first_reason=first_reason, second_reason=second_reason,
                                   error="; ".join(errors))
    preference, consistent = orders.combine(first, second)
    return CriterionPreference(criterion=criterion, first=first, second=second,
                               first_reason=first_reason, second_reason=second_reason,
                               preference=preference, consistent=consistent)


def _report(preferences: list[CriterionPreference], holistic: bool,
            spend: Spend) -> PairReport:
    return pair_report(preferences, holistic, calls=spend.calls, usage=spend.usage,
                       cost=spend.cost)


def pair_report(preferences: list[CriterionPreference], holistic: bool, *, calls: int = 0,
                usage: TokenUsage | None = None, cost: float | None = None) -> PairReport:
    """The pair's result from its per-criterion preferences (one judge's, or a panel's)."""
    result = aggregation.aggregate_preferences(preferences)
    failed = [p for p in preferences if p.error is not None]
    error = None
    if failed:
        first = failed[0]
        where = first.criterion.name or first.criterion.requirement[:60]
        error = (f"{len(failed)} of {len(preferences)} criteria could not be judged; first: "
                 f"{where!r}: {first.error}")
    elif result.score is None:
        error = "nothing left to score: every scored criterion was CANNOT_ASSESS"
    return PairReport(
        preferences=preferences, holistic=holistic, score=result.score,
        margin=None if result.score is None else 2 * result.score - 1,
        winner=aggregation.winner(result.score), scored_count=result.scored_count,
        cannot_assess_count=result.cannot_assess_count - len(failed),
        failed_count=len(failed),
        inconsistent_count=sum(p.consistent is False for p in preferences),
        error=error, calls=calls, token_usage=usage, completion_cost=cost)
