"""Keeping ``panel_verdicts`` / ``panel_grades`` equal to the panel rule, inside the writer's
transaction.

The tables hold, per (panel, response some member graded), what ``panel_decide.decide``
says from the members' grades when no member is still grading (a member still grading is
the reader's business: ``panels.panel_grades`` recomputes those few responses). They are
derived from the grades: the transaction that stores a member's grades recomputes the
panels' rows of those responses (``refresh``), a new panel is filled from its members'
grades (``fill``), and ``rebuild`` (the ``rebuild-panels`` command) recomputes everything.
Grades are only ever added (a transient failure replaced in the same transaction) or
deleted with their run, whose panels go with it, so nothing else changes a decision.

Concurrency. On SQLite writers are serial and each recomputes after its own inserts. On
PostgreSQL (read committed) two member runs storing grades of the same response at once
would each see only their own: a writer locks the responses it recomputes (``FOR NO KEY
UPDATE``, id order) first, so the second waits for the first and then reads both. A panel
being made holds its member runs' rows (``panels._hold_members``), which every grade writer
updates first: either the grades are committed before the panel reads them, or the writer
waits and then finds the panel.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from grading.types import Verdict
from storage import models as m
from storage.convert import criterion_info
from storage.dto import Choice
from storage.engine import SessionFactory
from storage.id_chunks import id_chunks
from storage.repositories import rubrics as rubric_repo
from storage.repositories.datasets import response_texts
from storage.services import panel_ties
from storage.services.panel_decide import MemberVotes, PanelGrade, decide
from storage.services.reviewers import Actor, Role, require

_CHUNK = 500  # a quarter of the verdict rows one insert writes (ids: storage.id_chunks)
VERDICTS = m.PanelVerdictRow.__table__
GRADES = m.PanelGradeRow.__table__


def lock(session: Session, run_id: int, response_ids: Iterable[int]) -> list[m.PanelRow]:
    """The panels run ``run_id`` is a member of, with these responses locked for their
    recomputation (PostgreSQL). A grade writer calls it before any other lock it takes on
    the responses (people_scores' ``FOR SHARE``): two members' writers that each held a share
    lock and then asked for this one waited for each other (a deadlock)."""
    ids = sorted(set(response_ids))
    found = list(session.scalars(
        select(m.PanelRow).join(m.PanelMemberRow, m.PanelMemberRow.panel_id == m.PanelRow.id)
        .where(m.PanelMemberRow.run_id == run_id).order_by(m.PanelRow.id)))
    if ids and found:
        _lock(session, ids)
    return found


def refresh(session: Session, run_id: int, response_ids: Iterable[int],
            panels: list[m.PanelRow] | None = None) -> None:
    """After grades of run ``run_id`` were stored for these responses: their rows in every
    panel the run is a member of (``panels``: as ``lock`` returned them, the lock taken)."""
    ids = sorted(set(response_ids))
    found = lock(session, run_id, ids) if panels is None else panels
    if not ids or not found:
        return
    for panel in found:
        _recompute(session, panel, ids)


def fill(session: Session, panel_id: int) -> None:
    """A panel's rows recomputed from every grade of its members."""
    panel = session.get(m.PanelRow, panel_id)
    assert panel is not None
    session.execute(delete(VERDICTS).where(VERDICTS.c.panel_id == panel_id))
    session.execute(delete(GRADES).where(GRADES.c.panel_id == panel_id))
    _forget_scores(session, panel_id)
    ids = list(session.scalars(
        select(m.GradeRow.response_id)
        .where(m.GradeRow.run_id.in_([member.run_id for member in panel.members]))
        .distinct().order_by(m.GradeRow.response_id)))
    _recompute(session, panel, ids, replace=False)


def fill_some(session: Session, panel: m.PanelRow, response_ids: Sequence[int],
              memo: dict | None = None) -> None:
    """The panel's rows of these responses recomputed, with the responses locked first as a
    grade writer locks them (a panel being filled by a worker, storage.jobs.panel_fills: a
    member's grade landing at the same moment is in one of the two recomputations).
    ``memo``: kept by the caller across calls, as ``fill`` keeps it across the panel."""
    ids = sorted(set(response_ids))
    _lock(session, ids)
    _recompute(session, panel, ids, memo=memo)


def _forget_scores(session: Session, panel_id: int) -> None:
    from storage.services import panel_scores  # imported here: see _recompute
    if not session.info.get(panel_scores.ABSENT):
        session.execute(delete(panel_scores.TABLE)
                        .where(panel_scores.TABLE.c.panel_id == panel_id))


def rebuild(session: Session) -> int:
    """Every panel's rows recomputed from the grades; returns the number of panel grades."""
    if session.get_bind().dialect.name == "postgresql":  # no member's grade lands meanwhile
        session.execute(select(m.RunRow.id).where(m.RunRow.id.in_(
            select(m.PanelMemberRow.run_id))).order_by(m.RunRow.id).with_for_update(read=True))
    session.execute(delete(VERDICTS))
    session.execute(delete(GRADES))
    for panel_id in session.scalars(select(m.PanelRow.id).order_by(m.PanelRow.id)).all():
        fill(session, panel_id)
    return session.scalar(select(func.count()).select_from(GRADES)) or 0


def maintained_rows(session: Session) -> list[tuple]:
    """Every row of both tables as a plain tuple, in key order (to compare with a rebuild)."""
    v, g = VERDICTS.c, GRADES.c
    verdicts = [("verdict", *r[:-1], json.dumps(r[-1])) for r in session.execute(
        select(v.panel_id, v.response_id, v.criterion_id, v.verdict, v.option, v.met,
               v.unmet, v.abstained, v.failed, v.tie, v.note, v.votes)
        .order_by(v.panel_id, v.response_id, v.criterion_id))]
    grades = [("grade", *r) for r in session.execute(
        select(g.panel_id, g.response_id, g.score, g.raw_score, g.error, g.cost,
               g.members_graded, g.tie_rule).order_by(g.panel_id, g.response_id))]
    return verdicts + grades


def rebuild_panels(sessions: SessionFactory, *, actor: Actor) -> tuple[int, int]:
    """The ``rebuild-panels`` command: every panel's rows recomputed from the grades in one
    transaction. Returns (panel grades now, rows that differed from the kept tables: removed
    plus added, 0 when they were up to date)."""
    require(actor, Role.ADMIN, "rebuild the judge panels' decisions")
    with sessions.begin() as session:
        before = set(maintained_rows(session))
        count = rebuild(session)
        # every panel whole again: one a worker was still filling is ready (its worker
        # stops at its next chunk). Not in ``rebuild``: migration 0023 runs it, before
        # this table exists.
        session.execute(delete(m.PanelFillRow.__table__))
        after = set(maintained_rows(session))
    return count, len(before ^ after)


def encode_vote(choice: Choice | None) -> Any:
    """A member's choice as ``votes`` keeps it: a verdict, ``[label]`` for an option."""
    if choice is None:
        return None
    if isinstance(choice, Verdict):
        return choice.value
    return [choice]


def decode_vote(value: Any) -> Choice | None:
    if value is None:
        return None
    if isinstance(value, list):
        return value[0]
    return Verdict(value)


def _lock(session: Session, response_ids: list[int]) -> None:
    """PostgreSQL only (see the module's docstring); SQLite writers are already serial."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for chunk in id_chunks(response_ids):
        session.execute(
            select(m.ResponseRow.id)
            .where(m.ResponseRow.id.in_(chunk))
            .order_by(m.ResponseRow.id).with_for_update(key_share=True))


def _recompute(session: Session, panel: m.PanelRow, response_ids: Sequence[int], *,
               replace: bool = True, memo: dict | None = None) -> None:
    # Imported here: panel_scores reads the stored grades through panel_reads, which
    # imports this module.
    from storage.services import panel_scores
    criteria = [criterion_info(c) for c in
                rubric_repo.criteria_of(session, panel.rubric_version_id)]
    scoring, tie_rule = panel_ties.read(panel.scoring)
    members = [member.run_id for member in panel.members]
    weights = ([member.weight for member in panel.members] if panel.rule == "weighted"
               else None)
    memo = {} if memo is None else memo  # decisions by votes, scores by choices (decide)
    for part in id_chunks(response_ids):
        chunk = list(part)
        if replace:
            session.execute(delete(VERDICTS).where(VERDICTS.c.panel_id == panel.id,
                                                   VERDICTS.c.response_id.in_(chunk)))
            session.execute(delete(GRADES).where(GRADES.c.panel_id == panel.id,
                                                 GRADES.c.response_id.in_(chunk)))
        votes = member_votes(session, members, chunk)
        graded = sorted({rid for _run, rid in votes})
        texts = (response_texts(session, graded) if scoring.length_penalty is not None
                 else {})
        grades = [
            decide(panel.id, (panel.rule, tie_rule), weights, scoring, criteria,
                   [votes.get((run_id, rid)) for run_id in members], rid, texts.get(rid),
                   [None] * len(members), memo)
            for rid in graded]
        _insert(session, grades, tie_rule)
        panel_scores.rescore(session, panel.rubric_version_id, chunk, panel_ids=[panel.id])


def member_votes(session: Session, run_ids: Sequence[int], response_ids: Sequence[int]
                 ) -> dict[tuple[int, int], MemberVotes]:
    """(run, response) -> the member's choices and cost, read as plain columns."""
    found = session.execute(
        select(m.GradeRow.id, m.GradeRow.run_id, m.GradeRow.response_id, m.GradeRow.cost)
        .where(m.GradeRow.run_id.in_(list(run_ids)),
               m.GradeRow.response_id.in_(list(response_ids)))).all()
    choices: dict[int, dict[int, Choice | None]] = {grade_id: {} for grade_id, *_ in found}
    for grade_id, criterion_id, verdict, option in session.execute(
            select(m.GradeCriterionRow.grade_id, m.GradeCriterionRow.criterion_id,
                   m.GradeCriterionRow.verdict, m.GradeCriterionRow.option)
            .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
            .where(m.GradeRow.run_id.in_(list(run_ids)),
                   m.GradeRow.response_id.in_(list(response_ids)))):
        choices[grade_id][criterion_id] = (option if option is not None else
                                           None if verdict is None else Verdict(verdict))
    return {(run_id, rid): MemberVotes(choices[grade_id], cost)
            for grade_id, run_id, rid, cost in found}


def _insert(session: Session, grades: list[PanelGrade], tie_rule: str) -> None:
    if not grades:
        return
    verdict_rows = [
        {"panel_id": g.panel_id, "response_id": g.response_id,
         "criterion_id": row.criterion_id,
         "verdict": None if row.decision.verdict is None else row.decision.verdict.value,
         "option": row.decision.option, "met": row.decision.met, "unmet": row.decision.unmet,
         "abstained": row.decision.abstained, "failed": row.decision.failed,
         "tie": row.decision.tie, "note": row.decision.note,
         "votes": [encode_vote(v) for v in row.member_verdicts]}
        for g in grades for row in g.criteria]
    grade_rows = [
        {"panel_id": g.panel_id, "response_id": g.response_id, "score": g.score,
         "raw_score": g.raw_score, "error": g.error, "cost": g.cost,
         "members_graded": g.members_graded, "tie_rule": tie_rule}
        for g in grades]
    session.execute(insert(GRADES), grade_rows)
    for start in range(0, len(verdict_rows), _CHUNK * 4):
        session.execute(insert(VERDICTS), verdict_rows[start:start + _CHUNK * 4])
