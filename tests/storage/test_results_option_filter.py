"""The Results verdict filter on a multi-choice criterion, on SQLite and PostgreSQL: it takes
the criterion's option labels (and CANNOT_ASSESS), compares the stored label — a person's
in place of the judge's, or a panel's decided label — and refuses a MET/UNMET there."""

from __future__ import annotations

import pytest

from storage.errors import InvalidInputError
from storage.services import datasets, panel_results, panels, reviews
from storage.services.grade_records import record_grade
from storage.services.results import ResultsFilter, VerdictFilter, filter_choices, results_page
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_criterion_kinds_reviews import CRITERIA, _judge_report

# (run A, run B) per response: accurate, clarity, tone
SCRIPT = [
    (["MET", "Fair", "formal"], ["MET", "Poor", "formal"]),
    (["MET", "Good", "casual"], ["MET", "Good", "casual"]),
    (["UNMET", "Good", "no text"], ["MET", "Excellent", "no text"]),
    (["MET", "Excellent", "formal"], ["MET", "Excellent", "casual"]),
]


@pytest.fixture
def graded(sessions):
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(len(SCRIPT))], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    a, b = (make_run(sessions, version.id, dataset.id).id for _ in range(2))
    for response, (va, vb) in zip(responses, SCRIPT, strict=True):
        record_grade(sessions, a, response.id, _judge_report(va))
        record_grade(sessions, b, response.id, _judge_report(vb))
    ids = {c.name: c.id for c in version.criteria}
    return version, dataset, responses, (a, b), ids


def _ids(sessions, graded, wanted: VerdictFilter, panel_ids=()):
    version, dataset, responses, run_ids, _criterion_ids = graded
    columns = panel_results.panel_columns(sessions, dataset_id=dataset.id,
                                          rubric_version_id=version.id, panel_ids=panel_ids)
    page = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids, filters=ResultsFilter(verdict=wanted), panels=columns)
    names = {r.id: r.external_id for r in responses}
    return [names[row.response_id] for row in page.rows]


def test_the_filter_offers_the_options_and_matches_the_stored_label(sessions, graded):
    version, _dataset, responses, (a, b), ids = graded
    clarity = next(c for c in version.criteria if c.name == "clarity")
    assert filter_choices(clarity) == ("Poor", "Fair", "Good", "Very good", "Excellent",
                                       "CANNOT_ASSESS")
    accurate = next(c for c in version.criteria if c.name == "accurate")
    assert filter_choices(accurate) == ("MET", "UNMET", "CANNOT_ASSESS")

    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Good", a)) == ["r1", "r2"]
    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Good", b)) == ["r1"]
    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Very good", a)) == []
    # an NA option is found by its label; CANNOT_ASSESS is an abstention naming no option
    assert _ids(sessions, graded, VerdictFilter(ids["tone"], "no text", a)) == ["r2"]
    assert _ids(sessions, graded, VerdictFilter(ids["tone"], "CANNOT_ASSESS", a)) == []
    # binary criteria beside them filter as before
    assert _ids(sessions, graded, VerdictFilter(ids["accurate"], "UNMET", a)) == ["r2"]

    # a person's choice replaces the judge's
    ana = local_actor("ana")
    reviews.set_human_verdict(sessions, response_id=responses[0].id,
                              criterion_id=ids["clarity"], verdict="good", actor=ana)
    reviews.set_human_verdict(sessions, response_id=responses[1].id,
                              criterion_id=ids["clarity"], verdict="Poor", actor=ana)
    reviews.set_human_verdict(sessions, response_id=responses[3].id,
                              criterion_id=ids["tone"], verdict="CANNOT_ASSESS", actor=ana)
    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Good", a)) == ["r0", "r2"]
    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Poor", a)) == ["r1"]
    assert _ids(sessions, graded, VerdictFilter(ids["tone"], "CANNOT_ASSESS", a)) == ["r3"]
    assert _ids(sessions, graded, VerdictFilter(ids["tone"], "formal", a)) == ["r0"]


def test_the_filter_reads_a_panels_decided_label(sessions, graded):
    _version, _dataset, _responses, (a, b), ids = graded
    panel = panels.create_panel(sessions, run_ids=[a, b], rule="majority", actor=ADMIN)
    # two members: an even split goes to the worse rating (r0 Poor, r2 Good)
    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Poor", None, panel.id),
                [panel.id]) == ["r0"]
    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Good", None, panel.id),
                [panel.id]) == ["r1", "r2"]
    assert _ids(sessions, graded, VerdictFilter(ids["clarity"], "Excellent", None, panel.id),
                [panel.id]) == ["r3"]


def test_a_verdict_that_is_not_an_option_is_refused_with_the_options(sessions, graded):
    _version, _dataset, _responses, (a, _b), ids = graded
    with pytest.raises(InvalidInputError, match=(
            "unknown verdict 'MET' for criterion 'clarity'; use Poor, Fair, Good, Very good, "
            "Excellent, CANNOT_ASSESS")):
        _ids(sessions, graded, VerdictFilter(ids["clarity"], "MET", a))
    with pytest.raises(InvalidInputError, match="unknown verdict 'Good' for criterion "
                                                "'accurate'; use MET, UNMET, CANNOT_ASSESS"):
        _ids(sessions, graded, VerdictFilter(ids["accurate"], "Good", a))
