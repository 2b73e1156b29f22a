"""Each judge grade's verdict key (``grades.verdict_key``): its criteria's choices in one
string, so "do the runs' verdicts differ on this response?" compares one value per grade
instead of grouping every grade x criterion row (issue 41; migration 0031).

The choice of a criterion is what the judges' disagreement compares
(``repositories.results.verdicts_differ_query``): the chosen option's label, else the
verdict; none when the criterion has no verdict (it failed). The key is

- ``[...]``: every criterion of the grade's rubric version has a choice; the choices as a
  JSON array in criterion id order (one encoding, so equal keys <=> equal choices);
- ``-`` (``UNLABELLED``): no criterion has a choice (a failed grade, a holistic judge): the
  grade cannot disagree with any other;
- ``?`` (``PARTIAL``): some criteria have a choice, others not: such a response is compared
  criterion by criterion, as are those with a NULL key (a grade not keyed yet).

``record_grades`` writes the key with the grade; grades are never updated in place (a
transient failure is replaced by a new row). ``rebuild`` recomputes every key from the
criterion rows (the ``rebuild-verdict-keys`` command, and migration 0031's fill).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from storage import models as m
from storage.engine import SessionFactory
from storage.repositories.results import PARTIAL_KEY, UNLABELLED_KEY
from storage.services.reviewers import Actor, Role, require

PARTIAL, UNLABELLED = PARTIAL_KEY, UNLABELLED_KEY
_CHUNK = 2000


def choice(verdict: str | None, option: str | None) -> str | None:
    """What disagreement compares on one criterion: ``coalesce(option, verdict)`` of a row
    with a verdict, none without one."""
    if verdict is None:
        return None
    return option if option is not None else verdict


def verdict_key(choices: Mapping[int, str | None], criterion_ids: Iterable[int]) -> str:
    """The key of a grade whose criterion rows give ``choices`` (criterion id -> choice)
    under a rubric version with these criteria."""
    wanted = sorted(criterion_ids)
    if all(c is None for c in choices.values()):
        return UNLABELLED
    if set(choices) != set(wanted) or any(choices[c] is None for c in wanted):
        return PARTIAL
    return json.dumps([choices[c] for c in wanted], ensure_ascii=False, separators=(",", ":"))


def key_of_rows(rows: Sequence[Mapping], criterion_ids: Iterable[int]) -> str:
    """The key of a grade about to be stored: its grade_criteria rows as dicts."""
    return verdict_key({r["criterion_id"]: choice(r["verdict"], r["option"]) for r in rows},
                       criterion_ids)


def computed_keys(connection: Connection | Session, grade_ids: Sequence[int]
                  ) -> dict[int, str]:
    """The keys of these grades, from their criterion rows."""
    g, gc, c, r = (m.GradeRow.__table__.c, m.GradeCriterionRow.__table__.c,
                   m.CriterionRow.__table__.c, m.RunRow.__table__.c)
    versions = {gid: vid for gid, vid in connection.execute(
        select(g.id, r.rubric_version_id).join(m.RunRow.__table__, r.id == g.run_id)
        .where(g.id.in_(list(grade_ids))))}
    criteria: dict[int, list[int]] = {}
    for vid, cid in connection.execute(
            select(c.version_id, c.id).where(c.version_id.in_(set(versions.values())))):
        criteria.setdefault(vid, []).append(cid)
    choices: dict[int, dict[int, str | None]] = {gid: {} for gid in versions}
    for gid, cid, verdict, option in connection.execute(
            select(gc.grade_id, gc.criterion_id, gc.verdict, gc.option)
            .where(gc.grade_id.in_(list(grade_ids)))):
        choices[gid][cid] = choice(verdict, option)
    return {gid: verdict_key(choices[gid], criteria.get(vid, ())) for gid, vid in versions.items()}


def fill(connection: Connection | Session, *, only_missing: bool) -> int:
    """Every grade's key (``only_missing``: those still NULL) from its criterion rows, a
    chunk of grades at a time; returns how many grades were written."""
    g = m.GradeRow.__table__.c
    written, after = 0, 0
    while True:
        query = select(g.id).where(g.id > after).order_by(g.id).limit(_CHUNK)
        if only_missing:
            query = query.where(g.verdict_key.is_(None))
        ids = list(connection.execute(query).scalars())
        if not ids:
            return written
        keys = computed_keys(connection, ids)
        connection.execute(
            update(m.GradeRow.__table__).where(g.id == bindparam("gid"))
            .values(verdict_key=bindparam("key")),
            [{"gid": gid, "key": key} for gid, key in keys.items()])
        written += len(keys)
        after = ids[-1]


def kept_keys(session: Session) -> list[tuple[int, str | None]]:
    """(grade id, key) of every grade, in id order (to compare with a rebuild)."""
    g = m.GradeRow
    return [tuple(row) for row in session.execute(
        select(g.id, g.verdict_key).order_by(g.id))]


def rebuild_verdict_keys(sessions: SessionFactory, *, actor: Actor) -> tuple[int, int]:
    """The ``rebuild-verdict-keys`` command: every grade's key recomputed from its criterion
    rows in one transaction. Returns (grades, (grade, key) rows that differed from the kept
    ones: removed plus added, so a changed key counts twice; 0 when they were up to date)."""
    require(actor, Role.ADMIN, "rebuild the judges' verdict keys")
    with sessions.begin() as session:
        before = set(kept_keys(session))
        fill(session, only_missing=False)
        after = set(kept_keys(session))
    return len(after), len(before ^ after)
