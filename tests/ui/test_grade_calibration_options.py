"""The Grade page's calibration option on a rubric with rated criteria (issue 34): counts per
option, and a k too large names the criterion and each option's count; nothing launches."""

from __future__ import annotations

import pytest

from storage.services import reviews
from tests.actors import ADMIN
from tests.kinds import MIXED
from tests.storage.helpers import make_dataset, make_rubric
from tests.ui.pages import db, frame_with, texts
from tests.ui.test_grade_calibration import _calibrating, _run_count

ANSWERS = [("MET", "Poor", "formal"), ("UNMET", "Good", "casual"), ("MET", "Good", "no text")]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def test_rated_criteria_are_counted_per_option_and_a_large_k_names_them():
    sessions = db()
    version = make_rubric(sessions, "Mixed", MIXED)
    _dataset, responses = make_dataset(sessions, count=4)
    for response, answers in zip(responses, ANSWERS, strict=False):
        for criterion, answer in zip(version.criteria, answers, strict=True):
            reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                      criterion_id=criterion.id, verdict=answer)
    at = _calibrating(1)
    counts = frame_with(at, "Per option")
    rows = {row["Criterion"]: row for row in counts.to_dict("records")}
    assert (rows["accurate"]["Reviewed"], rows["accurate"]["MET"]) == (3, 2)
    assert rows["clarity"]["Per option"] == (
        "1 'Poor', 0 'Fair', 2 'Good', 0 'Very good', 0 'Excellent'")
    # the NA option "no text" is never an example
    assert rows["tone"]["Per option"] == "1 'formal', 1 'casual'"
    assert not at.button(key="grade_launch").disabled
    at.number_input(key="grade_calibration_k").set_value(3).run()
    shown = texts(at)
    assert "criterion 3 ('tone'): 2 (1 'formal', 1 'casual')" in shown
    assert at.button(key="grade_launch").disabled
    assert _run_count(sessions) == 0
