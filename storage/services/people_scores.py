"""Keeping ``effective_scores`` (people's score per response and rubric version) and
``effective_run_scores`` (each run's effective score of those responses) equal to the one
aggregation function over ``effective_verdicts``.

``effective_upkeep`` calls :func:`rescore` right after it rewrote a response's effective
verdicts, in the same transaction, so the two tables never disagree; the rebuild rescored
every version. The score is what ``reviews.human_scores`` gives with the default scoring
settings (``compute_human_score``: None until people decided every criterion of the
version; a disputed criterion is not decided). A run's effective score is what
``reviews.effective_grades_for_run`` gives (``compute_effective_grade``, the run's own
settings); ``grade_records`` calls :func:`rescore_runs` when a grade lands.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from grading.types import ScoringSettings
from storage import models as m
from storage.convert import criterion_info
from storage.effective import (
    compute_effective_grade,
    compute_human_score,
)
from storage.id_chunks import id_chunks
from storage.repositories import effective as effective_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories.datasets import response_texts
from storage.run_settings import RunSettings
from storage.services import panel_scores

_TABLE = m.EffectiveScoreRow.__table__
_RUNS = m.EffectiveRunScoreRow.__table__
_SETTINGS = ScoringSettings()


def rescore(session: Session, version_id: int, response_ids: Iterable[int]) -> None:
    """The rows of these responses under the version, recomputed from the table of
    effective verdicts as it stands in this transaction."""
    ids = sorted(set(response_ids))
    if not ids:
        return
    criteria = [criterion_info(c) for c in rubric_repo.criteria_of(session, version_id)]
    runs = _runs(session, version_id)
    t = _TABLE.c
    for chunk in id_chunks(ids):
        session.execute(delete(_TABLE).where(t.rubric_version_id == version_id,
                                             t.response_id.in_(chunk)))
        found = effective_repo.score_decisions(session, version_id, None, chunk)
        if found:
            datasets = dict(session.execute(
                select(m.ResponseRow.id, m.ResponseRow.dataset_id)
                .where(m.ResponseRow.id.in_(list(found)))).all())
            rows = []
            for rid in sorted(found):
                humans = found[rid]
                score = compute_human_score(
                    response_id=rid, rubric_version_id=version_id, criteria=criteria,
                    humans=humans, settings=_SETTINGS, to_grade=None)
                rows.append({
                    "rubric_version_id": version_id, "dataset_id": datasets[rid],
                    "response_id": rid, "decided": score.reviewed_count,
                    "disputed": sum(1 for d in humans.values() if d.status == "disputed"),
                    "criteria_count": score.criteria_count, "score": score.score,
                    "raw_score": score.raw_score})
            session.execute(insert(_TABLE), rows)
        # The rows just written are the reviewed ones: the runs' and the panels' scores
        # from the same reads.
        _rescore_chunk(session, chunk, found, criteria, runs)
        panel_scores.rescore(session, version_id, chunk, humans=found)


def rescore_runs(session: Session, version_id: int, response_ids: Iterable[int],
                 run_ids: Iterable[int] | None = None) -> None:
    """The runs' (every run of the version, or these) effective scores of these responses,
    recomputed: a row for each one with people's decisions and a grade in the run."""
    ids = sorted(set(response_ids))
    runs = _runs(session, version_id, run_ids)
    if not ids or not runs:
        return
    criteria = [criterion_info(c) for c in rubric_repo.criteria_of(session, version_id)]
    for chunk in id_chunks(ids):
        reviewed = list(session.scalars(
            select(_TABLE.c.response_id).where(_TABLE.c.rubric_version_id == version_id,
                                               _TABLE.c.response_id.in_(chunk))))
        humans = (effective_repo.score_decisions(session, version_id, None, reviewed)
                  if reviewed else {})
        _rescore_chunk(session, chunk, {rid: humans.get(rid, {}) for rid in reviewed},
                       criteria, runs)


def _runs(session: Session, version_id: int, run_ids: Iterable[int] | None = None) -> list:
    query = select(m.RunRow.id, m.RunRow.settings).where(
        m.RunRow.rubric_version_id == version_id)
    if run_ids is not None:
        query = query.where(m.RunRow.id.in_(sorted(set(run_ids))))
    return list(session.execute(query.order_by(m.RunRow.id)).all())


