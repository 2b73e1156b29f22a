"""verifiers 0.4 (``verifiers.v1``): a Judge plug-in that scores a trace with a workbench rubric.

Plug it into a task config (``judges=[{"id": "workbench_rubric_judge", "path": ...}]``, the
``workbench_rubric_judge`` module ships with the slim install) or call it from a ``@vf.reward``.
Judge calls go through the framework's own client (``Judge.complete``): they are recorded in
``trace.info["judge_calls"]`` and their usage in ``trace.extra_usage``. Per-criterion verdicts
become metrics ``<reward name>/<criterion>`` (MET 1.0, UNMET 0.0, a multi-choice criterion's
chosen option its value; CANNOT_ASSESS and NA options are counted in
``<reward name>/cannot_assess``), and verdicts and reasons go to
``trace.info["workbench_rubric"]``. The task's ``answer`` field (``answer_field``) is shown
to the judge as the reference answer. A judge failure raises (``on_failure="raise"``): verifiers
then errors the rollout instead of scoring it.
"""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from verifiers.v1.configs.judge import JudgeConfig
from verifiers.v1.judge import Judge, JudgeView, judge_question, judge_response
from verifiers.v1.types import SystemMessage, UserMessage

from grading.rewards.core import GraderName, RewardCannotAssess, RubricReward
from grading.types import GenerateResult, TokenUsage

_CURRENT: contextvars.ContextVar[tuple[Judge, Any]] = contextvars.ContextVar("workbench_judge")
_SCORERS: dict[str, RubricReward] = {}


class WorkbenchRubricJudgeConfig(JudgeConfig):
    id: str = "workbench_rubric_judge"
    path: Path
    """A rubric file exported from the workbench (YAML or JSON; negative weights allowed)."""
    grader: GraderName = "per_criterion"
    cannot_assess: RewardCannotAssess = "zero"
    """How CANNOT_ASSESS scores; each keeps the same denominator for every sample."""
    allow_cannot_assess: bool = True
    partial_credit: float = Field(default=0.5, ge=0, le=1)
    question_field: str = ""
    """Task field shown to the judge as the query; empty = the task prompt."""
    answer_field: str = "answer"
    """Task field holding the reference answer (ground truth) shown to the judge, as the
    built-in reference judge reads it; a task without that field (or with it blank) is judged
    without one. A list-valued field is shown one acceptable answer per line."""
    view: JudgeView = "last_reply"
    max_concurrency: int = Field(default=16, ge=1)
    on_failure: Literal["raise"] | float = "raise"
    """'raise': a failed judgment errors the rollout. A number: that reward, flagged with the
    metric ``<reward name>/judge_failed`` = 1."""


async def _generate(system_prompt: str, user_prompt: str, **_: Any) -> GenerateResult:
    judge, trace = _CURRENT.get()
    response = await judge.complete(
        [SystemMessage(content=system_prompt), UserMessage(content=user_prompt)], trace=trace
    )
    usage = None
    if response.usage is not None:
        prompt = response.usage.prompt_tokens + (response.usage.cached_input_tokens or 0)
        usage = TokenUsage(prompt_tokens=prompt,
                           completion_tokens=response.usage.completion_tokens,
                           total_tokens=prompt + response.usage.completion_tokens,
                           cache_read_input_tokens=response.usage.cached_input_tokens or 0)
    return GenerateResult(text=response.text, usage=usage,
                          cost=response.usage.cost if response.usage else None)


def _scorer(config: WorkbenchRubricJudgeConfig) -> RubricReward:
    """One scorer per configuration, shared by every judge built from it, so that identical
    completions across rollouts are graded once (verifiers builds a judge per score call)."""
    key = config.model_dump_json()
    scorer = _SCORERS.get(key)
    if scorer is None:
        scorer = _SCORERS[key] = RubricReward(
            config.path, _generate, grader=config.grader, cannot_assess=config.cannot_assess,
            allow_cannot_assess=config.allow_cannot_assess,
            partial_credit=config.partial_credit, on_failure=config.on_failure,
            max_concurrency=config.max_concurrency,
        )
    return scorer


def task_reference(task: Any, answer_field: str) -> str | None:
    """The task's reference answer from ``answer_field``, or None (no field / empty name)."""
    if not answer_field:
        return None
    answer = getattr(task, answer_field, None)
    if answer is None:
        return None
    if isinstance(answer, list | tuple):
        return "\n".join(str(item) for item in answer)
    return str(answer)


class WorkbenchRubricJudge(Judge[str, WorkbenchRubricJudgeConfig]):
    """Scores the rollout's response against a workbench rubric with grading's graders."""

    async def score(self, task: Any, trace: Any) -> float:
        scorer = _scorer(self.config)
        token = _CURRENT.set((self, trace))
        try:
            result = await scorer.score(
                judge_response(trace, self.config.view),
                query=judge_question(task, self.config.question_field),
                reference=task_reference(task, self.config.answer_field),
            )
        finally:
            _CURRENT.reset(token)
        name = self.reward_name
        cannot_assess = 0
        for key in result.verdicts:
            value = result.values.get(key)
            if value is None:
                cannot_assess += 1
            else:
                trace.record_metric(f"{name}/{key}", value)
        trace.record_metric(f"{name}/cannot_assess", cannot_assess)
        if result.failed:
            trace.record_metric(f"{name}/judge_failed", 1.0)
        trace.info.setdefault("workbench_rubric", {})[name] = {
            "score": result.reward, "failed": result.failed, "cached": result.cached,
            "verdicts": result.verdicts, "reasons": result.reasons,
            "error": result.report.error,
        }
        return result.reward


__all__ = ["WorkbenchRubricJudge", "WorkbenchRubricJudgeConfig"]
