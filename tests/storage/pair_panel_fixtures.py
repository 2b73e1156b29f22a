"""Comparisons of the same two sources by several judges, their preferences stored as the
comparison runner stores them, for panels of pairwise judges; and each member's reports
rebuilt straight from a script, to check a panel against grading.pairwise.panel."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update

from grading.pairwise.grader import pair_report
from grading.pairwise.report import CriterionPreference, PairReport
from storage import models as m
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.storage.pair_fixtures import CRITERIA

# One criterion's answer: (preference, consistent), or None: the call failed there.
Answer = tuple[str, bool] | None
# One judge's script: per pair, its answers per criterion, or None: the pair failed.
Script = list[list[Answer] | None]


@dataclass(frozen=True)
class Sources:
    version_id: int
    a: int
    b: int


def sources(sessions, *, pairs: int = 4, name: str = "Steps") -> Sources:
    a = datasets.create_dataset(sessions, f"{name} old", actor=ADMIN, responses=[
        {"id": f"q{n}", "query": f"Question {n}?", "text": f"old answer {n}"}
        for n in range(pairs)]).id
    b = datasets.create_dataset(sessions, f"{name} new", actor=ADMIN, responses=[
        {"id": f"q{n}", "query": f"Question {n}?", "text": f"new answer {n}"}
        for n in range(pairs)]).id
    version = rubrics.create_rubric(sessions, name, CRITERIA, actor=ADMIN).id
    return Sources(version, a, b)


def judged(sessions, src: Sources, model: str, script: Script, *, status: str = "done",
           holistic: bool = False, swap: bool = False) -> int:
    """A comparison of ``src`` by ``model`` with ``script``'s preferences stored; its id."""
    a, b = (src.b, src.a) if swap else (src.a, src.b)
    made = comparisons.create_comparison(
        sessions, rubric_version_id=src.version_id, a=Source(a), b=Source(b), model=model,
        holistic=holistic, actor=ADMIN)
    with sessions.begin() as session:
        ids = list(session.scalars(select(m.ComparisonPairRow.id)
                                   .where(m.ComparisonPairRow.comparison_id == made.id)
                                   .order_by(m.ComparisonPairRow.position)))
        criteria = [None] if holistic else list(session.scalars(
            select(m.CriterionRow.id).where(m.CriterionRow.version_id == src.version_id)
            .order_by(m.CriterionRow.position)))
        done = failed = 0
        for pid, answers in zip(ids, script, strict=False):
            if answers is None:
                failed += 1
                session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pid)
                                .values(state="failed", error="the provider kept failing"))
                continue
            done += 1
            session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pid)
                            .values(state="done"))
            for n, (cid, answer) in enumerate(zip(criteria, answers, strict=True)):
                side, consistent = answer if answer else (None, None)
                session.add(m.ComparisonPreferenceRow(
                    pair_id=pid, criterion_id=cid, position=n, first=side,
                    second=side and {"A": "B", "B": "A"}.get(side, side), preference=side,
                    consistent=consistent, error=None if answer else "call failed"))
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == made.id)
                        .values(status=status, done_count=done, failed_count=failed))
    return made.id


def reports(script: Script) -> list[PairReport]:
    """A judge's reports of each pair, built from the script alone (no storage)."""
    found = []
    for answers in script:
        if answers is None:
            found.append(pair_report([CriterionPreference(criterion=c, error="failed")
                                      for c in CRITERIA], False))
            continue
        found.append(pair_report([
            CriterionPreference(criterion=c, preference=a[0] if a else None,
                                consistent=a[1] if a else None,
                                error=None if a else "call failed")
            for c, a in zip(CRITERIA, answers, strict=True)], False))
    return found
