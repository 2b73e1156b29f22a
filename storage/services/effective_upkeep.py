"""Keeping ``effective_verdicts`` equal to the consensus rule, inside the writer's transaction.

The table holds, per (version, response, criterion) anyone answered, what
``consensus.decisions`` says today. It is derived from the append-only history: every write
that changes the history (or which verdicts carry into a version) recomputes the affected
rows here, with the very same consensus code the reads used before, in the same
transaction. ``rebuild`` recomputes everything (the ``rebuild-effective`` command).

What a write affects: a verdict on criterion C of version V of a rubric can change the
decision of its response on C and on every criterion of a later version of the rubric that
C carries into (``verdict_repo.carry_sources``). A new version (or new criteria of an
unfrozen one) changes which verdicts carry into it.

Concurrency. Each writer recomputes after its own inserts, so on SQLite (one writer at a
time, and everything read after a transaction's first write is what the previous writer
committed) the last one to commit sees every verdict. On PostgreSQL (read committed):

- two reviewers saving on the same response at once would each see only their own new
  verdict: a writer first locks the responses it recomputes (``FOR NO KEY UPDATE``, in id
  order), so the second waits for the first to commit and then reads both;
- a new version (or replaced criteria) and a verdict saved meanwhile must not each miss the
  other: the writer of verdicts takes ``FOR KEY SHARE`` on every version row of the rubric
  (in id order) before listing the versions it recomputes, and whoever changes a version's
  criteria already holds ``FOR UPDATE`` on the row of the version it edits
  (``rubric_repo.get_version(for_update=True)``), which conflicts with it: either the new
  version is committed before the verdict's writer lists the versions, or its writer waits
  for the verdict to be committed before it reads the history. (The foreign keys of the
  rows written on the versions a verdict carries into take the same KEY SHARE; the explicit
  lock says it.) The version writers take no new lock, so the two never wait on each other
  in a cycle (a share lock on the rubric row, taken after the verdicts' inserts, could).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.engine import SessionFactory
from storage.id_chunks import id_chunks
from storage.repositories import verdicts as verdict_repo
from storage.services import consensus, people_scores
from storage.services.reviewers import Actor, Role, require

_CHUNK = 500  # rows written by one insert (ids in IN (): storage.id_chunks)
_TABLE = m.EffectiveVerdictRow.__table__


def refresh_verdicts(session: Session, keys: Iterable[tuple[int, int]]) -> None:
    """After verdicts were written on these (response, criterion it was given on): their
    rows under that criterion's version and every later version it carries into."""
    written = sorted(set(keys))
    if not written:
        return
    criteria = sorted({cid for _rid, cid in written})
    placed = {cid: (rubric_id, number) for cid, rubric_id, number in session.execute(
        select(m.CriterionRow.id, m.RubricVersionRow.rubric_id, m.RubricVersionRow.number)
        .join(m.RubricVersionRow, m.RubricVersionRow.id == m.CriterionRow.version_id)
        .where(m.CriterionRow.id.in_(criteria)))}
    _lock(session, sorted({rubric for rubric, _n in placed.values()}),
          sorted({rid for rid, _cid in written}))
    by_rubric: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for rid, cid in written:
        by_rubric[placed[cid][0]].append((rid, cid))
    for rubric_id, pairs in by_rubric.items():
        oldest = min(placed[cid][1] for _rid, cid in pairs)
        for version_id in _versions(session, rubric_id, oldest):
            sources = verdict_repo.carry_sources(session, version_id)
            targets = sorted({(rid, sources[cid][0]) for rid, cid in pairs if cid in sources})
            if targets:
                _replace(session, version_id, targets)


def refresh_versions(session: Session, version_ids: Iterable[int]) -> None:
    """After a version was created or its criteria replaced: the rows of these versions
    (and of every later version of their rubrics), recomputed from the history. The caller
    holds ``FOR UPDATE`` on a version row of the rubric (see the module's docstring)."""
    ids = sorted(set(version_ids))
    if not ids:
        return
    found = session.execute(
        select(m.RubricVersionRow.rubric_id, func.min(m.RubricVersionRow.number))
        .where(m.RubricVersionRow.id.in_(ids)).group_by(m.RubricVersionRow.rubric_id)).all()
    for rubric_id, oldest in found:
        for version_id in _versions(session, rubric_id, oldest):
            _recompute_version(session, version_id)


def forget_versions(session: Session, version_ids: Iterable[int]) -> None:
    """Before these versions' criteria (or the versions) are deleted: their rows."""
    ids = sorted(set(version_ids))
    if ids:
        session.execute(delete(_TABLE).where(_TABLE.c.rubric_version_id.in_(ids)))
        people_scores.forget_versions(session, ids)


def forget_dataset(session: Session, dataset_id: int) -> None:
    """Before a dataset's human verdicts are deleted: the rows of its responses."""
    session.execute(delete(_TABLE).where(_TABLE.c.dataset_id == dataset_id))
    people_scores.forget_dataset(session, dataset_id)


