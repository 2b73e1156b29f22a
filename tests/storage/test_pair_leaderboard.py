"""The rubric version's leaderboard (storage.services.comparison_leaderboard) and the list of
reviewed comparisons (pair_agreement.reviewed_comparisons), on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import select, update

from storage import models as m
from storage.services import (
    comparison_leaderboard,
    comparisons,
    datasets,
    pair_agreement,
    pair_reviews,
    rubrics,
)
from storage.services.comparisons import Source
from storage.services.pair_sides import shown_swapped
from tests.actors import ADMIN
from tests.storage.pair_fixtures import ANN, CRITERIA, make_comparison


def _judged(sessions, version, a, b, winners, status="done") -> int:
    made = comparisons.create_comparison(sessions, rubric_version_id=version, a=Source(a),
                                         b=Source(b), model="openai/j", actor=ADMIN)
    with sessions.begin() as session:
        ids = list(session.scalars(select(m.ComparisonPairRow.id).where(
            m.ComparisonPairRow.comparison_id == made.id, m.ComparisonPairRow.kind == "pair")
            .order_by(m.ComparisonPairRow.position)))
        for pid, winner in zip(ids, winners, strict=True):
            session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pid)
                            .values(state="done" if winner else "failed", winner=winner))
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == made.id)
                        .values(status=status))
    return made.id


def test_the_leaderboard_counts_the_finished_comparisons_of_one_version(sessions):
    version = rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN).id
    ids = [datasets.create_dataset(sessions, name, actor=ADMIN, responses=[
        {"id": f"q{k}", "query": f"Q{k}?", "text": f"{name} {k}"} for k in range(4)]).id
        for name in ("v1", "v2", "v3")]
    first = _judged(sessions, version, ids[0], ids[1], ["B", "B", "TIE", None])  # one failed
    second = _judged(sessions, version, ids[1], ids[2], ["B", "B", "B", "A"])
    _judged(sessions, version, ids[0], ids[2], ["A"] * 4, status="running")  # not finished

    board = comparison_leaderboard.rubric_leaderboard(sessions, version, resamples=50)

    assert board.comparison_ids == (first, second) and board.pairs == 7
    assert [(s.source, s.comparisons) for s in board.standings] == [
        ("v3", 4), ("v2", 7), ("v1", 3)]
    assert comparison_leaderboard.rubric_leaderboard(sessions, version + 99) is None


def test_reviewed_comparisons_lists_those_people_reviewed_with_a_stamp(sessions):
    cid, pairs, _names = make_comparison(sessions, pairs=2)
    assert pair_agreement.reviewed_comparisons(sessions) == {}
    pair_reviews.save_pair_review(sessions, actor=ANN, pair_id=pairs[0],
                                  shown_swapped=shown_swapped(ANN.key, pairs[0]),
                                  preferences={"complete": "A", "rude": "T"})
    [(found, (count, newest))] = pair_agreement.reviewed_comparisons(sessions).items()
    assert (found, count) == (cid, 2) and newest > 0
