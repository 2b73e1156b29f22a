"""Keeping ``effective_scores`` (people's score per response and rubric version) equal to
the one aggregation function over ``effective_verdicts``.

``effective_upkeep`` calls :func:`rescore` right after it rewrote a response's effective
verdicts, in the same transaction, so the two tables never disagree; the rebuild rescored
every version. The score is what ``reviews.human_scores`` gives with the default scoring
settings (``compute_human_score``: None until people decided every criterion of the
version; a disputed criterion is not decided).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from grading.types import ScoringSettings
from storage import models as m
from storage.convert import criterion_info
from storage.effective import compute_human_score
from storage.repositories import effective as effective_repo
from storage.repositories import rubrics as rubric_repo

_CHUNK = 500
_TABLE = m.EffectiveScoreRow.__table__
_SETTINGS = ScoringSettings()


def rescore(session: Session, version_id: int, response_ids: Iterable[int]) -> None:
    """The rows of these responses under the version, recomputed from the table of
    effective verdicts as it stands in this transaction."""
    ids = sorted(set(response_ids))
    if not ids:
        return
    criteria = [criterion_info(c) for c in rubric_repo.criteria_of(session, version_id)]
    t = _TABLE.c
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        session.execute(delete(_TABLE).where(t.rubric_version_id == version_id,
                                             t.response_id.in_(chunk)))
        found = effective_repo.score_decisions(session, version_id, None, chunk)
        if not found:
            continue
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


def forget_versions(session: Session, version_ids: list[int]) -> None:
    session.execute(delete(_TABLE).where(_TABLE.c.rubric_version_id.in_(version_ids)))


def forget_dataset(session: Session, dataset_id: int) -> None:
    session.execute(delete(_TABLE).where(_TABLE.c.dataset_id == dataset_id))


def forget_all(session: Session) -> None:
    session.execute(delete(_TABLE))


def maintained_rows(session: Session) -> list[tuple]:
    """Every row as a plain tuple, in key order (to compare the table with a rebuild)."""
    t = _TABLE.c
    return [tuple(r) for r in session.execute(
        select(t.rubric_version_id, t.dataset_id, t.response_id, t.decided, t.disputed,
               t.criteria_count, t.score, t.raw_score)
        .order_by(t.rubric_version_id, t.response_id))]


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
