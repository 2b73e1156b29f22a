"""AppTest checks of the Compare page's leaderboard: three sources compared two by two on
one rubric version are ranked by Bradley-Terry strength with intervals and the pairs behind
each; a comparison on another version, a cancelled one, and two sources only are not."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update
from streamlit.testing.v1 import AppTest

from storage import models as m
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.storage.pair_fixtures import CRITERIA
from tests.ui.pages import db, open_page, texts


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _dataset(name: str, n: int) -> int:
    return datasets.create_dataset(db(), name, actor=ADMIN, responses=[
        {"id": f"q{k}", "query": f"Question {k}?", "text": f"{name} answer {k}"}
        for k in range(n)]).id


def _judged(version: int, a: int, b: int, winners: list[str], status: str = "done") -> int:
    """A comparison of a and b whose pairs the judge decided as ``winners`` (in order)."""
    made = comparisons.create_comparison(db(), rubric_version_id=version, a=Source(a),
                                         b=Source(b), model="openai/j", actor=ADMIN)
    with db().begin() as session:
        ids = list(session.scalars(select(m.ComparisonPairRow.id).where(
            m.ComparisonPairRow.comparison_id == made.id, m.ComparisonPairRow.kind == "pair")
            .order_by(m.ComparisonPairRow.position)))
        for pid, winner in zip(ids, winners, strict=True):
            session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pid)
                            .values(state="done", winner=winner,
                                    score={"A": 0.0, "TIE": 0.5, "B": 1.0}[winner]))
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == made.id)
                        .values(status=status, done_count=len(winners)))
    return made.id


def _open() -> AppTest:
    return open_page("compare", reviewer="Ada", timeout=60)


def test_three_sources_are_ranked_with_intervals_and_the_pairs_behind_each():
    version = rubrics.create_rubric(db(), "Steps", CRITERIA, actor=ADMIN).id
    v1, v2, v3 = (_dataset(name, 6) for name in ("v1", "v2", "v3"))
    _judged(version, v1, v2, ["B"] * 5 + ["TIE"])  # v2 beats v1
    _judged(version, v2, v3, ["B"] * 4 + ["A", "TIE"])  # v3 beats v2
    _judged(version, v1, v3, ["B"] * 6)  # v3 beats v1
    _judged(version, v3, v1, ["A"] * 6, status="cancelled")  # not finished: left out
    other = rubrics.create_rubric(db(), "Other", CRITERIA, actor=ADMIN).id
    _judged(other, v1, v3, ["A"] * 6)  # another rubric: left out

    at = _open()
    at.selectbox(key="compare_selected").set_value(3).run()
    assert not at.exception, at.exception

    assert "Leaderboard" in [h.value for h in at.subheader]
    board = at.dataframe[-1].value
    assert list(board["source"]) == ["v3", "v2", "v1"]
    assert list(board["rank"]) == [1, 2, 3]
    assert list(board["pairs"]) == [12, 12, 12]
    assert board["strength"][0] > 0 > board["strength"][2]
    assert all(" – " in interval for interval in board["95% interval"])
    assert "3 finished comparisons on this rubric version (18 pairs" in texts(at)
    assert "0 is the average source" in texts(at)


def test_two_sources_only_say_a_leaderboard_needs_three():
    version = rubrics.create_rubric(db(), "Steps", CRITERIA, actor=ADMIN).id
    v1, v2 = _dataset("v1", 3), _dataset("v2", 3)
    _judged(version, v1, v2, ["B", "B", "A"])
    at = _open()
    assert "needs three or more sources" in texts(at) and "there are 2 so far" in texts(at)
    assert len(at.dataframe) == 1  # the duel's own table only
