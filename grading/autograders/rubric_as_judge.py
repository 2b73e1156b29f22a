"""RubricAsJudgeGrader: one holistic 0-100 score for the whole rubric."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from grading.aggregation import holistic_to_scores
from grading.autograders.base import Autograder, Judgment
from grading.autograders.judge_io import quotable_texts
from grading.autograders.reports import fallback_report
from grading.option_prompts import holistic_mixed_user_prompt
from grading.parsing import parse_holistic_answer
from grading.prompts import (
    RUBRIC_AS_JUDGE_SYSTEM_PROMPT,
    holistic_response_format,
    holistic_user_prompt,
)
from grading.types import Criterion, EvaluationReport, ToGradeInput


class RubricAsJudgeGrader(Autograder):
    """The judge scores the response as a whole; no per-criterion report."""

    default_system_prompt = RUBRIC_AS_JUDGE_SYSTEM_PROMPT

    async def judge(
        self, to_grade: ToGradeInput, rubric: Sequence[Criterion], query: str | None = None,
        *, reference_submission: str | None = None,
    ) -> Judgment:
        criteria = list(rubric)
        outcome = await self._ask(
            (holistic_mixed_user_prompt(criteria, to_grade, query, reference=reference_submission)
             if any(c.options or c.required for c in criteria) else
             holistic_user_prompt(criteria, to_grade, query, reference=reference_submission)),
            functools.partial(parse_holistic_answer, allow_out_of_range=True,
                              quoted=quotable_texts(to_grade, query)),
            holistic_response_format(),
        )
        if outcome.ok:
            score, reason = outcome.value
            return Judgment(criteria=criteria, llm_score=score, reason=reason,
                            spend=outcome.spend)
        if not outcome.fatal and self.fallback_verdicts is not None:
            reports = []
            for criterion in criteria:
                verdict = self.fallback_for(criterion)
                assert verdict is not None
                reports.append(fallback_report(criterion, verdict, outcome.error or ""))
            error = (
                "the judge gave no usable holistic score; the score aggregates the fallback "
                f"verdicts instead: {outcome.error}"
            )
            return Judgment(criteria=criteria, reports=reports, error=error, spend=outcome.spend)
        self._fail("holistic judgment", outcome)
        return Judgment(
            criteria=criteria,
            error=f"the judge gave no usable holistic score: {outcome.error}",
            spend=outcome.spend,
        )

    async def aggregate(
        self, judge_results: Any, *, normalize: bool | None = None
    ) -> EvaluationReport:
        judgment: Judgment = judge_results
        normalize = self.normalize if normalize is None else normalize
        if judgment.llm_score is None:
            # Fallback verdicts (or nothing) go through the per-criterion aggregation.
            report = await super().aggregate(judgment, normalize=normalize)
            return report.model_copy(update={"report": None, "llm_raw_score": None})
        llm_score = judgment.llm_score
        notes: tuple[str, ...] = ()
        if not 0.0 <= llm_score <= 100.0:
            # rubric clamps the score the same way; raw_score is taken from the clamped value.
            clamped = min(100.0, max(0.0, llm_score))
            notes = (f"the judge's score {llm_score:g} is outside 0-100; {clamped:g} was used",)
            llm_score = clamped
        result = holistic_to_scores(judgment.criteria, llm_score, normalize=normalize)
        return EvaluationReport(
            notes=notes,
            score=result.score,
            raw_score=result.raw_score,
            llm_raw_score=judgment.llm_score,
            report=None,
            reason=judgment.reason,
            token_usage=judgment.spend.usage,
            completion_cost=judgment.spend.cost,
        )
