"""AppTest checks of the Compare page's people section: once people reviewed pairs of a
comparison, its result with their decisions in place of the judge's is shown beside the
judge's own, with the judge-vs-people agreement per criterion (kappa, n, interval) and
"can't tell yet" while the pairs are few. Without any review, no such section."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from streamlit.testing.v1 import AppTest

from storage import models as m
from storage.services import pair_reviews
from storage.services.pair_sides import shown_swapped, to_shown
from tests.storage.pair_fixtures import ANN, BOB, make_comparison
from tests.ui.pages import APP, db, open_page, texts


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _finished(comparison_id: int, pairs: int) -> None:
    with db().begin() as session:
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == comparison_id)
                        .values(status="done", done_count=pairs))


def _open() -> AppTest:
    return open_page("compare", reviewer="Ada", timeout=60)


def _review(pair_ids: list[int], complete: str, rude: str) -> None:
    for who in (ANN, BOB):
        for p in pair_ids:
            flip = shown_swapped(who.key, p)
            pair_reviews.save_pair_review(
                db(), actor=who, pair_id=p, shown_swapped=flip,
                preferences={"complete": to_shown(complete, flip), "rude": to_shown(rude, flip)})


def test_without_reviews_the_page_shows_only_the_judge():
    cid, _pairs, _ = make_comparison(db(), pairs=3, judge=("A", "B"))
    _finished(cid, 3)
    at = _open()
    assert "With people's preferences" not in [h.value for h in at.subheader]
    assert len(at.dataframe) == 1


def test_peoples_decisions_replace_the_judges_beside_the_judges_own_with_agreement():
    # The judge prefers A on "complete" (weight 4) and B on "rude" (penalty 2): A wins
    # every pair. Two people agree B is better on both criteria of two of the three pairs.
    cid, pairs, _ = make_comparison(db(), pairs=3, judge=("A", "B"))
    _finished(cid, 3)
    _review(pairs[:2], complete="B", rude="B")

    at = _open()

    assert "With people's preferences" in [h.value for h in at.subheader]
    metrics = {metric.label: metric.value for metric in at.metric}
    assert metrics["B's win rate, the judge alone"] == "0%"
    assert metrics["B's win rate with people's preferences"] == "67%"
    people = at.dataframe[1].value
    assert list(people["criterion"]) == ["complete", "rude", "overall"]
    assert list(people["B wins"]) == [2, 3, 2] and list(people["A wins"]) == [1, 0, 1]
    assert "position-consistent" not in people.columns  # people are asked in one order
    agreement = at.dataframe[2].value
    assert list(agreement["criterion"]) == ["complete", "rude"]
    assert list(agreement["n"]) == [2, 2]
    assert list(agreement["agreement %"]) == ["0", "100"]
    assert agreement["reading"][0].startswith("can't tell yet: 2 pairs")
    assert "kappa undefined" in agreement["reading"][1]  # both always said B
    assert "Judge vs people" in texts(at)


def test_the_agreement_page_lists_the_reviewed_comparisons_with_judge_vs_people():
    cid, pairs, _ = make_comparison(db(), pairs=3, judge=("A", "B"))
    _finished(cid, 3)
    _review(pairs, complete="B", rude="B")
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = "Ada"
    at.run()
    at.switch_page("app_pages/agreement.py")
    at.run()
    assert not at.exception, at.exception

    assert "Pairwise comparisons: judge vs people" in [h.value for h in at.subheader]
    # no single-response grading here: the page says the comparisons are below, not that
    # there is nothing to compare
    [info] = [i.value for i in at.info]
    assert info.startswith("No graded responses to compare yet (the pairwise comparisons "
                           "people reviewed are below).")
    table = at.dataframe[-1].value
    assert list(table["comparison"]) == [f"#{cid} · New prompt vs Old prompt"] * 2
    assert list(table["criterion"]) == ["complete", "rude"]
    assert list(table["n"]) == [3, 3]
    assert table["reading"][0].startswith("can't tell yet: 3 pairs")
    # and the people among themselves: Ann and Bob answered every pair alike
    assert list(table["pairs with 2+ people"]) == [3, 3]
    assert list(table["people agree %"]) == ["100", "100"]
    assert list(table["people's alpha"]) == ["—", "—"]  # one answer throughout: undefined


@pytest.mark.parametrize(("pairs", "expected"), [
    pytest.param(0, "no pair with both", id="none"),
    pytest.param(4, "can't tell yet: 4 pairs", id="few"),
    pytest.param(30, "kappa between", id="enough"),
])
def test_the_reading_says_cant_tell_yet_until_the_pairs_are_enough(pairs, expected):
    from grading.pairwise.agreement import judge_vs_people
    from ui.pair_agreement_view import reading

    judge = {n: ("A", "B", "TIE")[n % 3] for n in range(pairs)}
    people = {n: side if n % 5 else "B" for n, side in judge.items()}
    assert reading(judge_vs_people(judge, people, resamples=200)).startswith(expected)
