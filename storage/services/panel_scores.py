"""Keeping ``effective_panel_scores`` (each judge panel's effective score of the reviewed
responses) equal to the one aggregation over the panel's stored grade with people's
decisions in place: what ``panel_results.panel_results`` gives a viewer who sees every
verdict, for a response whose stored decision is the one read.

Called in the transactions that change either side: people's scores
(``people_scores.rescore``, after a verdict; the rebuilds) and a panel's stored decisions
(``panel_upkeep``, when a member's grade lands and when a panel is filled). A response
whose stored decision is not the one read (a member still grading, another tie rule) is
the reader's business (``panels.unsettled``), as for ``panel_grades``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from grading.types import Verdict
from storage import models as m
from storage.convert import criterion_info
from storage.dto import CriterionGradeInfo, GradeInfo, HumanDecision
from storage.effective import compute_effective_grade
from storage.id_chunks import id_chunks
from storage.repositories import effective as effective_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories.datasets import response_texts
from storage.services import panel_reads, panel_ties
from storage.services.panel_decide import PanelGrade

TABLE = m.EffectivePanelScoreRow.__table__
# session.info key: set by the migrations before 0032, which fill people's scores and the
# panels' decisions with today's code before this table exists.
ABSENT = "effective_panel_scores_absent"


def grade_info(grade: PanelGrade, created_at: datetime | None) -> GradeInfo:
    """The panel's grade in the shape of a judge's grade: its verdicts, and as the reason of
    each the sentence saying how it was reached (ties say which way they resolved)."""
    return GradeInfo(
        id=0, run_id=0, response_id=grade.response_id, score=grade.score,
        raw_score=grade.raw_score, llm_raw_score=None, error=grade.error,
        cannot_assess_count=sum(1 for row in grade.criteria
                                if row.decision.verdict is Verdict.CANNOT_ASSESS),
        length_penalty=None, prompt_tokens=None, completion_tokens=None, total_tokens=None,
        cost=grade.cost, latency_s=None, created_at=created_at,
        criteria=tuple(
            CriterionGradeInfo(criterion_id=row.criterion_id, position=index,
                               verdict=row.decision.verdict, option=row.decision.option,
                               reason=row.decision.note,
                               error=None if row.decision.verdict is not None else
                               row.decision.note if grade.pending_members else
                               "every member failed: no verdict")
            for index, row in enumerate(grade.criteria)),
    )


def rescore(session: Session, version_id: int, response_ids: Iterable[int], *,
            humans: Mapping[int, Mapping[int, HumanDecision]] | None = None,
            panel_ids: Sequence[int] | None = None) -> None:
    """The rows of these responses in the version's panels (or these), recomputed: one per
    response with people's decisions and a stored grade of the panel. ``humans``: people's
    decisions of exactly the reviewed ones among them (``effective_repo.score_decisions``),
    when the caller has read them."""
    if session.info.get(ABSENT):
        return
    ids = sorted(set(response_ids))
    query = select(m.PanelRow).where(m.PanelRow.rubric_version_id == version_id)
    if panel_ids is not None:
        query = query.where(m.PanelRow.id.in_(sorted(set(panel_ids))))
    panels = list(session.scalars(query.order_by(m.PanelRow.id)))
    if not ids or not panels:
        return
    criteria = [criterion_info(c) for c in rubric_repo.criteria_of(session, version_id)]
    t = TABLE.c
    for chunk in id_chunks(ids):
        session.execute(delete(TABLE).where(t.panel_id.in_([p.id for p in panels]),
                                            t.response_id.in_(chunk)))
        if humans is None:
            reviewed = effective_repo.score_decisions(session, version_id, None, chunk)
        else:
            reviewed = {rid: humans[rid] for rid in chunk if rid in humans}
        if not reviewed:
            continue
        texts: dict | None = None
        rows = []
        for panel in panels:
            scoring = panel_ties.read(panel.scoring)[0]
            grades = panel_reads.stored_grades(session, panel.id, criteria, sorted(reviewed))
            if scoring.length_penalty is not None and texts is None:
                texts = response_texts(session, sorted(reviewed))
            for grade in grades:
                found = compute_effective_grade(
                    criteria=criteria, grade=grade_info(grade, panel.created_at),
                    settings=scoring, to_grade=(texts or {}).get(grade.response_id, ""),
                    humans=reviewed[grade.response_id])
                rows.append({"panel_id": panel.id, "response_id": grade.response_id,
                             "score": found.score, "error": found.error})
        if rows:
            session.execute(insert(TABLE), rows)


def rescore_all(session: Session) -> None:
    """Every row recomputed (the migration's fill, ``panel_upkeep.rebuild``)."""
    session.execute(delete(TABLE))
    for version_id in session.scalars(select(m.PanelRow.rubric_version_id).distinct()
                                      .order_by(m.PanelRow.rubric_version_id)).all():
        rescore(session, version_id, session.scalars(
            select(m.EffectiveScoreRow.response_id)
            .where(m.EffectiveScoreRow.rubric_version_id == version_id)).all())


def kept_scores(session: Session, panel_id: int, response_ids: Sequence[int] | None = None
                ) -> dict[int, tuple[float | None, str | None]]:
    """The panel's kept (score, error) of the reviewed responses (or of those among
    ``response_ids``)."""
    t = TABLE.c
    query = select(t.response_id, t.score, t.error).where(t.panel_id == panel_id)
    if response_ids is None:
        return {rid: (score, error) for rid, score, error in session.execute(query)}
    ids = sorted(set(response_ids))
    found: dict[int, tuple[float | None, str | None]] = {}
    for chunk in id_chunks(ids):
        found.update({rid: (score, error) for rid, score, error in session.execute(
            query.where(t.response_id.in_(chunk)))})
    return found


def maintained_rows(session: Session) -> list[tuple]:
    """Every row as a plain tuple, in key order (to compare with a rebuild)."""
    t = TABLE.c
    return [tuple(r) for r in session.execute(
        select(t.panel_id, t.response_id, t.score, t.error)
        .order_by(t.panel_id, t.response_id))]
