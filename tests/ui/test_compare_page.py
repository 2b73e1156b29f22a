"""AppTest checks of the Compare page: a comparison of two datasets started from the page and
judged by the fake provider over litellm, its results read back; one dataset split by its
model column; a second click; sources with nothing in common; an empty database."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from grading.types import Criterion
from storage import models as m
from storage.services import comparisons, datasets, rubrics
from tests.actors import ADMIN
from tests.fake_provider import fake_provider, fake_provider_server
from tests.fault_provider import wait_until
from tests.ui.pages import db, open_page, texts

__all__ = ["fake_provider", "fake_provider_server"]

CRITERIA = [Criterion(name="complete", requirement="Covers every step", weight=4),
            Criterion(name="rude", requirement="Insults the reader", weight=-2)]


def _open() -> AppTest:
    return open_page("compare", reviewer="Ada", timeout=60)


def _seed(a_rows, b_rows=None) -> None:
    sessions = db()
    rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN)
    for name, rows in (("Old prompt", a_rows), ("New prompt", b_rows)):
        if rows is not None:
            datasets.create_dataset(sessions, name, responses=[
                {"id": r[0], "query": r[1], "text": r[2], **(r[3] if len(r) > 3 else {})}
                for r in rows], actor=ADMIN)


def _comparison_count() -> int:
    with db()() as session:
        return session.scalar(select(func.count()).select_from(m.ComparisonRow))


def _fill_judge(at: AppTest, api_base: str = "http://127.0.0.1:9/v1") -> None:
    at.text_input(key="compare_model").input("openai/judge")
    at.text_input(key="compare_api_base").input(api_base)
    at.run()


def test_an_empty_database_says_what_to_do_and_cannot_start():
    at = _open()
    assert "No rubric yet" in texts(at)
    assert at.button(key="compare_start").disabled


def test_two_uploads_are_compared_and_the_win_rate_and_consistency_are_shown(
        fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    _seed([("q1", "How?", "one"), ("q2", "Why?", "two"), ("q3", "When?", "four words are here"),
           ("q4", "Who?", "lonely")],
          [("q1", "How?", "one more word"), ("q2", "Why?", "two more words"),
           ("q3", "When?", "four")])
    at = _open()
    at.selectbox(key="compare_a").set_value(1)
    at.selectbox(key="compare_b").set_value(2)
    _fill_judge(at, fake_provider.api_base)

    at.button(key="compare_start").click().run()

    assert not at.exception, at.exception
    assert "Comparison #1 started: 3 pairs" in texts(at)
    sessions = db()
    wait_until(lambda: comparisons.get_comparison(sessions, 1).finished, timeout=30)
    assert comparisons.get_comparison(sessions, 1).status == "done"
    at.run()
    assert not at.exception, at.exception
    metrics = {metric.label.split(" (")[0]: metric.value for metric in at.metric}
    assert metrics["B's win rate"] == "67%"
    assert metrics["Position consistency"] == "100%"
    assert metrics["Pairs judged"] == "3 of 3"
    table = at.dataframe[0].value
    assert list(table["criterion"]) == ["complete", "rude", "overall"]
    assert list(table["B wins"]) == [2, 2, 2] and list(table["A wins"]) == [1, 1, 1]
    unmatched = at.dataframe[1].value
    assert list(unmatched["why"]) == ["only in A"] and list(unmatched["A id"]) == ["q4"]
    assert fake_provider.requests == 3 * 2 * 2


def test_one_upload_split_by_model_and_a_second_click_starts_one_comparison(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")  # it stays queued
    _seed([("1", "How?", "short", {"model": "small"}), ("2", "How?", "longer one",
                                                        {"model": "large"}),
           ("3", "Why?", "x", {"model": "small"}), ("4", "Why?", "x y", {"model": "large"})])
    at = _open()
    at.radio(key="compare_mode").set_value("split").run()
    at.selectbox(key="compare_a_value").set_value("small")
    at.selectbox(key="compare_b_value").set_value("large")
    at.radio(key="compare_match").set_value("query")
    _fill_judge(at)

    at.button(key="compare_start").click().run()
    at.button(key="compare_start").click().run()  # again, while the first is queued

    assert not at.exception, at.exception
    assert _comparison_count() == 1
    assert "already running" in texts(at)
    [made] = comparisons.list_comparisons(db())
    assert (made.a_label, made.b_label, made.pair_count) == (
        "Old prompt: model = small", "Old prompt: model = large", 2)


@pytest.mark.parametrize("by", ["id", "query"])
def test_sources_with_nothing_in_common_are_refused_with_the_reason(monkeypatch, by):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")
    _seed([("q1", "How?", "one")], [("z1", "Why?", "two")])
    at = _open()
    at.selectbox(key="compare_a").set_value(1)
    at.selectbox(key="compare_b").set_value(2)
    at.radio(key="compare_match").set_value(by)
    _fill_judge(at)

    at.button(key="compare_start").click().run()

    assert not at.exception, at.exception
    assert f"no {by} in common" in " ".join(e.value for e in at.error)
    assert _comparison_count() == 0


async def _judge_with_one_pair_failing(fake_provider) -> None:
    from storage.jobs.comparison_runner import run_comparison
    from storage.services.comparisons import Source
    from tests.fake_provider import Reply, judge_reply

    fake_provider.default = lambda body: (
        Reply(status=500, error_message="upstream exploded")
        if "two more words" in body["messages"][-1]["content"] else judge_reply(body))
    made = comparisons.create_comparison(
        db(), rubric_version_id=1, a=Source(1), b=Source(2), model="openai/judge",
        settings={"api_base": fake_provider.api_base}, actor=ADMIN)
    await run_comparison(db(), made.id, actor=ADMIN, transport_retries=0,
                         retry_base_delay=0.001, retry_max_delay=0.01)
    fake_provider.default = judge_reply


def test_a_comparison_with_a_failed_pair_lists_it_and_resume_compares_it(
        fake_provider, monkeypatch):
    import asyncio

    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    _seed([("q1", "How?", "one"), ("q2", "Why?", "two"), ("q3", "When?", "four words are here")],
          [("q1", "How?", "one more word"), ("q2", "Why?", "two more words"),
           ("q3", "When?", "four")])
    asyncio.run(_judge_with_one_pair_failing(fake_provider))
    assert comparisons.get_comparison(db(), 1).failed_count == 1
    at = _open()
    assert "1 of 3 pairs could not be compared" in texts(at)
    assert [h.value for h in at.subheader] == ["Not compared"]
    unmatched = at.dataframe[1].value
    assert list(unmatched["why"]) == ["failed"] and list(unmatched["A id"]) == ["q2"]
    assert "upstream exploded" in unmatched["detail"][0]

    at.button(key="compare_resume_1").click().run()

    assert not at.exception, at.exception
    assert "goes on with the pairs not yet compared" in texts(at)
    # The retried pair stops counting as failed when it is asked again, before its answer:
    # wait for the comparison's end, not for the failure to go.
    wait_until(lambda: (c := comparisons.get_comparison(db(), 1)).finished
               and (c.done_count, c.failed_count) == (3, 0), timeout=30)
    at.run()
    assert {m.label.split(" (")[0]: m.value for m in at.metric}["Pairs judged"] == "3 of 3"
    assert [h.value for h in at.subheader] == []  # no "Not compared" list any more
    assert len(at.dataframe) == 1


def test_with_the_apps_worker_on_start_only_queues_and_the_worker_judges_it(
        fake_provider, monkeypatch, caplog):
    """No runner thread of the page's own beside the app's worker: both would try to judge
    the comparison and one would stop on ComparisonBusyError."""
    import logging
    import threading

    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    fake_provider.latency = 0.2  # judging lasts: a page's thread would still be alive
    _seed([("q1", "How?", "one"), ("q2", "Why?", "two")],
          [("q1", "How?", "one more word"), ("q2", "Why?", "two more words")])
    caplog.set_level(logging.INFO, logger="storage.jobs")
    at = _open()
    at.selectbox(key="compare_a").set_value(1)
    at.selectbox(key="compare_b").set_value(2)
    _fill_judge(at, fake_provider.api_base)

    at.button(key="compare_start").click().run()

    assert not at.exception, at.exception
    assert "Comparison #1 started: 2 pairs" in texts(at)
    assert "comparison-1" not in [t.name for t in threading.enumerate()]
    sessions = db()
    wait_until(lambda: comparisons.get_comparison(sessions, 1).finished, timeout=60)
    assert comparisons.get_comparison(sessions, 1).status == "done"
    assert any("judges comparison 1" in r.getMessage() for r in caplog.records)
    assert not any("was not judged" in r.getMessage() for r in caplog.records)
    assert fake_provider.requests == 2 * 2 * 2  # judged once