def rebuild(session: Session, *, scores: bool = True) -> int:
    """Every row recomputed from the append-only history, and people's scores from them
    (``scores=False``: not, for migration 0020, which runs before their table exists);
    returns the number of effective verdict rows."""
    if session.get_bind().dialect.name == "postgresql":  # no verdict lands meanwhile
        session.execute(select(m.RubricVersionRow.id).order_by(m.RubricVersionRow.id)
                        .with_for_update())
    session.execute(delete(_TABLE))
    if scores:
        people_scores.forget_all(session)
    for version_id in session.scalars(
            select(m.RubricVersionRow.id)
            .order_by(m.RubricVersionRow.rubric_id, m.RubricVersionRow.number)).all():
        _recompute_version(session, version_id, scores=scores)
    return session.scalar(select(func.count()).select_from(_TABLE)) or 0


def maintained_rows(session: Session) -> list[tuple]:
    """Every row as a plain tuple, in key order (to compare the table with a rebuild)."""
    t = _TABLE.c
    return [tuple(r) for r in session.execute(
        select(t.rubric_version_id, t.dataset_id, t.response_id, t.criterion_id, t.status,
               t.verdict, t.option, t.human_verdict_id, t.carried_from)
        .order_by(t.rubric_version_id, t.response_id, t.criterion_id))]


def _versions(session: Session, rubric_id: int, from_number: int) -> list[int]:
    return list(session.scalars(
        select(m.RubricVersionRow.id)
        .where(m.RubricVersionRow.rubric_id == rubric_id,
               m.RubricVersionRow.number >= from_number)
        .order_by(m.RubricVersionRow.number)))


def _lock(session: Session, rubric_ids: list[int], response_ids: list[int]) -> None:
    """PostgreSQL only (see the module's docstring); SQLite writers are already serial."""
    if session.get_bind().dialect.name != "postgresql":
        return
    if rubric_ids:
        session.execute(
            select(m.RubricVersionRow.id).where(m.RubricVersionRow.rubric_id.in_(rubric_ids))
            .order_by(m.RubricVersionRow.id).with_for_update(read=True, key_share=True))
    for chunk in id_chunks(response_ids):
        session.execute(
            select(m.ResponseRow.id)
            .where(m.ResponseRow.id.in_(chunk))
            .order_by(m.ResponseRow.id).with_for_update(key_share=True))


def _replace(session: Session, version_id: int, targets: list[tuple[int, int]]) -> None:
    """The rows of these (response, criterion of the version), recomputed."""
    for rids, cids in consensus.same_responses(targets):
        for chunk in id_chunks(rids):
            session.execute(delete(_TABLE).where(
                _TABLE.c.rubric_version_id == version_id, _TABLE.c.criterion_id.in_(cids),
                _TABLE.c.response_id.in_(chunk)))
    _insert(session, version_id, consensus.decisions_of(session, targets, version_id))
    people_scores.rescore(session, version_id, [rid for rid, _cid in targets])


def _recompute_version(session: Session, version_id: int, *, scores: bool = True) -> None:
    session.execute(delete(_TABLE).where(_TABLE.c.rubric_version_id == version_id))
    if scores:
        people_scores.forget_versions(session, [version_id])
    sources = list(verdict_repo.carry_sources(session, version_id))
    if not sources:
        return
    ids = list(session.scalars(
        select(m.HumanVerdictRow.response_id)
        .where(m.HumanVerdictRow.criterion_id.in_(sources))
        .distinct().order_by(m.HumanVerdictRow.response_id)))
    for chunk in id_chunks(ids):
        _insert(session, version_id, consensus.decisions(session, chunk, version_id))
        if scores:
            people_scores.rescore(session, version_id, chunk)


def _insert(session: Session, version_id: int, found: consensus.Decisions) -> None:
    if not found:
        return
    datasets = dict(session.execute(
        select(m.ResponseRow.id, m.ResponseRow.dataset_id)
        .where(m.ResponseRow.id.in_(list(found)))).all())
    rows = [
        {"rubric_version_id": version_id, "dataset_id": datasets[rid], "response_id": rid,
         "criterion_id": cid, "status": d.status,
         "verdict": None if d.verdict is None else d.verdict.value,
         "option": None if d.applied is None or d.verdict is None else d.applied.option,
         "human_verdict_id": None if d.applied is None else d.applied.id,
         "carried_from": d.carried_from}
        for rid in sorted(found) for cid, d in sorted(found[rid].items())]
    for start in range(0, len(rows), _CHUNK):
        session.execute(insert(_TABLE), rows[start:start + _CHUNK])


def rebuild_effective(sessions: SessionFactory, *, actor: Actor) -> tuple[int, int]:
    """The ``rebuild-effective`` command: every row recomputed from the history in one
    transaction. Returns (rows now, rows that differed from the maintained table: removed
    plus added, 0 when it was up to date)."""
    require(actor, Role.ADMIN, "rebuild the effective verdicts")
    with sessions.begin() as session:
        before = set(maintained_rows(session)) | set(people_scores.maintained_rows(session))
        count = rebuild(session)
        after = set(maintained_rows(session)) | set(people_scores.maintained_rows(session))
    return count, len(before ^ after)