def _rescore_chunk(session: Session, chunk: list[int], reviewed: dict, criteria: list,
                   runs: list) -> None:
    """The runs' rows of the responses in ``chunk``: deleted, then written again for the
    ``reviewed`` ones (response -> people's decisions) that each run graded."""
    if not runs:
        return
    r = _RUNS.c
    session.execute(delete(_RUNS).where(r.run_id.in_([run.id for run in runs]),
                                        r.response_id.in_(chunk)))
    ids = sorted(reviewed)
    if not ids:
        return
    texts: dict | None = None
    for run in runs:
        settings = RunSettings.model_validate(run.settings).scoring()
        grades = run_repo.grade_infos_for_run(session, run.id, ids)
        if not grades:
            continue
        if settings.length_penalty is not None and texts is None:
            texts = response_texts(session, ids)
        rows = []
        for grade in grades:
            found = compute_effective_grade(
                criteria=criteria, grade=grade, settings=settings,
                to_grade=(texts or {}).get(grade.response_id, ""),
                humans=reviewed.get(grade.response_id, {}))
            rows.append({"run_id": run.id, "response_id": grade.response_id,
                         "score": found.score, "error": found.error})
        session.execute(insert(_RUNS), rows)


def after_grades(session: Session, run_id: int, version_id: int,
                 response_ids: Iterable[int]) -> None:
    """After a run's grades of these responses were written: its effective scores of those
    that people reviewed under the run's version.

    On PostgreSQL the responses are locked ``FOR SHARE`` (id order) first: a verdict's
    writer holds ``FOR NO KEY UPDATE`` on its response while it recomputes
    (``effective_upkeep._lock``), so either it committed before these decisions are read,
    or it waits for this grade and then reads it."""
    ids = sorted(set(response_ids))
    if session.get_bind().dialect.name == "postgresql":
        for chunk in id_chunks(ids):
            session.execute(select(m.ResponseRow.id)
                            .where(m.ResponseRow.id.in_(chunk))
                            .order_by(m.ResponseRow.id).with_for_update(read=True))
    rescore_runs(session, version_id, ids, [run_id])


def forget_versions(session: Session, version_ids: list[int]) -> None:
    session.execute(delete(_TABLE).where(_TABLE.c.rubric_version_id.in_(version_ids)))
    _forget_panels(session, m.PanelRow.rubric_version_id.in_(version_ids))
    session.execute(delete(_RUNS).where(_RUNS.c.run_id.in_(
        select(m.RunRow.id).where(m.RunRow.rubric_version_id.in_(version_ids)))))


def forget_dataset(session: Session, dataset_id: int) -> None:
    session.execute(delete(_TABLE).where(_TABLE.c.dataset_id == dataset_id))
    _forget_panels(session, m.PanelRow.dataset_id == dataset_id)
    session.execute(delete(_RUNS).where(_RUNS.c.run_id.in_(
        select(m.RunRow.id).where(m.RunRow.dataset_id == dataset_id))))


def _forget_panels(session: Session, which) -> None:
    if not session.info.get(panel_scores.ABSENT):
        session.execute(delete(panel_scores.TABLE).where(
            panel_scores.TABLE.c.panel_id.in_(select(m.PanelRow.id).where(which))))


def forget_all(session: Session) -> None:
    session.execute(delete(_TABLE))
    if not session.info.get(panel_scores.ABSENT):
        session.execute(delete(panel_scores.TABLE))
    session.execute(delete(_RUNS))


def maintained_rows(session: Session) -> list[tuple]:
    """Every row as a plain tuple, in key order (to compare the table with a rebuild)."""
    t = _TABLE.c
    return [tuple(r) for r in session.execute(
        select(t.rubric_version_id, t.dataset_id, t.response_id, t.decided, t.disputed,
               t.criteria_count, t.score, t.raw_score)
        .order_by(t.rubric_version_id, t.response_id))]


def maintained_run_rows(session: Session) -> list[tuple]:
    """Every run score row as a plain tuple, in key order."""
    r = _RUNS.c
    return [tuple(row) for row in session.execute(
        select(r.run_id, r.response_id, r.score, r.error).order_by(r.run_id, r.response_id))]


def rescore_all(session: Session) -> None:
    """Every row recomputed from ``effective_verdicts`` as it stands (the migration's fill)."""
    forget_all(session)
    ev = m.EffectiveVerdictRow
    pairs = session.execute(select(ev.rubric_version_id, ev.response_id).distinct()
                            .order_by(ev.rubric_version_id, ev.response_id)).all()
    by_version: dict[int, list[int]] = {}
    for version_id, rid in pairs:
        by_version.setdefault(version_id, []).append(rid)
    for version_id, rids in by_version.items():
        rescore(session, version_id, rids)
