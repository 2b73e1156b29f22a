"""Results filters added for large datasets: metadata columns, per-criterion effective
verdicts, an adjustable score gap and the score distribution (issue 9)."""

from __future__ import annotations

import pytest

from grading.types import ScoringSettings, Verdict
from storage.errors import InvalidInputError
from storage.services import datasets, reviews, runs
from storage.services.results import (
    ResultsFilter,
    VerdictFilter,
    grade_facts,
    metadata_columns,
    results_page,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report, make_rubric, make_run

M, U = Verdict.MET, Verdict.UNMET


@pytest.fixture
def graded(sessions):
    """Four responses with a `model` column (and a number column) kept from the upload;
    two per-criterion runs. 'cites' (criterion 1): run A says MET on r0, r1; run B on r0."""
    version = make_rubric(sessions)
    rows = [{"id": f"r{i}", "query": f"q{i}", "text": f"answer {i}",
             "model": "gpt-x" if i % 2 == 0 else "claude-y", "turns": i}
            for i in range(4)]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    a = make_run(sessions, version.id, dataset.id)
    b = make_run(sessions, version.id, dataset.id, grader="one_shot")
    script = {0: ([M, M, M, U], [M, M, M, U]), 1: ([M, M, M, U], [M, U, M, U]),
              2: ([M, U, M, U], [M, U, M, U]), 3: ([U, U, U, U], [U, U, U, U])}
    for index, (va, vb) in script.items():
        for run, verdicts in ((a, va), (b, vb)):
            runs.record_grade(sessions, run.id, responses[index].id, judge_report(
                CRITERIA, verdicts, ScoringSettings(), responses[index].output))
    return version, dataset, responses, (a.id, b.id)


def _ids(sessions, graded, **kwargs):
    version, dataset, responses, run_ids = graded
    page = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids, **kwargs)
    names = {r.id: r.external_id for r in responses}
    return [names[row.response_id] for row in page.rows]


def test_metadata_columns_are_offered_with_their_values(sessions, graded):
    _version, dataset, _responses, _runs = graded
    columns = metadata_columns(sessions, dataset.id)
    assert columns["model"] == ("claude-y", "gpt-x")
    assert set(columns) == {"model", "turns"} and len(columns["turns"]) == 4
    assert metadata_columns(sessions, dataset.id, max_values=3)["turns"] is None


def test_metadata_filter_runs_in_sql_on_each_backend(sessions, graded):
    assert _ids(sessions, graded, filters=ResultsFilter(metadata=(("model", "gpt-x"),))) == [
        "r0", "r2"]
    _version, dataset, _responses, _runs = graded
    turns = metadata_columns(sessions, dataset.id)["turns"]
    three = next(value for value in turns if value.startswith("3"))
    assert _ids(sessions, graded, filters=ResultsFilter(
        metadata=(("model", "claude-y"), ("turns", three)))) == ["r3"]
    assert _ids(sessions, graded, filters=ResultsFilter(
        metadata=(("model", "nobody"),))) == []


def test_verdict_filter_uses_the_effective_verdict_of_the_chosen_run(sessions, graded):
    version, _dataset, responses, (a, b) = graded
    cites = version.criteria[1].id
    assert _ids(sessions, graded, filters=ResultsFilter(
        verdict=VerdictFilter(cites, "MET", a))) == ["r0", "r1"]
    assert _ids(sessions, graded, filters=ResultsFilter(
        verdict=VerdictFilter(cites, "MET", b))) == ["r0"]
    # A person's verdict replaces the judge's: r1 becomes UNMET, r3 becomes MET.
    for response, verdict in ((responses[1], "UNMET"), (responses[3], "MET")):
        reviews.set_human_verdict(sessions, response_id=response.id, criterion_id=cites,
                                  verdict=verdict, actor=local_actor("ana"))
    assert _ids(sessions, graded, filters=ResultsFilter(
        verdict=VerdictFilter(cites, "MET", a))) == ["r0", "r3"]
    assert _ids(sessions, graded, filters=ResultsFilter(
        verdict=VerdictFilter(cites, "UNMET", a))) == ["r1", "r2"]
    # A reviewer's latest verdict counts, not their first.
    reviews.set_human_verdict(sessions, response_id=responses[3].id, criterion_id=cites,
                              verdict="UNMET", actor=local_actor("ana"))
    assert _ids(sessions, graded, filters=ResultsFilter(
        verdict=VerdictFilter(cites, "MET", a))) == ["r0"]


