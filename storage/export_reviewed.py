"""The effective grades of the reviewed responses of an export batch (storage/export_rows.py),
for a viewer who sees every verdict: the judge's (or the panel's stored) verdicts read as
rows, people's decisions from ``effective_verdicts`` without each reviewer's verdict
(``effective_reads.score_decisions``: the export shows the verdict that stands, who gave
it, its note and the status), through ``compute_effective_grade`` as every reader scores
them. The kept effective scores hold no effective raw score, which the export carries,
so these few are aggregated again."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from grading.types import Verdict
from storage.dto import CriterionGradeInfo, EffectiveGrade, GradeInfo, RubricVersionInfo, RunInfo
from storage.effective import compute_effective_grade
from storage.repositories.datasets import response_texts
from storage.services import effective_reads, panel_reads, panels
from storage.services.panel_results import PanelResult, panel_grade_info


def run_grades(session: Session, run: RunInfo, version: RubricVersionInfo,
               grades: Sequence[tuple], judged: dict[int, dict[int, tuple]]
               ) -> dict[int, EffectiveGrade]:
    """Response -> effective grade of these grades (``export_rows._grade_page`` rows;
    ``judged``: grade -> criterion -> (verdict, option, reason, error))."""
    settings = run.settings.scoring()
    ids = [grade[1] for grade in grades]
    humans = effective_reads.score_decisions(session, version.id, ids)
    texts = response_texts(session, ids) if settings.length_penalty is not None else {}
    found = {}
    for grade_id, rid, score, raw, error, penalty, *_texts in grades:
        criteria = tuple(
            CriterionGradeInfo(criterion_id=cid, position=0,
                               verdict=None if verdict is None else Verdict(verdict),
                               reason=reason, error=judge_error, option=option)
            for cid, (verdict, option, reason, judge_error) in judged.get(grade_id, {}).items())
        grade = GradeInfo(
            id=grade_id, run_id=run.id, response_id=rid, score=score, raw_score=raw,
            llm_raw_score=None, error=error, cannot_assess_count=0, length_penalty=penalty,
            prompt_tokens=None, completion_tokens=None, total_tokens=None, cost=None,
            latency_s=None, created_at=None, criteria=criteria)
        found[rid] = compute_effective_grade(
            criteria=version.criteria, grade=grade, settings=settings,
            to_grade=texts.get(rid, ""), humans=humans.get(rid, {}))
    return found


def panel_results(session: Session, panel: panels.PanelInfo, version: RubricVersionInfo,
                  response_ids: Sequence[int]) -> dict[int, PanelResult]:
    """Response -> the panel's result of these responses, settled ones only (their stored
    decision is the one read: ``panel_results.panel_results`` reads the same)."""
    if not response_ids:
        return {}
    grades = panel_reads.stored_grades(session, panel.id, version.criteria, response_ids)
    ids = [grade.response_id for grade in grades]
    humans = effective_reads.score_decisions(session, version.id, ids)
    texts = response_texts(session, ids) if panel.scoring.length_penalty is not None else {}
    return {grade.response_id: PanelResult(panel, grade, compute_effective_grade(
        criteria=version.criteria, grade=panel_grade_info(panel, grade),
        settings=panel.scoring, to_grade=texts.get(grade.response_id, ""),
        humans=humans.get(grade.response_id, {}))) for grade in grades}
