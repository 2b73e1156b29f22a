"""AppTest checks of comparing two text columns of one upload on the Compare page: each
column becomes a dataset of its own and the two are compared row by row; a second start
makes no copies; a row without a text in one column is refused with its id, and nothing is
written."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from grading.types import Criterion
from storage import models as m
from storage.services import comparisons, datasets, rubrics
from tests.actors import ADMIN
from tests.ui.pages import db, open_page, texts

CRITERIA = [Criterion(name="complete", requirement="Covers every step", weight=4)]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")  # it stays queued


def _seed(rows) -> None:
    rubrics.create_rubric(db(), "Steps", CRITERIA, actor=ADMIN)
    datasets.create_dataset(db(), "Side by side", actor=ADMIN, responses=[
        {"id": i, "query": q, "text": before, "after": after, "team": "x"}
        for i, q, before, after in rows])


def _count(table) -> int:
    with db()() as session:
        return session.scalar(select(func.count()).select_from(table))


def _start() -> AppTest:
    at = open_page("compare", reviewer="Ada", timeout=60)
    at.radio(key="compare_mode").set_value("columns").run()
    assert at.selectbox(key="compare_a_column").options == ["response text", "after", "team"]
    at.selectbox(key="compare_b_column").set_value("after")
    at.text_input(key="compare_model").input("openai/judge")
    at.text_input(key="compare_api_base").input("http://127.0.0.1:9/v1")
    at.run()
    at.button(key="compare_start").click().run()
    assert not at.exception, at.exception
    return at


def test_two_columns_of_one_upload_are_compared_row_by_row():
    _seed([("r1", "How?", "short", "a longer answer"), ("r2", "Why?", "same", "same"),
           ("r3", "When?", "now", "right now")])

    at = _start()

    assert "Comparison #1 started: 2 pairs" in texts(at)
    [made] = comparisons.list_comparisons(db())
    assert (made.a_label, made.b_label, made.match_by) == (
        "Side by side · response text", "Side by side · after", "id")
    assert made.identical_count == 1  # r2: the same text in both columns
    with db()() as session:
        after = session.scalars(select(m.ResponseRow).join(m.DatasetRow).where(
            m.DatasetRow.name == "Side by side · after").order_by(m.ResponseRow.id)).all()
    assert [(r.external_id, r.query, r.output, r.meta) for r in after] == [
        ("r1", "How?", "a longer answer", {"team": "x"}), ("r2", "Why?", "same", {"team": "x"}),
        ("r3", "When?", "right now", {"team": "x"})]

    at.button(key="compare_start").click().run()  # again, while it is queued
    assert "already running" in texts(at)
    assert _count(m.ComparisonRow) == 1 and _count(m.DatasetRow) == 3  # no copies


def test_a_row_without_a_text_in_one_column_is_refused_and_nothing_is_written():
    _seed([("r1", "How?", "short", "a longer answer"), ("r2", "Why?", "two", " ")])

    at = _start()

    assert "Side by side, response r2: no text in the column 'after'" in texts(at)
    assert _count(m.ComparisonRow) == 0 and _count(m.DatasetRow) == 1
