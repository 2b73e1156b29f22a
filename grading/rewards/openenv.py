"""OpenEnv (``openenv.core.rubrics``, openenv-core 0.3 and openenv 0.10): a workbench rubric as
an OpenEnv ``Rubric``.

``WorkbenchRubric`` scores an action's text with grading's graders; each criterion is a child
rubric (``named_rubrics()`` lists them, hooks fire on them, ``get_rubric("dose")`` reaches
one), so it composes with ``WeightedSum``, ``Gate`` and ``Sequential``. Its ``forward`` is
async: environments call it through ``await self._apply_rubric_async(action, observation)``
in ``step_async``. A child's score is its verdict: MET 1.0, UNMET 0.0 (for a negative
criterion MET means the error is present), a multi-choice criterion's chosen option its value,
and CANNOT_ASSESS (or an NA option) the value the chosen strategy counts it as;
``child.verdict`` (MET/UNMET/CANNOT_ASSESS or the option's label) and ``child.reason`` keep
the judge's words. ``reference_of(action, observation)`` gives the episode's reference answer
(ground truth), shown to the judge to compare with; without it the judge sees none. A judge
failure raises ``JudgeFailedError`` (the step fails) unless ``on_failure=<number>`` was chosen,
in which case that reward is returned and ``last_failed`` is set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openenv.core.rubrics import Rubric as OpenEnvRubric

from grading.aggregation import worst_value
from grading.rewards.core import RewardResult, RubricReward

TEXT_FIELDS = ("text", "content", "message", "response", "completion", "answer")


def action_text(action: Any, observation: Any = None) -> str:
    """The text to grade: the action itself if it is a string, else its first text field."""
    if isinstance(action, str):
        return action
    for name in TEXT_FIELDS:
        value = getattr(action, name, None)
        if isinstance(value, str):
            return value
    raise ValueError(
        f"cannot find the text to grade in {type(action).__name__}: pass text_of=, or give "
        f"the action one of the fields {', '.join(TEXT_FIELDS)}"
    )


class CriterionVerdict(OpenEnvRubric):
    """One criterion of a WorkbenchRubric: its score is the verdict of the last grading."""

    def __init__(self, key: str, requirement: str, weight: float,
                 options: tuple[str, ...] | None = None):
        super().__init__()
        self.key, self.requirement, self.weight = key, requirement, weight
        self.options = options  # a multi-choice criterion's labels; None for MET/UNMET
        self.verdict: str | None = None
        self.reason: str = ""
        self._value = 0.0

    def forward(self, action: Any, observation: Any) -> float:
        return self._value


class WorkbenchRubric(OpenEnvRubric):
    """A workbench rubric (exported YAML/JSON) as an OpenEnv reward."""

    def __init__(
        self,
        rubric: Any,
        generate_fn: Any,
        *,
        text_of: Callable[[Any, Any], str] = action_text,
        query_of: Callable[[Any, Any], str | None] | None = None,
        reference_of: Callable[[Any, Any], str | None] | None = None,
        **options: Any,
    ):
        super().__init__()
        # Not a Rubric attribute, so not a child: only the criteria are children.
        object.__setattr__(self, "scorer", RubricReward(rubric, generate_fn, **options))
        object.__setattr__(self, "text_of", text_of)
        object.__setattr__(self, "query_of", query_of)
        object.__setattr__(self, "reference_of", reference_of)
        object.__setattr__(self, "last_result", None)
        object.__setattr__(self, "last_failed", False)
        for key, criterion in zip(self.scorer.criterion_keys, self.scorer.rubric.rubric,
                                  strict=True):
            labels = (None if criterion.options is None
                      else tuple(o.label for o in criterion.options))
            setattr(self, key, CriterionVerdict(key, criterion.requirement, criterion.weight,
                                                labels))
        object.__setattr__(self, "_criteria", dict(zip(
            self.scorer.criterion_keys, self.scorer.rubric.rubric, strict=True)))

    def _strategy_value(self, criterion: Any) -> float:
        """What the CANNOT_ASSESS strategy counts an abstention as, as the aggregation does:
        partial credit on a positive criterion, the worst case (worst scored option) for
        ``fail``, else 0."""
        strategy = self.scorer.grader.cannot_assess
        if strategy == "partial":
            return self.scorer.grader.partial_credit if criterion.weight > 0 else 0.0
        if strategy == "fail":
            return worst_value(criterion)
        return 0.0

    async def forward(self, action: Any, observation: Any) -> float:
        query = self.query_of(action, observation) if self.query_of else None
        reference = self.reference_of(action, observation) if self.reference_of else None
        result: RewardResult = await self.scorer.score(self.text_of(action, observation),
                                                       query=query, reference=reference)
        object.__setattr__(self, "last_result", result)
        object.__setattr__(self, "last_failed", result.failed)
        for key, child in self.named_children():
            if result.failed:
                # No judgment: the child has no score (None), not a made-up 0.0.
                child.verdict, child.reason = None, result.report.error or "judge failed"
                object.__setattr__(child, "last_score", None)
                continue
            verdict = result.verdicts.get(key)
            child.verdict = verdict
            child.reason = result.reasons.get(key, "")
            value = result.values.get(key)
            child._value = (value if value is not None
                            else self._strategy_value(self._criteria[key]))
            child(action, observation)  # sets last_score and runs the child's hooks
        return result.reward

    def state_dict(self) -> dict[str, Any]:
        return {"criteria": [
            {"key": c.key, "weight": c.weight, "requirement": c.requirement}
            | ({"options": list(c.options)} if c.options is not None else {})
            for _, c in self.named_children()]}


__all__ = ["CriterionVerdict", "WorkbenchRubric", "action_text"]
