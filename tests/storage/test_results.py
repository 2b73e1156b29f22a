"""The results table, the review queue and one response in detail."""

from __future__ import annotations

import pytest

from grading.types import ScoringSettings, Verdict
from storage.errors import InvalidInputError
from storage.services import datasets, reviews, runs
from storage.services.results import (
    ResultsFilter,
    grade_facts,
    list_result_sets,
    results_page,
    results_stamp,
    reviewed_effective_scores,
)
from storage.services.review_queue import response_detail, review_queue
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, holistic_report, judge_report, make_rubric, make_run

V = Verdict
M, U, CA = V.MET, V.UNMET, V.CANNOT_ASSESS
ALL_MET = [M, M, M, U]  # every positive met, the harmful error absent: 1.0


def _dataset(sessions, count: int = 4):
    rows = [{"id": f"r{i}", "query": f"question {i}", "text": f"answer {i}"}
            for i in range(count)]
    if count > 2:
        rows[2]["text"] = "the needle is here"
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    return dataset, datasets.list_responses(sessions, dataset.id, limit=None)


def _grade(sessions, run, response, verdicts):
    report = judge_report(CRITERIA, verdicts, ScoringSettings(), response.output)
    runs.record_grade(sessions, run.id, response.id, report)


@pytest.fixture
def graded(sessions):
    """Two per-criterion runs over four responses.

    r0: both judges agree (all met). r1: the judges disagree on 'cites'.
    r2: the second judge failed on 'concise'. r3: agree, harmful error present in both.
    """
    version = make_rubric(sessions)
    dataset, responses = _dataset(sessions)
    first = make_run(sessions, version.id, dataset.id)
    second = make_run(sessions, version.id, dataset.id, grader="one_shot")
    script = {
        0: ([M, M, M, U], [M, M, M, U]),
        1: ([M, M, M, U], [M, U, M, U]),
        2: ([M, U, M, U], [M, U, None, U]),
        3: ([M, M, M, M], [M, M, M, M]),
    }
    for index, (a, b) in script.items():
        _grade(sessions, first, responses[index], a)
        _grade(sessions, second, responses[index], b)
    return version, dataset, responses, (first.id, second.id)


def _page(sessions, graded, **kwargs):
    version, dataset, _responses, run_ids = graded
    return results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids, **kwargs)


def _ids(page, responses):
    index = {r.id: r.external_id for r in responses}
    return [index[row.response_id] for row in page.rows]


def test_page_lists_every_response_with_one_score_per_run(sessions, graded):
    page = _page(sessions, graded)
    responses = graded[2]
    assert (page.total, page.dataset_total, len(page.rows)) == (4, 4, 4)
    first = page.rows[0]
    assert first.scores == first.judge_scores == (pytest.approx(1.0), pytest.approx(1.0))
    assert first.graded == (True, True) and first.criteria_count == 4
    assert first.query == "question 0" and first.output == "answer 0"
    assert page.rows[2].scores[1] is None and page.rows[2].errors[1]
    assert (page.failed_total, page.disagree_total, page.reviewed_total) == (1, 1, 0)
    assert _ids(page, responses) == ["r0", "r1", "r2", "r3"]


def test_pagination_slices_the_filtered_sorted_set(sessions, graded):
    page = _page(sessions, graded, offset=1, limit=2)
    assert page.total == 4 and _ids(page, graded[2]) == ["r1", "r2"]
    last = _page(sessions, graded, offset=4, limit=2)
    assert last.rows == () and last.total == 4


def test_filters_find_failures_disagreements_and_text(sessions, graded):
    responses = graded[2]
    assert _ids(_page(sessions, graded, filters=ResultsFilter(failed_only=True)),
                responses) == ["r2"]
    # A criterion the judge failed on has no verdict to disagree with.
    assert _ids(_page(sessions, graded, filters=ResultsFilter(disagree_only=True)),
                responses) == ["r1"]
    assert _ids(_page(sessions, graded, filters=ResultsFilter(search="NEEDLE")),
                responses) == ["r2"]
    assert _ids(_page(sessions, graded, filters=ResultsFilter(search="question 3")),
                responses) == ["r3"]
    assert _page(sessions, graded, filters=ResultsFilter(search="100%")).total == 0


