"""A comparison with judged pairs, set up through the services (the judge's preferences are
stored as the comparison runner stores them), and the people who review it."""

from __future__ import annotations

from sqlalchemy import select, update

from grading.types import Criterion
from storage import models as m
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from storage.services.pair_sides import shown_swapped
from storage.services.reviewers import Actor, Role
from tests.actors import ADMIN

CRITERIA = [Criterion(name="complete", requirement="Covers every step", weight=4),
            Criterion(name="rude", requirement="Insults the reader", weight=-2)]


def person(key: str, role: Role = Role.REVIEWER) -> Actor:
    return Actor(key=key, name=key.split("@")[0].title(), roles=frozenset({role}),
                 signed_in=True)


ANN, BOB, CAT = person("ann@example.org"), person("bob@example.org"), person("cat@example.org")
ADJ = person("adj@example.org", Role.ADJUDICATOR)
NOBODY = Actor(key="eve@example.org", name="Eve", roles=frozenset(), signed_in=True)


def make_comparison(sessions, *, pairs: int = 3, judge: tuple[str | None, ...] = ("A", "A"),
                    holistic: bool = False) -> tuple[int, list[int], dict[int, str]]:
    """A comparison of ``pairs`` judged pairs (the judge's preference per criterion
    ``judge``) -> (comparison id, pair ids, criterion name -> id... as {id: name})."""
    a = datasets.create_dataset(sessions, "Old prompt", actor=ADMIN, responses=[
        {"id": f"q{n}", "query": f"Question {n}?", "text": f"old answer {n}"}
        for n in range(pairs)]).id
    b = datasets.create_dataset(sessions, "New prompt", actor=ADMIN, responses=[
        {"id": f"q{n}", "query": f"Question {n}?", "text": f"new answer {n}"}
        for n in range(pairs)]).id
    version = rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN).id
    made = comparisons.create_comparison(sessions, rubric_version_id=version, a=Source(a),
                                         b=Source(b), model="openai/j", holistic=holistic,
                                         actor=ADMIN)
    with sessions.begin() as session:
        ids = list(session.scalars(select(m.ComparisonPairRow.id)
                                   .where(m.ComparisonPairRow.comparison_id == made.id)
                                   .order_by(m.ComparisonPairRow.position)))
        criteria = list(session.scalars(select(m.CriterionRow)
                                        .where(m.CriterionRow.version_id == version)
                                        .order_by(m.CriterionRow.position)))
        slots = [None] if holistic else [c.id for c in criteria]
        for pid in ids:
            session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pid)
                            .values(state="done"))
            for n, cid in enumerate(slots):
                side = judge[n]
                session.add(m.ComparisonPreferenceRow(
                    pair_id=pid, criterion_id=cid, position=n, first=side, second=side and {
                        "A": "B", "B": "A"}.get(side, side), preference=side,
                    consistent=side is not None, error=None if side else "call failed"))
        names = {c.id: c.name for c in criteria}
    return made.id, ids, names


def pair_shown(reviewer: Actor, pair_ids: list[int], swapped: bool) -> int:
    """A pair this reviewer is shown with the given sides."""
    return next(p for p in pair_ids if shown_swapped(reviewer.key, p) is swapped)
