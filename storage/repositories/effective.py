"""Reads of ``effective_verdicts`` (kept by storage.services.effective_upkeep): the human
decision of every reviewed (response, criterion of a version) without recomputing it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session, aliased

from grading.types import Verdict
from storage import models as m
from storage.dto import HumanDecision, HumanVerdictInfo
from storage.id_chunks import id_chunks
from storage.plain_rows import plain_rows


def applied_query(rubric_version_id: int, dataset_id: int | None,
                  response_ids: Sequence[int] | None = None) -> Select:
    """(criterion of the version, status, carried from, then the columns of the human
    verdict that stands and of the one it replaced) of every decided criterion of the
    review set, by response then criterion; disputed ones have none. Plain columns, not ORM
    objects (thousands of rows). Through the table's (version, dataset, response) index
    (``dataset_id`` None, with ``response_ids``: its (version, response, criterion) key)."""
    ev, hv, previous = m.EffectiveVerdictRow, m.HumanVerdictRow, aliased(m.HumanVerdictRow)
    query = (
        select(ev.criterion_id, ev.status, ev.carried_from, hv.id, hv.response_id,
               hv.rubric_version_id, hv.seq, hv.verdict, hv.reviewer, hv.note, hv.created_at,
               hv.replaces_id, hv.reviewer_key, hv.stream, hv.review_seconds, hv.option,
               previous.verdict, previous.option)
        .join(hv, hv.id == ev.human_verdict_id)
        .outerjoin(previous, previous.id == hv.replaces_id)
        .where(ev.rubric_version_id == rubric_version_id)
        .order_by(ev.response_id, ev.criterion_id))
    if dataset_id is not None:
        query = query.where(ev.dataset_id == dataset_id)
    if response_ids is not None:
        query = query.where(ev.response_id.in_(list(response_ids)))
    return query


def _info(row) -> HumanVerdictInfo:
    return verdict_info(row[0], row[3:])


def verdict_info(criterion_id: int, fields) -> HumanVerdictInfo:
    """What ``convert.human_verdict_info`` makes of a verdict read as (id, response, version,
    seq, verdict, reviewer, note, created at, replaces, reviewer key, stream, seconds, option,
    the replaced verdict, the replaced option), under ``criterion_id``: the criterion of the
    version it applies to, as ``consensus.gather`` maps a carried one."""
    (vid, rid, version_id, seq, verdict, reviewer, note, created_at, replaces_id, key, stream,
     seconds, option, previous_verdict, previous_option) = fields
    cid = criterion_id
    return HumanVerdictInfo(
        id=vid, response_id=rid, rubric_version_id=version_id, criterion_id=cid, seq=seq,
        verdict=Verdict(verdict), reviewer=reviewer, note=note, created_at=created_at,
        replaces_id=replaces_id,
        previous_verdict=None if previous_verdict is None else Verdict(previous_verdict),
        reviewer_key=key, adjudication=stream == m.ADJUDICATION_STREAM,
        review_seconds=seconds, option=option, previous_option=previous_option)


def applied_verdicts(session: Session, rubric_version_id: int,
                     dataset_id: int) -> list[HumanVerdictInfo]:
    """The verdict in force of every decided (response, criterion) of the review set."""
    return [_info(row) for row in session.execute(applied_query(rubric_version_id,
                                                                  dataset_id))]


class AppliedRow(NamedTuple):
    """What the Agreement report reads of a verdict in force (``applied_verdicts`` builds
    a whole ``HumanVerdictInfo``, its timestamp converted, per row)."""

    response_id: int
    criterion_id: int  # of the version it applies to
    choice: Verdict | str
    note: str | None


def applied_rows(session: Session, rubric_version_id: int, dataset_id: int,
                 response_ids: Sequence[int] | None = None) -> list[AppliedRow]:
    """``applied_verdicts`` as ``AppliedRow``s, in the same order (``response_ids``: of
    these responses only)."""
    ev, hv = m.EffectiveVerdictRow, m.HumanVerdictRow
    verdict_of = {v.value: v for v in Verdict}
    query = (select(ev.criterion_id, hv.response_id, hv.verdict, hv.option, hv.note)
             .join(hv, hv.id == ev.human_verdict_id)
             .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id)
             .order_by(ev.response_id, ev.criterion_id))
    if response_ids is not None:
        query = query.where(ev.response_id.in_(list(response_ids)))
    return [AppliedRow(rid, cid, option if option is not None else verdict_of[verdict], note)
            for cid, rid, verdict, option, note in plain_rows(session.connection(),  # driver rows
                                                              query)]


def score_decisions(session: Session, rubric_version_id: int, dataset_id: int | None,
                    response_ids: Sequence[int]) -> dict[int, dict[int, HumanDecision]]:
    """The decisions of these responses as effective scores need them: status, verdict, the
    verdict that stands and where it was carried from. Without each reviewer's verdict
    (``reviews`` empty, ``adjudication`` None): not for pages that show who said what, nor
    for a viewer who may not see every verdict yet (storage.services.blindness)."""
    found: dict[int, dict[int, HumanDecision]] = {}
    ev = m.EffectiveVerdictRow
    ids = list(response_ids)
    for chunk in id_chunks(ids):
        for row in session.execute(applied_query(rubric_version_id, dataset_id, chunk)):
            cid, status, carried = row[0], row[1], row[2]
            applied = _info(row)
            found.setdefault(applied.response_id, {})[cid] = HumanDecision(
                criterion_id=cid, status=status, verdict=applied.verdict, applied=applied,
                reviews=(), adjudication=None, carried_from=carried)
        disputed = (select(ev.response_id, ev.criterion_id)
                    .where(ev.rubric_version_id == rubric_version_id,
                           ev.response_id.in_(chunk), ev.status == "disputed"))
        if dataset_id is not None:
            disputed = disputed.where(ev.dataset_id == dataset_id)
        for rid, cid in session.execute(disputed):
            found.setdefault(rid, {})[cid] = HumanDecision(
                criterion_id=cid, status="disputed", verdict=None, applied=None, reviews=(),
                adjudication=None)
    return found


def decided_choices(session: Session, rubric_version_id: int, dataset_id: int,
                    criterion_id: int) -> dict[int, str]:
    """response id -> the decided choice (option label, else verdict) on one criterion of
    the version, for the review set's responses where people decided it (agreed or
    adjudicated, carried ones included); a disputed criterion has none."""
    ev = m.EffectiveVerdictRow
    return {rid: option if option is not None else verdict
            for rid, verdict, option in session.execute(
                select(ev.response_id, ev.verdict, ev.option)
                .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id,
                       ev.criterion_id == criterion_id, ev.status != "disputed"))}


def reviewed_response_ids(session: Session, rubric_version_id: int,
                          dataset_id: int) -> list[int]:
    """The review set's responses anyone answered (carried verdicts included), in id order:
    what ``verdict_repo.response_ids_reviewed_in`` finds, from the table's set index."""
    return list(session.scalars(reviewed_ids_query(rubric_version_id, dataset_id)))


