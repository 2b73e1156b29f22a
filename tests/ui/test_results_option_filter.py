"""AppTest of the Results page's verdict filter on a multi-choice criterion: the "is" list
offers its option labels, the table keeps the responses whose effective label is the one
picked (a person's in place of the judge's), and switching criteria never keeps a value the
new criterion does not have."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from storage.config import database_url
from storage.engine import open_database
from storage.services import datasets, reviews
from storage.services.grade_records import record_grade
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_criterion_kinds_reviews import CRITERIA, _judge_report
from tests.ui.pages import APP, open_page

CLARITY = ["Fair", "Good", "Good", "Excellent"]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _seed():
    sessions = open_database(database_url())
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(len(CLARITY))], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    run = make_run(sessions, version.id, dataset.id)
    for response, rating in zip(responses, CLARITY, strict=True):
        record_grade(sessions, run.id, response.id, _judge_report(["MET", rating, "formal"]))
    return sessions, {c.name: c.id for c in version.criteria}, responses


def _ids(at) -> list[str]:
    """The table's response IDs; no table when no response matches."""
    return list(at.dataframe[0].value["ID"]) if at.dataframe else []


def test_the_verdict_filter_offers_a_ratings_labels_and_filters_on_them():
    sessions, ids, responses = _seed()
    at = open_page("results")
    at.selectbox(key="results_verdict_criterion").set_value(ids["clarity"]).run()
    assert not at.exception
    value = at.selectbox(key="results_verdict_value")
    assert value.options == ["Poor", "Fair", "Good", "Very good", "Excellent",
                             "CANNOT ASSESS"]
    assert value.value == "Poor"  # MET is not an option of a rating: the first one is picked
    assert _ids(at) == []
    at.selectbox(key="results_verdict_value").set_value("Good").run()
    assert not at.exception
    assert _ids(at) == ["r1", "r2"]

    # another reviewer's label counts first (it shows within the stamp's 2 s)
    reviews.set_human_verdict(sessions, response_id=responses[0].id,
                              criterion_id=ids["clarity"], verdict="Good",
                              actor=local_actor("ana"))
    time.sleep(2.1)
    at.run()
    assert _ids(at) == ["r0", "r1", "r2"]

    # back to a binary criterion: the label is not kept, MET / UNMET are offered again
    at.selectbox(key="results_verdict_criterion").set_value(ids["accurate"]).run()
    assert not at.exception
    value = at.selectbox(key="results_verdict_value")
    assert value.options == ["MET", "UNMET", "CANNOT ASSESS"]
    assert value.value == "MET"
    assert _ids(at) == ["r0", "r1", "r2", "r3"]


def test_a_link_with_an_option_filter_shows_it_again_and_a_wrong_label_is_not_kept():
    _sessions, ids, _responses = _seed()
    at = open_page("results")
    at.selectbox(key="results_verdict_criterion").set_value(ids["clarity"]).run()
    at.selectbox(key="results_verdict_value").set_value("Very good").run()
    at.selectbox(key="results_verdict_value").set_value("Good").run()
    params = {key: at.query_params[key] for key in at.query_params}
    assert params["verdict"] in ("Good", ["Good"])

    def link(verdict: str) -> AppTest:
        again = AppTest.from_file(APP, default_timeout=30)
        for key, value in params.items():
            again.query_params[key] = value[0] if isinstance(value, list) else value
        again.query_params["verdict"] = verdict
        again.switch_page("app_pages/results.py").run()
        assert not again.exception, again.exception
        return again

    again = link("Good")
    assert again.selectbox(key="results_verdict_value").value == "Good"
    assert _ids(again) == ["r1", "r2"]
    # a label the criterion does not have (edited link, or an option renamed in a new
    # version): the first option is shown, never an error nor an empty filter on nothing
    again = link("Superb")
    assert again.selectbox(key="results_verdict_value").value == "Poor"
    assert _ids(again) == []
