"""Blind review in the Results table: a reviewer who has not answered a criterion must not
learn another reviewer's verdict on it from the numbers either — the runs' effective scores,
the panels' effective scores, the verdict filter, the score sort and range, the disputed
flag — on both databases. After answering, they see it like everyone else."""

from __future__ import annotations

import pytest

from grading.types import Verdict
from storage.services import blindness, panel_results, panels, results, reviews, runs
from storage.services.reviewers import Actor, Role
from tests.storage.helpers import ADMIN, CRITERIA, make_dataset, make_rubric, make_run
from tests.storage.judges import ScriptedJudge, grade

V = Verdict
ANA = Actor(key="ana@example.org", name="Ana", roles=frozenset({Role.REVIEWER}))
BO = Actor(key="bo@example.org", name="Bo", roles=frozenset({Role.REVIEWER}))
CY = Actor(key="cy@example.org", name="Cy", roles=frozenset({Role.REVIEWER}))
EVE = Actor(key="eve@example.org", name="Eve", roles=frozenset({Role.ADJUDICATOR}))
JUDGED = [V.MET, V.UNMET, V.MET, V.UNMET]  # 'cites' UNMET by both judges


@pytest.fixture
def table(sessions):
    """Two runs judging two responses alike; Ana answered 'cites' MET on the first."""
    version = make_rubric(sessions)
    dataset, [first, second] = make_dataset(sessions, count=2)
    made = [make_run(sessions, version.id, dataset.id) for _ in range(2)]
    judge = ScriptedJudge(CRITERIA, {"r0": JUDGED, "r1": JUDGED})
    for run in made:
        for response in (first, second):
            report = grade("per_criterion", run.settings, CRITERIA,
                           f"[{response.external_id}] answer", judge)
            runs.record_grade(sessions, run.id, response.id, report)
    cites = version.criteria[1]
    reviews.set_human_verdict(sessions, actor=ANA, response_id=first.id,
                              criterion_id=cites.id, verdict="MET", note="a source is cited")
    return version, dataset, first, [r.id for r in made], cites


def _page(sessions, table, actor, **kwargs):
    version, dataset, _first, run_ids, _cites = table
    return results.results_page(sessions, dataset_id=dataset.id,
                                rubric_version_id=version.id, run_ids=run_ids,
                                sight=blindness.sight_of(actor), **kwargs)


def _first_row(page, first):
    return next(r for r in page.rows if r.response_id == first.id)


def test_effective_scores_do_not_move_before_the_reviewer_answers(sessions, table):
    _v, _d, first, _runs, cites = table
    blind = _first_row(_page(sessions, table, BO), first)
    assert blind.scores == blind.judge_scores  # Ana's MET is not in Bo's numbers
    seen = _first_row(_page(sessions, table, EVE), first)
    assert all(s > j for s, j in zip(seen.scores, seen.judge_scores, strict=True))
    reviews.set_human_verdict(sessions, actor=BO, response_id=first.id,
                              criterion_id=cites.id, verdict="MET", note="mine")
    answered = _first_row(_page(sessions, table, BO), first)
    assert answered.scores == seen.scores


def test_cached_reviewed_scores_are_read_with_the_viewers_eyes(sessions, table):
    version, dataset, first, run_ids, _cites = table
    for actor, moved in ((BO, False), (EVE, True)):
        sight = blindness.sight_of(actor)
        reviewed = results.reviewed_effective_scores(
            sessions, dataset_id=dataset.id, rubric_version_id=version.id, run_ids=run_ids,
            sight=sight)
        page = results.results_page(
            sessions, dataset_id=dataset.id, rubric_version_id=version.id, run_ids=run_ids,
            reviewed_scores=reviewed, sight=sight, sort="score", descending=True)
        row = _first_row(page, first)
        assert (row.scores != row.judge_scores) is moved


def test_score_sort_and_range_do_not_single_out_the_reviewed_response(sessions, table):
    _v, _d, first, _runs, _cites = table
    blind = _first_row(_page(sessions, table, BO), first)
    top = blind.judge_scores[0]
    # Ana's MET lifts the first response above the judges' score: a range just above it
    # must not find it for Bo.
    assert _page(sessions, table, BO, filters=results.ResultsFilter(
        min_score=top + 1e-6)).total == 0
    assert _page(sessions, table, EVE, filters=results.ResultsFilter(
        min_score=top + 1e-6)).total == 1


def test_verdict_filter_uses_the_judges_verdict_where_the_human_one_is_hidden(
        sessions, table):
    _v, _d, first, run_ids, cites = table

    def met(actor):
        wanted = results.VerdictFilter(criterion_id=cites.id, verdict="MET",
                                       run_id=run_ids[0])
        page = _page(sessions, table, actor, filters=results.ResultsFilter(verdict=wanted))
        return [r.response_id for r in page.rows]

    assert met(BO) == []
    assert met(EVE) == [first.id]
    assert met(ANA) == [first.id]


def test_disputed_criteria_stay_hidden_until_answered(sessions, table):
    _v, _d, first, _runs, cites = table
    reviews.set_human_verdict(sessions, actor=CY, response_id=first.id,
                              criterion_id=cites.id, verdict="UNMET", note="no source")
    assert _first_row(_page(sessions, table, EVE), first).disputed == ("cites",)
    assert _first_row(_page(sessions, table, BO), first).disputed == ()
    reviews.set_human_verdict(sessions, actor=BO, response_id=first.id,
                              criterion_id=cites.id, verdict="UNMET", note="mine")
    assert _first_row(_page(sessions, table, BO), first).disputed == ("cites",)


def test_panel_scores_do_not_move_before_the_reviewer_answers(sessions, table):
    version, dataset, first, run_ids, _cites = table
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)

    def panel_score(actor):
        sight = blindness.sight_of(actor)
        [column] = panel_results.panel_columns(
            sessions, dataset_id=dataset.id, rubric_version_id=version.id,
            panel_ids=[panel.id], sight=sight)
        [found] = panel_results.panel_results(sessions, panel.id, [first.id], sight=sight)
        assert found.effective.score == column.scores[first.id][0]
        page = _page(sessions, table, actor, panels=[column])
        assert _first_row(page, first).panel_scores == (column.scores[first.id][0],)
        return column.scores[first.id][0], found.effective.judge_score

    blind, judged = panel_score(BO)
    assert blind == judged
    seen, judged = panel_score(EVE)
    assert seen > judged
