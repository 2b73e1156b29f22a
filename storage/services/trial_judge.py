"""How a wording trial asks the judge: the base run's model and settings through the job
runner's provider path, one response on one criterion at a time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from grading.calibration import RubricExamples
from grading.types import Criterion, EvaluationReport
from storage.dto import ResponseInfo, RunInfo
from storage.engine import SessionFactory

GradeFn = Callable[[ResponseInfo, Criterion], Awaitable[EvaluationReport]]


def grade_fn_of(
    sessions: SessionFactory, run: RunInfo, examples: RubricExamples | None = None,
) -> tuple[GradeFn, Callable[[], Awaitable[None]]]:
    """One response on one criterion, judged with ``run``'s model and settings through the job
    runner's provider path (cache, the endpoint's limiter, retries, a calibrated run's
    examples), and the call that closes that path."""
    from grading.llm import LiteLLMGenerate
    from storage.jobs import cache as cache_store
    from storage.jobs.calls import Counters, JobGenerate
    from storage.jobs.limiter import limiter_for
    from storage.jobs.run_options import JobOptions, build_grader

    options = JobOptions.from_settings(run.settings)
    llm = LiteLLMGenerate(run.model, api_base=run.settings.api_base, timeout=options.timeout,
                          **options.litellm_extra)
    fatal: list[BaseException] = []
    generate = JobGenerate(
        llm, limiter=limiter_for(run.model, run.settings.api_base), sessions=sessions,
        use_cache=True, counters=Counters(), cache_buffer=cache_store.WriteBuffer(sessions),
        on_fatal=fatal.append)
    grader = build_grader("per_criterion", generate, run.settings, examples=examples)

    async def grade(response: ResponseInfo, criterion: Criterion) -> EvaluationReport:
        if fatal:
            return EvaluationReport(score=None, error=str(fatal[0]))
        # the same reference answer the base run showed its judge, so wordings compare fairly
        return await grader.grade(response.to_grade, [criterion], query=response.query,
                                  response_key=response.id,
                                  reference_submission=response.reference)

    return grade, generate.close