def test_verdict_filter_refuses_an_unknown_verdict_or_run(sessions, graded):
    version, _dataset, _responses, (a, _b) = graded
    with pytest.raises(InvalidInputError, match="unknown verdict"):
        _ids(sessions, graded, filters=ResultsFilter(
            verdict=VerdictFilter(version.criteria[0].id, "YES", a)))
    with pytest.raises(InvalidInputError, match="not selected"):
        _ids(sessions, graded, filters=ResultsFilter(
            verdict=VerdictFilter(version.criteria[0].id, "MET", 999)))


def test_disagreement_says_whether_verdicts_or_scores_differ(sessions, graded):
    version, dataset, _responses, run_ids = graded
    page = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids)
    r1 = page.rows[1]
    assert (r1.disagree, r1.verdicts_differ) == (True, True)
    gap = abs(r1.scores[0] - r1.scores[1])  # 'cites' is 2/7 of the positive weight
    assert r1.scores_differ and gap == pytest.approx(2 / 7)
    facts = grade_facts(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids, score_gap=0.3)
    wide = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids, facts=facts, score_gap=0.3)
    assert not wide.rows[1].scores_differ and wide.rows[1].verdicts_differ
    # Cached facts made with another gap are not reused.
    narrow = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                          run_ids=run_ids, facts=facts, score_gap=0.2)
    assert narrow.rows[1].scores_differ
    with pytest.raises(InvalidInputError, match="score gap"):
        grade_facts(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                    run_ids=run_ids, score_gap=-1)


def test_score_distribution_counts_the_matching_responses_per_run(sessions, graded):
    version, dataset, _responses, run_ids = graded
    page = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids, limit=1, distribution_bins=10)
    for run in run_ids:
        bins = [b for b in page.distribution if b.run_id == run]
        assert len(bins) == 10 and sum(b.count for b in bins) == 4
        assert (bins[0].low, bins[-1].high) == (0.0, pytest.approx(1.0))
    only = results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                        run_ids=run_ids, distribution_bins=10,
                        filters=ResultsFilter(metadata=(("model", "gpt-x"),)))
    assert sum(b.count for b in only.distribution if b.run_id == run_ids[0]) == 2


def test_verdict_filter_follows_the_consensus_rule_of_several_reviewers(sessions, graded):
    """The effective verdict of a criterion two reviewers disagree on is the judge's (the
    dispute waits for an adjudicator); an adjudication decides it; reviewers who agree decide
    it. Not whichever reviewer's verdict happens to share the highest sequence number."""
    version, _dataset, responses, (a, _b) = graded
    cites = version.criteria[1].id

    def met() -> list[str]:
        return _ids(sessions, graded, filters=ResultsFilter(
            verdict=VerdictFilter(cites, "MET", a)))

    def say(who: str, index: int, verdict: str) -> None:
        reviews.set_human_verdict(sessions, response_id=responses[index].id,
                                  criterion_id=cites, verdict=verdict, actor=local_actor(who))

    assert met() == ["r0", "r1"]  # run A's verdicts
    say("ana", 1, "MET")
    say("bo", 1, "UNMET")  # disputed: run A's MET stands
    say("ana", 2, "MET")
    say("bo", 2, "MET")  # agreed: MET over run A's UNMET
    assert met() == ["r0", "r1", "r2"]
    reviews.adjudicate(sessions, actor=ADMIN, response_id=responses[1].id, criterion_id=cites,
                       verdict="UNMET")
    assert met() == ["r0", "r2"]
    assert _ids(sessions, graded, filters=ResultsFilter(
        verdict=VerdictFilter(cites, "UNMET", a))) == ["r1", "r3"]
