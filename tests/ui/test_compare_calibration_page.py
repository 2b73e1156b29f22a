"""AppTest checks of calibration examples on the Compare page: a comparison started with
examples shows that the judge saw pairs people decided and that those pairs are left out
of its figures; with no decided pair, the reason is shown and nothing is written."""

from __future__ import annotations

from sqlalchemy import func, select

from grading.types import Criterion
from storage import models as m
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from storage.services.pair_reviews import adjudicate_pair
from tests.actors import ADMIN
from tests.fake_provider import fake_provider, fake_provider_server
from tests.fault_provider import wait_until
from tests.storage.pair_fixtures import ADJ
from tests.ui.pages import db, open_page, texts

__all__ = ["fake_provider", "fake_provider_server"]

CRITERIA = [Criterion(name="complete", requirement="Covers every step", weight=4)]


def _seed(api_base: str, *, decide: bool) -> None:
    """Two datasets of three pairs and a first comparison of them; ``decide``: an
    adjudicator decided its first pair."""
    sessions = db()
    version = rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN).id
    ids = [datasets.create_dataset(sessions, name, responses=[
        {"id": f"q{i}", "query": f"Q{i}?", "text": text * i} for i in (1, 2, 3)],
        actor=ADMIN).id for name, text in (("Old", "a "), ("New", "b b "))]
    first = comparisons.create_comparison(
        sessions, rubric_version_id=version, a=Source(ids[0]), b=Source(ids[1]),
        model="openai/judge", settings={"api_base": api_base}, actor=ADMIN)
    comparisons.cancel_comparison(sessions, first.id, actor=ADMIN)
    if decide:
        with sessions() as session:
            pair = session.scalar(select(m.ComparisonPairRow.id).where(
                m.ComparisonPairRow.comparison_id == first.id,
                m.ComparisonPairRow.match_key == "q1"))
        adjudicate_pair(sessions, actor=ADJ, pair_id=pair, criterion="complete", side="B",
                        note="B covers both steps")


def _start(at, api_base: str) -> None:
    at.selectbox(key="compare_a").set_value(1)
    at.selectbox(key="compare_b").set_value(2)
    at.text_input(key="compare_model").input("openai/judge")
    at.text_input(key="compare_api_base").input(api_base)
    at.number_input(key="compare_examples").set_value(2)
    at.run()
    at.button(key="compare_start").click().run()
    assert not at.exception, at.exception


def test_a_calibrated_comparison_says_its_example_pairs_are_left_out(
        fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    _seed(fake_provider.api_base, decide=True)
    at = open_page("compare", reviewer="Ada", timeout=60)

    _start(at, fake_provider.api_base)

    assert "Comparison #2 started: 3 pairs" in texts(at)
    assert wait_until(lambda: comparisons.get_comparison(db(), 2).finished, timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert "the judge was shown 1 decided pair answer(s)" in texts(at)
    assert "1 pair(s) that are examples are left out of these figures" in texts(at)
    metrics = {metric.label.split(" (")[0]: metric.value for metric in at.metric}
    assert metrics["Pairs judged"] == "2 of 3"
    asked = [b["messages"][-1]["content"] for b in fake_provider.bodies]
    assert sum("B covers both steps" in prompt for prompt in asked) == 2 * 2  # q2, q3


def test_without_a_decided_pair_the_reason_is_shown_and_nothing_is_written(
        fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")
    _seed(fake_provider.api_base, decide=False)
    at = open_page("compare", reviewer="Ada", timeout=60)

    _start(at, fake_provider.api_base)

    assert "people decided (agreed or adjudicated) yet" in texts(at)
    assert at.error
    with db()() as session:
        assert session.scalar(select(func.count()).select_from(m.ComparisonRow)) == 1
