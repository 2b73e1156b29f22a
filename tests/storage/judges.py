"""Run the real graders with a scripted judge: storage is checked against what they produce."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from grading.autograders import PerCriterionGrader, PerCriterionOneShotGrader, RubricAsJudgeGrader
from grading.types import Criterion, EvaluationReport, GenerateResult, TokenUsage, Verdict
from storage.run_settings import RunSettings

GRADERS = {
    "per_criterion": PerCriterionGrader,
    "one_shot": PerCriterionOneShotGrader,
    "rubric_as_judge": RubricAsJudgeGrader,
}


class ScriptedJudge:
    """Answers from a table: verdicts per response key (or a holistic score per key).

    The response text starts with ``[key]`` so the judge knows which response it reads.
    """

    def __init__(self, criteria: Sequence[Criterion], verdicts: dict[str, Sequence[Verdict]],
                 holistic: dict[str, float] | None = None):
        self.criteria = list(criteria)
        self.verdicts = verdicts
        self.holistic = holistic or {}
        self.calls = 0

    async def __call__(self, system_prompt: str, user_prompt: str, **_kwargs) -> GenerateResult:
        self.calls += 1
        key = next(k for k in [*self.verdicts, *self.holistic] if f"[{k}]" in user_prompt)
        if key in self.holistic:
            text = json.dumps({"score": self.holistic[key], "reason": "overall"})
        else:
            present = [i for i, c in enumerate(self.criteria) if c.requirement in user_prompt]
            if len(present) == 1:
                text = json.dumps({"verdict": self.verdicts[key][present[0]].value,
                                   "reason": f"judged {present[0]}"})
            else:
                text = json.dumps({"criteria": [
                    {"number": i + 1, "verdict": v.value, "reason": f"judged {i}"}
                    for i, v in enumerate(self.verdicts[key])]})
        usage = TokenUsage(prompt_tokens=50, completion_tokens=10, total_tokens=60)
        return GenerateResult(text=text, usage=usage, cost=0.001)


def grade(grader: str, settings: RunSettings, criteria: Sequence[Criterion], text: str,
          judge: ScriptedJudge) -> EvaluationReport:
    autograder = GRADERS[grader](judge, **settings.grader_kwargs())
    return asyncio.run(autograder.grade(to_grade=text, rubric=list(criteria)))
