"""verifiers 0.3 (``vf.Rubric(funcs=..., weights=...)``, ``score_rollout``/``score_group``):
reward functions that score completions with a workbench rubric.

verifiers 0.3 turns an exception raised by a reward function into a reward of 0.0 with only a
log line, so these functions never raise for a failed judgment: they return the value you
chose with ``on_failure=`` (required here) and flag it — ``state["workbench_rubric"]["failed"]``
and the metric function from ``failure_metric`` (add it with weight 0), so failed samples can
be dropped instead of trained on. Nothing from verifiers is imported.
"""

from __future__ import annotations

from typing import Any

from grading.errors import ConfigurationError
from grading.rewards.core import RewardResult, RubricReward


def message_text(messages: Any, role: str) -> str:
    """The text of the last message with ``role`` (or the string itself)."""
    if isinstance(messages, str):
        return messages
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == role:
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # content parts
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _reference(answer: Any) -> str | None:
    """verifiers' ``answer`` column as the reference answer (empty: none)."""
    if answer is None:
        return None
    return "\n".join(str(a) for a in answer) if isinstance(answer, list | tuple) else str(answer)


def _record(state: Any, result: RewardResult) -> None:
    if isinstance(state, dict):
        state["workbench_rubric"] = {
            "reward": result.reward, "failed": result.failed, "cached": result.cached,
            "verdicts": result.verdicts, "reasons": result.reasons,
            "error": result.report.error,
        }


def _check(reward: RubricReward) -> None:
    if reward.on_failure == "raise":
        raise ConfigurationError(
            "verifiers 0.3 scores a reward function that raises as 0.0, so choose the reward "
            "of a failed judgment explicitly: RubricReward(..., on_failure=0.0) (failures are "
            "flagged in state and by failure_metric)")


def reward_func(reward: RubricReward, name: str = "workbench_rubric"):
    """``async (prompt, completion, answer, state) -> float`` for ``vf.Rubric(funcs=[...])``;
    the dataset's ``answer`` column is shown to the judge as the reference answer."""
    _check(reward)

    async def func(prompt: Any, completion: Any, answer: Any = None, state: Any = None
                   ) -> float:
        result = await reward.score(message_text(completion, "assistant"),
                                    query=message_text(prompt, "user") or None,
                                    reference=_reference(answer))
        _record(state, result)
        return result.reward

    func.__name__ = name
    return func


def group_reward_func(reward: RubricReward, name: str = "workbench_rubric"):
    """``async (prompts, completions, states) -> list[float]``: a group reward function
    (verifiers detects it by its plural parameters); identical completions in the group are
    graded once."""
    _check(reward)

    async def func(prompts: list[Any], completions: list[Any], answers: list[Any] | None = None,
                   states: list[Any] | None = None) -> list[float]:
        results = await reward.score_batch(
            [message_text(c, "assistant") for c in completions],
            queries=[message_text(p, "user") or None for p in prompts],
            references=[_reference(a) for a in answers] if answers else None,
        )
        for state, result in zip(states or [None] * len(results), results, strict=True):
            _record(state, result)
        return [r.reward for r in results]

    func.__name__ = name
    return func


def failure_metric(name: str = "workbench_rubric_failed"):
    """A metric (give it weight 0): 1.0 for a sample whose judgment failed, else 0.0."""

    async def func(states: list[Any]) -> list[float]:
        return [float(bool((s.get("workbench_rubric") or {}).get("failed")))
                if isinstance(s, dict) else 0.0 for s in states]

    func.__name__ = name
    return func


__all__ = ["failure_metric", "group_reward_func", "message_text", "reward_func"]
