"""AppTest checks of the leaderboard ranked by people's preferences: once people decided
pairs, a reviewer chooses to rank by them and reads how many pairs it rests on; without
reviews there is no such choice."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from storage import models as m
from storage.services import pair_reviews, rubrics
from storage.services.pair_sides import shown_swapped
from tests.actors import ADMIN
from tests.storage.pair_fixtures import ANN, BOB, CRITERIA
from tests.ui.pages import db, open_page, texts
from tests.ui.test_compare_leaderboard import _dataset, _judged

_MIRROR = {"A": "B", "B": "A"}


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _three() -> list[int]:
    """v1, v2, v3 two by two; the judge: B wins every pair (v3 > v2 > v1)."""
    version = rubrics.create_rubric(db(), "Steps", CRITERIA, actor=ADMIN).id
    v1, v2, v3 = (_dataset(name, 3) for name in ("v1", "v2", "v3"))
    return [_judged(version, v1, v2, ["B"] * 3), _judged(version, v2, v3, ["B"] * 3),
            _judged(version, v1, v3, ["B"] * 3)]


def _people_prefer_a(comparison_id: int, count: int) -> None:
    with db()() as session:
        pairs = list(session.scalars(select(m.ComparisonPairRow.id).where(
            m.ComparisonPairRow.comparison_id == comparison_id).order_by(
            m.ComparisonPairRow.position)))[:count]
    for pid in pairs:
        for who in (ANN, BOB):
            swapped = shown_swapped(who.key, pid)
            side = "B" if swapped else "A"
            pair_reviews.save_pair_review(db(), actor=who, pair_id=pid, shown_swapped=swapped,
                                          preferences={"complete": side, "rude": side})


def test_a_reviewer_ranks_by_peoples_decided_preferences():
    duels = _three()
    for duel in duels:
        _people_prefer_a(duel, 2)
    at = open_page("compare", reviewer="Ada", timeout=60)
    at.selectbox(key="compare_selected").set_value(duels[-1]).run()
    assert list(at.dataframe[-1].value["source"]) == ["v3", "v2", "v1"]  # the judges'

    at.radio(key="compare_board_basis").set_value("people").run()

    assert not at.exception, at.exception
    board = at.dataframe[-1].value
    assert list(board["source"]) == ["v1", "v2", "v3"]
    assert list(board["pairs"]) == [4, 4, 4]
    assert all(" – " in interval for interval in board["95% interval"])
    assert "the 6 of 9 pairs in 3 comparisons" in texts(at)


def test_without_reviews_there_is_no_choice_of_ranking():
    duels = _three()
    at = open_page("compare", reviewer="Ada", timeout=60)
    at.selectbox(key="compare_selected").set_value(duels[-1]).run()
    assert not at.exception, at.exception
    assert [r.key for r in at.radio if r.key == "compare_board_basis"] == []
    assert list(at.dataframe[-1].value["source"]) == ["v3", "v2", "v1"]
