"""AppTest of a judge panel over ratings on the Results and Agreement pages: the panel's
column is scored over the decided labels, its dialog shows the label the panel chose and
each member's, and the Agreement page reads the panel's labels and its members' alpha."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from grading.rubric import Rubric
from storage.config import database_url
from storage.engine import open_database
from storage.services import datasets, panels
from storage.services.grade_records import record_grade
from tests.actors import ADMIN
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_criterion_kinds_reviews import CRITERIA, _judge_report
from tests.ui.pages import APP, agreement_tab, open_page

# (judge A, judge B, judge C) per response: accurate, clarity, tone
SCRIPT = [
    (["MET", "Fair", "formal"], ["MET", "Good", "casual"], ["UNMET", "Excellent", "casual"]),
    (["MET", "Poor", "formal"], ["MET", "Poor", "formal"], ["MET", "Fair", "formal"]),
]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _seed():
    sessions = open_database(database_url())
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(len(SCRIPT))], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(3)]
    for response, per_judge in zip(responses, SCRIPT, strict=True):
        for run_id, choices in zip(judges, per_judge, strict=True):
            record_grade(sessions, run_id, response.id, _judge_report(choices))
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    return panel, responses, judges


def test_results_shows_the_panels_label_its_members_and_the_score_over_labels():
    panel, responses, _judges = _seed()
    at = open_page("results")
    at.multiselect(key="results_panel_ids").set_value([panel.id]).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    rubric = Rubric(CRITERIA)
    assert list(table[f"P{panel.id} majority"]) == pytest.approx([
        rubric.compute_score(["MET", "Good", "casual"]),
        rubric.compute_score(["MET", "Poor", "formal"])])

    at.session_state["results_open_response"] = responses[0].id
    at.session_state["results_dialog_pending"] = True
    at.run()
    assert not at.exception, at.exception
    frame = next(f.value for f in at.dataframe if "How" in f.value.columns)
    clarity = frame[frame["Criterion"] == "clarity"].iloc[0]
    assert (clarity["Panel"], clarity["Effective"]) == ("Good", "Good")
    assert clarity["How"].startswith("median (")
    members = [c for c in frame.columns if c.startswith("#")]
    assert [clarity[c] for c in members] == ["Fair", "Good", "Excellent"]
    assert frame[frame["Criterion"] == "accurate"].iloc[0]["Panel"] == "MET"


def test_agreement_reads_the_panel_over_ratings_and_its_members_alpha():
    _panel, _responses, _judges = _seed()
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = "Ada"
    at.run()
    at.switch_page("app_pages/agreement.py")
    agreement_tab(at, "Judges and cost")
    members = next(f.value for f in at.dataframe if "Flag" in f.value.columns)
    assert set(members["Criterion"]) == {"accurate", "clarity", "tone"}
    clarity = members[members["Criterion"] == "clarity"].iloc[0]
    # ordinal alpha on the ratings (ranks 0-4), not on the MET each of them is stored under
    rank = {"Poor": 0, "Fair": 1, "Good": 2, "Very good": 3, "Excellent": 4}
    expected = krippendorff.alpha(reliability_data=np.array(
        [[rank[per_judge[j][1]] for per_judge in SCRIPT] for j in range(3)], dtype=float),
        level_of_measurement="ordinal", value_domain=list(range(5)))
    assert (clarity["α"], clarity["Responses"]) == (f"{expected:.2f}", 2)