def test_score_range_and_sorting_use_effective_scores(sessions, graded):
    version, _dataset, responses, run_ids = graded
    low = ResultsFilter(max_score=0.6, score_run_id=run_ids[0])
    assert _ids(_page(sessions, graded, filters=low), responses) == ["r3"]
    # A reviewer says the harmful error is absent in r3: its effective score rises to 1.0.
    reviews.set_human_verdict(sessions, response_id=responses[3].id,
                              criterion_id=version.criteria[3].id, verdict="UNMET",
                              reviewer="ana")
    assert _page(sessions, graded, filters=low).total == 0
    page = _page(sessions, graded, filters=ResultsFilter(min_score=0.99, score_run_id=run_ids[0]))
    assert _ids(page, responses) == ["r0", "r1", "r3"]
    row = page.rows[-1]
    assert row.scores[0] == pytest.approx(1.0) and row.judge_scores[0] < 0.6
    assert row.reviewed_count == 1
    ordered = _page(sessions, graded, sort="score", sort_run_id=run_ids[1], descending=True)
    assert _ids(ordered, responses)[-1] == "r2"  # no score: last either way
    ascending = _page(sessions, graded, sort="score", sort_run_id=run_ids[1])
    assert _ids(ascending, responses)[0] == "r1" and _ids(ascending, responses)[-1] == "r2"


def test_reviewed_filter_and_sort(sessions, graded):
    version, _dataset, responses, _runs = graded
    reviews.set_human_verdict(sessions, response_id=responses[1].id,
                              criterion_id=version.criteria[1].id, verdict="MET",
                              reviewer="ana")
    reviewed = _page(sessions, graded, filters=ResultsFilter(reviewed="reviewed"))
    assert _ids(reviewed, responses) == ["r1"] and reviewed.reviewed_total == 1
    assert _ids(_page(sessions, graded, filters=ResultsFilter(reviewed="not_reviewed")),
                responses) == ["r0", "r2", "r3"]
    assert _ids(_page(sessions, graded, sort="reviewed", descending=True),
                responses)[0] == "r1"


def test_spread_sort_puts_the_largest_gap_first(sessions, graded):
    ordered = _page(sessions, graded, sort="spread", descending=True)
    assert _ids(ordered, graded[2])[0] == "r1"


def test_runs_of_another_dataset_are_refused(sessions, graded):
    version, _dataset, _responses, run_ids = graded
    other = datasets.create_dataset(sessions, "Other", responses=[{"text": "x"}], actor=ADMIN)
    with pytest.raises(InvalidInputError, match="another dataset"):
        results_page(sessions, dataset_id=other.id, rubric_version_id=version.id,
                     run_ids=run_ids)


def test_a_holistic_score_is_compared_only_with_holistic_scores(sessions):
    """Issue 9 item 7: a 0-100 holistic score next to a score aggregated from verdicts is not
    a disagreement (it flagged 36 of 50 responses); two holistic judges far apart are."""
    version = make_rubric(sessions)
    dataset, responses = _dataset(sessions, count=2)
    per = make_run(sessions, version.id, dataset.id)
    holistic = make_run(sessions, version.id, dataset.id, grader="rubric_as_judge")
    second = make_run(sessions, version.id, dataset.id, grader="rubric_as_judge")
    for response, llm, other in zip(responses, (95, 20), (90, 60), strict=True):
        _grade(sessions, per, response, ALL_MET)
        for run, value in ((holistic, llm), (second, other)):
            runs.record_grade(sessions, run.id, response.id, holistic_report(
                CRITERIA, value, ScoringSettings(), response.output))

    def flagged(run_ids, **kwargs):
        page = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                            run_ids=run_ids, filters=ResultsFilter(disagree_only=True),
                            **kwargs)
        return [r.response_id for r in page.rows]

    assert flagged([per.id, holistic.id]) == []
    assert flagged([per.id, holistic.id, second.id]) == [responses[1].id]
    assert flagged([holistic.id, second.id], score_gap=0.5) == []
    assert flagged([holistic.id, second.id], score_gap=0.01) == [r.id for r in responses]


