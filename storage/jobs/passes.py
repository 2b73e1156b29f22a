"""Nothing lost to a bad minute: grades that failed only transiently get later passes.

While a grade is made, ``TrackedGenerate`` notes how each of its provider calls ended last
(a context variable follows the grade into the grader's concurrent calls). A grade with no
score whose calls ended on a transient failure (429 after every retry, 5xx, timeout, lost
connection), and none on a permanent one (bad key, unknown model, other 4xx), is stored
with ``transient=True``. After the rest of the run, ``transient_response_ids`` names those
responses and the runner grades them in another pass, up to ``DEFAULT_RETRY_PASSES`` more
passes, each after a longer pause. The failed grade stays until the new one replaces it (in
the transaction that stores the new one, ``record_grades``): the run's counts never go
backwards between passes, and a run cut short keeps its failures on record.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import select

from grading.errors import ProviderError, TransientProviderError
from grading.types import EvaluationReport, GenerateResult
from storage import models as m
from storage.engine import SessionFactory

DEFAULT_RETRY_PASSES = 3
DEFAULT_PASS_DELAY = 20.0  # seconds before the second pass; doubles for each later pass
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT_NAMES = frozenset({"APIConnectionError", "APITimeoutError", "Timeout",
                              "InternalServerError", "ServiceUnavailableError"})
Outcome = Literal["ok", "transient", "permanent"]


@dataclass
class GradeCalls:
    """How each distinct call of one grade ended last (by its prompts)."""

    last: dict[int, Outcome] = field(default_factory=dict)

    def failed_transiently(self, report: EvaluationReport) -> bool:
        if report.score is not None or report.error is None:
            return False
        outcomes = set(self.last.values())
        return "transient" in outcomes and "permanent" not in outcomes


_current: contextvars.ContextVar[GradeCalls | None] = contextvars.ContextVar(
    "rubric_workbench_grade_calls", default=None)


def track_grade() -> GradeCalls:
    """Start noting the calls of the grade made in this context (and its child tasks)."""
    calls = GradeCalls()
    _current.set(calls)
    return calls


def classify(exc: BaseException) -> Outcome:
    if isinstance(exc, TransientProviderError):
        return "transient"
    if isinstance(exc, ProviderError):
        return "permanent"
    status = getattr(exc, "status_code", None)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError | ConnectionError) or names & _TRANSIENT_NAMES:
        return "transient"
    if isinstance(status, int):
        return "transient" if status >= 500 or status in _TRANSIENT_STATUS else "permanent"
    return "permanent"


class TrackedGenerate:
    """A ``generate_fn`` that notes each call's outcome in the current grade's record."""

    def __init__(self, inner: Any):
        self.inner = inner

    async def __call__(self, system_prompt: str, user_prompt: str, *,
                       response_format: dict[str, Any] | None = None) -> GenerateResult:
        calls = _current.get()
        key = hash((system_prompt, user_prompt))
        try:
            result = await self.inner(system_prompt, user_prompt,
                                      response_format=response_format)
        except Exception as exc:
            if calls is not None:
                calls.last[key] = classify(exc)
            raise
        if calls is not None:
            calls.last[key] = "ok"
        return result

    async def close(self) -> None:
        await self.inner.close()


def transient_response_ids(sessions: SessionFactory, run_id: int) -> list[int]:
    """The responses of the run whose grade failed only transiently (the next pass's work)."""
    grade = m.GradeRow
    with sessions() as session:
        return list(session.scalars(select(grade.response_id).where(
            grade.run_id == run_id, grade.transient.is_(True)).order_by(grade.response_id)))
