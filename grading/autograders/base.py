"""The Autograder base: configuration, the call to ``generate_fn``, retries, fallbacks, and
``grade() = judge() -> aggregate() -> length penalty``."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import ValidationError

from grading.aggregation import aggregate_verdicts, final_penalty
from grading.autograders.judge_io import (
    as_generate_result,
    overrides,
    rubric_judge_text,
    takes_keyword,
)
from grading.autograders.options import check_call_options, check_fallbacks
from grading.calibration import RubricExamples
from grading.errors import ConfigurationError, GradingError, ProviderError
from grading.gates import gate_label
from grading.length_penalty import apply_length_penalty
from grading.limiter import limiter_for
from grading.llm import LiteLLMGenerate, default_generate_fn
from grading.reference import check_reference
from grading.retry import (
    DEFAULT_CALL_DEADLINE,
    CallOutcome,
    RetryPolicy,
    Spend,
    call_with_retries,
)
from grading.samples import check_samples
from grading.text import normalize_to_grade_input
from grading.types import (
    CannotAssessStrategy,
    Criterion,
    CriterionReport,
    DefaultFallbackVerdicts,
    EvaluationReport,
    GenerateResult,
    LengthPenalty,
    ScoringSettings,
    ToGradeInput,
    Verdict,
)

T = TypeVar("T")
OnError = Literal["raise", "report"]
GenerateFn = Callable[..., Any]
DEFAULT_MAX_CONCURRENCY = 8  # for a custom generate_fn (litellm's limit is discovered)


@dataclass
class Judgment:
    """What ``judge()`` hands to ``aggregate()``.

    ``reports`` holds one CriterionReport per criterion (per-criterion graders, and holistic
    fallbacks); ``llm_score`` the holistic 0-100 number; ``error`` a whole-grade failure
    (``on_error="report"``) or a note that fallback verdicts were used.
    """

    criteria: list[Criterion]
    reports: list[CriterionReport] | None = None
    llm_score: float | None = None
    reason: str | None = None
    error: str | None = None
    spend: Spend = field(default_factory=Spend)
    # What the user should know about how the verdicts were reached (EvaluationReport.notes).
    notes: tuple[str, ...] = ()


class Autograder(ABC):
    """Base of the graders. Subclasses implement ``judge()``; most reuse ``aggregate()``."""

    default_system_prompt: ClassVar[str] = ""
    # Whether judge() takes per-criterion ``examples`` (few-shot calibration).
    takes_examples: ClassVar[bool] = False
    # Whether judge() can ask each criterion ``samples`` times (grading.samples).
    takes_samples: ClassVar[bool] = False
    # Whether judge() lists every criterion in one prompt, whose order can be shuffled.
    takes_criterion_shuffle: ClassVar[bool] = False

    def __init__(
        self,
        generate_fn: GenerateFn = default_generate_fn,
        *,
        system_prompt: str | None = None,
        length_penalty: LengthPenalty | None = None,
        normalize: bool = True,
        max_retries: int = 2,
        default_fallback_verdicts: DefaultFallbackVerdicts | None = None,
        max_concurrency: int | None = None,
        cannot_assess: CannotAssessStrategy = "skip",
        partial_credit: float = 0.5,
        allow_cannot_assess: bool = False,
        on_error: OnError = "raise",
        transport_retries: int = 4,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 60.0,
        call_deadline: float | None = DEFAULT_CALL_DEADLINE,
        examples: RubricExamples | None = None,
        shuffle_options: bool = False,
        seed: int = 0,
        samples: int = 1,
        shuffle_criteria: bool = False,
    ):
        if not callable(generate_fn):
            raise ConfigurationError("generate_fn must be callable")
        check_call_options(
            cannot_assess=cannot_assess, on_error=on_error, max_retries=max_retries,
            transport_retries=transport_retries, max_concurrency=max_concurrency,
            retry_base_delay=retry_base_delay, retry_max_delay=retry_max_delay,
            call_deadline=call_deadline)
        try:
            self.scoring_settings = ScoringSettings(
                normalize=normalize,
                cannot_assess=cannot_assess,
                partial_credit=partial_credit,
                length_penalty=length_penalty,
            )
        except ValidationError as exc:
            problem = exc.errors()[0]
            field_name = ".".join(str(p) for p in problem["loc"]) or "settings"
            raise ConfigurationError(f"{field_name}: {problem['msg']}") from None
        self.fallback_verdicts = check_fallbacks(default_fallback_verdicts)
        if examples is not None and not self.takes_examples:
            raise ConfigurationError(
                f"{type(self).__name__} cannot be calibrated with reviewed examples: people's "
                "verdicts are per criterion and this grader gives one overall score; use "
                "PerCriterionGrader or PerCriterionOneShotGrader")
        try:
            samples = check_samples(samples)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if samples > 1 and not self.takes_samples:
            raise ConfigurationError(
                f"{type(self).__name__} cannot ask the judge several times per criterion; "
                "use PerCriterionGrader for samples > 1")
        if shuffle_criteria and not self.takes_criterion_shuffle:
            raise ConfigurationError(
                f"{type(self).__name__} does not list the criteria in one prompt, so there is "
                "no criterion order to shuffle; use PerCriterionOneShotGrader for "
                "shuffle_criteria=True")
        # The one-shot prompt lists the criteria in a per-response order (recorded per
        # verdict as prompt_position); reproducible from ``seed``.
        self.shuffle_criteria = bool(shuffle_criteria)
        # Times each criterion is asked; its verdict is the samples' majority.
        self.samples = samples
        # Few-shot calibration (grading.calibration): per criterion, reviewed responses
        # shown to the judge with people's verdicts; never the response being graded.
        self.examples = examples
        # Multi-choice options shown in a shuffled order (recorded per verdict as
        # shuffle_order) so that position bias can be measured; reproducible from ``seed``.
        self.shuffle_options = shuffle_options
        self.seed = seed

        self.generate_fn = generate_fn
        self.system_prompt = system_prompt if system_prompt is not None else (
            self.default_system_prompt
        )
        self.length_penalty = length_penalty
        self.normalize = normalize
        self.max_retries = max_retries
        self.default_fallback_verdicts = default_fallback_verdicts
        self.max_concurrency = max_concurrency
        self.cannot_assess = cannot_assess
        self.partial_credit = partial_credit
        self.allow_cannot_assess = allow_cannot_assess
        self.on_error: OnError = on_error
        self.retry_policy = RetryPolicy(
            max_retries=max_retries,
            transport_retries=transport_retries,
            base_delay=retry_base_delay,
            max_delay=retry_max_delay,
            deadline=call_deadline,
        )
        self._passes_response_format = takes_keyword(generate_fn, "response_format")
        # asyncio primitives belong to one event loop; grade_sync may run several loops.
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()

    # -- calling the model -----------------------------------------------------------------
    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(
                self.max_concurrency or DEFAULT_MAX_CONCURRENCY)
        return semaphore

    @contextlib.asynccontextmanager
    async def _bound(self) -> AsyncIterator[None]:
        """One call's bound. litellm calls take a slot of their endpoint's limiter, shared by
        every grader in the process, which discovers the provider's capacity (and under
        ``max_concurrency``, when set, this grader's own bound too); any other generate_fn
        is bounded by ``max_concurrency`` (default 8)."""
        if not isinstance(self.generate_fn, LiteLLMGenerate):
            async with self._semaphore():
                yield
            return
        slot = limiter_for(self.generate_fn.model, self.generate_fn.api_base).slot()
        if self.max_concurrency is None:
            async with slot:
                yield
            return
        async with self._semaphore(), slot:
            yield

    async def generate(self, system_prompt: str, user_prompt: str, **kwargs: Any) -> str:
        """The judge's answer text (``rubric``'s ``Autograder.generate``, for custom graders)."""
        return (await self._generate(system_prompt, user_prompt, **kwargs)).text

    def _first_answer(self, response_format: dict[str, Any] | None
                      ) -> contextlib.AbstractAsyncContextManager[None]:
        """The endpoint's first-answer turn (``LiteLLMGenerate.first_answer``), taken before
        the concurrency bound: calls waiting for it hold no slot."""
        generate_fn = self.generate_fn
        if not isinstance(generate_fn, LiteLLMGenerate) or not self._passes_response_format:
            return contextlib.nullcontext()
        limiter = limiter_for(generate_fn.model, generate_fn.api_base)
        return generate_fn.first_answer(response_format, waiting=limiter.waiting_elsewhere)

    async def _generate(
        self, system_prompt: str, user_prompt: str, *,
        response_format: dict[str, Any] | None = None, **kwargs: Any,
    ) -> GenerateResult:
        """One call to ``generate_fn`` under the concurrency bound, as a GenerateResult."""
        async with self._first_answer(response_format), self._bound():
            if self._passes_response_format and response_format is not None:
                kwargs["response_format"] = response_format
            result = self.generate_fn(system_prompt, user_prompt, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return as_generate_result(result)

    async def _ask(
        self, user_prompt: str, parse: Callable[[str], T], response_format: dict[str, Any],
        *, system_prompt: str | None = None,
    ) -> CallOutcome[T]:
        """One judged question with the retry loop (the concurrency bound is per attempt);
        ``system_prompt``: instead of the grader's own (a one-shot grader asking about one
        criterion)."""
        system = self.system_prompt if system_prompt is None else system_prompt
        if overrides(self, "generate"):
            # A subclass written for ``rubric`` replaced generate(): it returns text.
            async def ask() -> GenerateResult:
                return as_generate_result(await self.generate(system, user_prompt))
        else:
            async def ask() -> GenerateResult:
                return await self._generate(system, user_prompt, response_format=response_format)
        return await call_with_retries(ask, parse, self.retry_policy)

    # -- failures ------------------------------------------------------------------------
    def fallback_for(self, criterion: Criterion) -> Verdict | None:
        """The configured fallback verdict for this criterion's weight sign (None: none set)."""
        if self.fallback_verdicts is None:
            return None
        key = "negative" if criterion.weight < 0 else "positive"
        return self.fallback_verdicts.get(key, Verdict.UNMET)

    def _fail(self, what: str, outcome: CallOutcome[Any]) -> None:
        """Raise for a failure that no fallback covers, when ``on_error="raise"``.

        A ProviderError (bad key, unknown model) is raised as it is: its message already
        tells the user what to fix, and it is not about one criterion.
        """
        if self.on_error != "raise":
            return
        if isinstance(outcome.exception, ProviderError):
            raise outcome.exception
        raise GradingError(f"{what}: {outcome.error}") from outcome.exception

    # -- the three steps -------------------------------------------------------------------
    @abstractmethod
    async def judge(
        self, to_grade: ToGradeInput, rubric: Sequence[Criterion], query: str | None = None,
        *, reference_submission: str | None = None,
    ) -> Any:
        """Ask the model and parse its answers (showing the reference answer, when given)."""

    async def aggregate(
        self, judge_results: Any, *, normalize: bool | None = None
    ) -> EvaluationReport:
        """Turn per-criterion verdicts into a report with the one aggregation function."""
        normalize = self.normalize if normalize is None else normalize
        judgment = (
            judge_results
            if isinstance(judge_results, Judgment)
            else Judgment(criteria=list(judge_results), reports=list(judge_results))
        )
        reports = judgment.reports or []
        usage, cost = judgment.spend.usage, judgment.spend.cost
        missing = sum(r.choice is None for r in reports)
        if missing or not reports:
            error = judgment.error or (
                f"{missing} of {len(reports)} criteria have no verdict" if reports
                else "the judge returned no verdicts"
            )
            return EvaluationReport(
                score=None, report=reports or None, error=error, reason=judgment.reason,
                notes=judgment.notes, token_usage=usage, completion_cost=cost,
            )
        result = aggregate_verdicts(
            reports,
            [r.choice for r in reports if r.choice is not None],
            normalize=normalize,
            cannot_assess=self.cannot_assess,
            partial_credit=self.partial_credit,
        )
        error = judgment.error
        if error is None and result.score is None:
            error = "nothing left to score: every scored criterion was CANNOT_ASSESS"
        closed = tuple(gate_label(i, reports[i]) for i in result.closed_gates)
        notes = judgment.notes + tuple(
            f"required {label} is not satisfied: its gate closed, the score is 0"
            for label in closed)
        return EvaluationReport(
            closed_gates=closed,
            notes=notes,
            reason=judgment.reason,
            score=result.score,
            raw_score=result.raw_score,
            llm_raw_score=result.raw_score,
            report=reports,
            error=error,
            cannot_assess_count=result.cannot_assess_count,
            token_usage=usage,
            completion_cost=cost,
        )

    async def grade(
        self, to_grade: ToGradeInput, rubric: Sequence[Criterion], query: str | None = None,
        *, response_key: Hashable | None = None, reference_submission: str | None = None,
    ) -> EvaluationReport:
        """judge -> aggregate -> subtract the length penalty from ``score`` (only).

        ``response_key`` names the response for few-shot calibration: it is never shown as
        its own example (nor is an example with the very same text).
        """
        criteria = list(getattr(rubric, "rubric", rubric))
        sections = normalize_to_grade_input(to_grade)  # checks the input before any call
        reference = check_reference(reference_submission)
        extra: dict[str, Any] = {}
        if reference is not None:
            if overrides(self, "judge") and not takes_keyword(self.judge,
                                                                "reference_submission"):
                raise ConfigurationError(
                    f"{type(self).__name__}.judge() does not take reference_submission, so "
                    "the reference answer would not reach the judge; add a "
                    "reference_submission keyword to judge() or grade without a reference")
            extra["reference_submission"] = reference
        if self.examples is not None:
            if overrides(self, "judge"):
                raise ConfigurationError(
                    "a judge() of your own cannot take reviewed examples; leave examples unset")
            self.examples.check(criteria)
            shown = self.examples.for_response(response_key, sections["output"])
            judge_results = await self.judge(sections, criteria, query, examples=shown, **extra)
            return await self._finish(judge_results, sections)
        if overrides(self, "judge"):
            # A judge() written for ``rubric`` receives what rubric passes: the string as
            # given, or a dict rebuilt into tagged text.
            judge_input: ToGradeInput = rubric_judge_text(to_grade)
        else:
            # Ours receive the parts as they are, never re-parsed for tags.
            judge_input = sections
        judge_results = await self.judge(judge_input, criteria, query, **extra)
        return await self._finish(judge_results, sections)

    async def _finish(self, judge_results: Any, sections: dict[str, str]) -> EvaluationReport:
        report = await self.aggregate(judge_results, normalize=self.normalize)
        penalty = final_penalty(self.scoring_settings, sections)
        if penalty is None:
            return report
        score = apply_length_penalty(report.score, penalty, normalize=self.normalize)
        return report.model_copy(update={"score": score, "length_penalty": penalty})