def test_review_queue_puts_disagreements_and_failures_first(sessions, graded):
    version, dataset, responses, run_ids = graded
    queue = review_queue(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                         run_ids=run_ids)
    assert [q.external_id for q in queue] == ["r1", "r2", "r0", "r3"]
    assert queue[0].disagree and not queue[0].failed and queue[1].failed
    for criterion in version.criteria:
        reviews.set_human_verdict(sessions, response_id=responses[1].id,
                                  criterion_id=criterion.id, verdict="MET", reviewer="ana")
    queue = review_queue(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                         run_ids=run_ids)
    assert [q.external_id for q in queue] == ["r2", "r0", "r3", "r1"]
    assert queue[-1].fully_reviewed
    open_only = review_queue(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                             run_ids=run_ids, unreviewed_only=True)
    assert [q.external_id for q in open_only] == ["r2", "r0", "r3"]


def test_response_detail_shows_every_run_and_the_human_side(sessions, graded):
    version, _dataset, responses, run_ids = graded
    cites = version.criteria[1].id
    reviews.set_human_verdict(sessions, response_id=responses[1].id, criterion_id=cites,
                              verdict="MET", reviewer="ana", note="footnote")
    reviews.set_human_verdict(sessions, response_id=responses[1].id, criterion_id=cites,
                              verdict="UNMET", reviewer="bo", note="no, a blog")
    detail = response_detail(sessions, responses[1].id, version.id, run_ids)
    assert [r.id for r in detail.runs] == list(run_ids)
    assert detail.disagree_criteria == frozenset({cites})
    assert [g.criteria[1].judge_verdict for g in detail.grades] == [M, U]
    assert all(g.criteria[1].effective_verdict is U for g in detail.grades)
    assert detail.grades[0].score == pytest.approx(12.5 / 17.5)
    assert detail.humans[cites].reviewer == "bo"
    assert [(h.previous_verdict, h.verdict) for h in detail.history] == [(None, M), (M, U)]
    assert detail.human_score.reviewed_count == 1 and detail.human_score.score is None
    assert detail.response.query == "question 1"


def test_response_detail_of_an_ungraded_response_has_empty_slots(sessions):
    version = make_rubric(sessions)
    dataset, responses = _dataset(sessions, count=2)
    run = make_run(sessions, version.id, dataset.id)
    _grade(sessions, run, responses[0], ALL_MET)
    detail = response_detail(sessions, responses[1].id, version.id)
    assert detail.grades == (None,) and detail.disagree_criteria == frozenset()


def test_result_sets_group_runs_by_dataset_and_rubric_version(sessions, graded):
    version, dataset, _responses, run_ids = graded
    [result_set] = list_result_sets(sessions)
    assert (result_set.dataset_id, result_set.rubric_version_id) == (dataset.id, version.id)
    assert result_set.run_ids == run_ids
    assert result_set.label == "Answers × Dosing v1 (2 runs)"


def test_cached_facts_and_reviewed_scores_give_the_same_page(sessions, graded):
    version, dataset, responses, run_ids = graded
    reviews.set_human_verdict(sessions, response_id=responses[3].id,
                              criterion_id=version.criteria[3].id, verdict="UNMET",
                              reviewer="ana")
    where = {"dataset_id": dataset.id, "rubric_version_id": version.id, "run_ids": run_ids}
    facts = grade_facts(sessions, **where)
    assert facts.failed == {responses[2].id} and facts.disagree == {responses[1].id}
    reviewed = reviewed_effective_scores(sessions, **where)
    assert set(reviewed) == {(responses[3].id, run_ids[0]), (responses[3].id, run_ids[1])}
    for kwargs in ({}, {"sort": "score", "descending": True},
                   {"filters": ResultsFilter(min_score=0.9)}):
        assert results_page(sessions, **where, **kwargs, facts=facts,
                            reviewed_scores=reviewed) == results_page(sessions, **where,
                                                                      **kwargs)


def test_the_stamp_changes_with_a_new_grade_or_verdict(sessions, graded):
    version, _dataset, responses, run_ids = graded
    before = results_stamp(sessions, run_ids)
    reviews.set_human_verdict(sessions, response_id=responses[0].id,
                              criterion_id=version.criteria[0].id, verdict="UNMET",
                              reviewer="ana")
    after = results_stamp(sessions, run_ids)
    assert before != after and before[0] == after[0]