def reviewed_ids_query(rubric_version_id: int, dataset_id: int) -> Select:
    ev = m.EffectiveVerdictRow
    return (select(ev.response_id)
            .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id)
            .distinct().order_by(ev.response_id))


def dispute_keys(session: Session, rubric_version_id: int, dataset_id: int,
                 statuses: Sequence[str] = ("disputed",)) -> list[tuple[int, int]]:
    """(response, criterion of the version) of the review set with one of these statuses,
    in key order, from the table's set index."""
    return [(rid, cid) for rid, cid in session.execute(
        dispute_keys_query(rubric_version_id, dataset_id, statuses))]


def dispute_keys_query(rubric_version_id: int, dataset_id: int,
                       statuses: Sequence[str]) -> Select:
    ev = m.EffectiveVerdictRow
    return (select(ev.response_id, ev.criterion_id)
            .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id,
                   ev.status.in_(list(statuses)))
            .order_by(ev.response_id, ev.criterion_id))


def dispute_page_query(rubric_version_id: int, dataset_id: int, limit: int) -> Select:
    """The first ``limit`` disputes of the review set in queue order (response, then the
    criterion's position), each row with the number of disputes in all."""
    ev = m.EffectiveVerdictRow
    return (
        select(ev.response_id, ev.criterion_id, func.count().over().label("total"))
        .join(m.CriterionRow, m.CriterionRow.id == ev.criterion_id)
        .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id,
               ev.status == "disputed")
        .order_by(ev.response_id, m.CriterionRow.position)
        .limit(limit))


def dispute_page(session: Session, rubric_version_id: int, dataset_id: int, limit: int,
                 keys: Sequence[tuple[int, int]] = ()
                 ) -> tuple[int, list[tuple[int, int]], list[tuple[int, int]]]:
    """(number of disputes, the first ``limit`` in queue order, which of ``keys`` are
    disputed or adjudicated) of the review set."""
    rows = session.execute(dispute_page_query(rubric_version_id, dataset_id,
                                              max(limit, 1))).all()
    total = rows[0].total if rows else 0
    first = [(rid, cid) for rid, cid, _total in rows][:limit]
    kept: list[tuple[int, int]] = []
    if keys:
        ev = m.EffectiveVerdictRow
        wanted = set(keys)
        kept = [(rid, cid) for rid, cid in session.execute(
            select(ev.response_id, ev.criterion_id)
            .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id,
                   ev.response_id.in_(sorted({rid for rid, _cid in wanted})),
                   ev.status.in_(["disputed", "adjudicated"]))
            .order_by(ev.response_id, ev.criterion_id))
            if (rid, cid) in wanted]
    return int(total), first, kept


def decided_rows(session: Session, rubric_version_id: int,
                 criterion_id: int) -> list[tuple[int, str, str | None]]:
    """(response, verdict, option) of every decided (agreed or adjudicated, carried ones
    included) row of one criterion of the version, in every dataset, by response."""
    return [tuple(row) for row in session.execute(
        decided_rows_query(rubric_version_id, criterion_id))]


def decided_rows_query(rubric_version_id: int, criterion_id: int) -> Select:
    ev = m.EffectiveVerdictRow
    return (select(ev.response_id, ev.verdict, ev.option)
            .where(ev.rubric_version_id == rubric_version_id, ev.criterion_id == criterion_id,
                   ev.status != "disputed")
            .order_by(ev.response_id))


def people_scored_ids(session: Session, rubric_version_id: int,
                      response_ids: Sequence[int]) -> set[int]:
    """Those of these responses with people's score row (``effective_scores``) under the
    version: the ones ``effective_run_scores`` keeps rows of."""
    es = m.EffectiveScoreRow
    ids = sorted(set(response_ids))
    found: set[int] = set()
    for chunk in id_chunks(ids):
        found.update(session.scalars(select(es.response_id).where(
            es.rubric_version_id == rubric_version_id,
            es.response_id.in_(chunk))))
    return found


def kept_run_scores(session: Session, run_ids: Sequence[int], response_ids: Sequence[int]
                    ) -> dict[tuple[int, int], tuple[float | None, str | None]]:
    """(response, run) -> the kept effective (score, error) of these responses."""
    kept = m.EffectiveRunScoreRow
    ids = sorted(set(response_ids))
    found: dict[tuple[int, int], tuple[float | None, str | None]] = {}
    for chunk in id_chunks(ids):
        found.update({(rid, run): (score, error)
                      for rid, run, score, error in session.execute(
                          select(kept.response_id, kept.run_id, kept.score, kept.error)
                          .where(kept.run_id.in_(list(run_ids)),
                                 kept.response_id.in_(chunk)))})
    return found
