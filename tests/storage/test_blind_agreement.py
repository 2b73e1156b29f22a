"""Blind review on the Agreement page's data: a reviewer who has not answered a criterion
sees no other reviewer's verdict or note on it in the disagreement list, no human score of
a response they have not answered in full, and figures computed without them — on both
databases. Adjudicators see everything."""

from __future__ import annotations

import pytest

from grading.types import Verdict
from storage.services import agreement, agreement_blind, blindness, human_baseline, reviews, runs
from storage.services.reviewers import Actor, Role
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run
from tests.storage.judges import ScriptedJudge, grade

V = Verdict
ANA = Actor(key="ana@example.org", name="Ana", roles=frozenset({Role.REVIEWER}))
BO = Actor(key="bo@example.org", name="Bo", roles=frozenset({Role.REVIEWER}))
EVE = Actor(key="eve@example.org", name="Eve", roles=frozenset({Role.ADJUDICATOR}))
SECRET = "ana's secret reasoning"
JUDGED = [V.MET, V.UNMET, V.MET, V.UNMET]
ANSWERS = ["MET", "MET", "MET", "UNMET"]  # Ana differs from the judge on 'cites' only


@pytest.fixture
def scene(sessions):
    """One graded response; Ana answered every criterion, with a note on 'cites'."""
    version = make_rubric(sessions)
    dataset, [response, *_] = make_dataset(sessions, count=2)
    run = make_run(sessions, version.id, dataset.id)
    judge = ScriptedJudge(CRITERIA, {"r0": JUDGED, "r1": JUDGED})
    runs.record_grade(sessions, run.id, response.id,
                      grade("per_criterion", run.settings, CRITERIA, "[r0] answer", judge))
    for criterion, verdict in zip(version.criteria, ANSWERS, strict=True):
        reviews.set_human_verdict(sessions, actor=ANA, response_id=response.id,
                                  criterion_id=criterion.id, verdict=verdict,
                                  note=SECRET if criterion.name == "cites" else "")
    return version, dataset, response, run


def _report(sessions, scene, actor):
    version, dataset, _response, _run = scene
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    return agreement.build_report(agreement_blind.as_seen(data, blindness.sight_of(actor)))


def _listed(report, run, criterion_id=None):
    return agreement.disagreements(report.data, [agreement.HUMAN, f"run:{run.id}"],
                                   criterion_id)


def test_disagreement_list_hides_the_other_reviewers_verdict_and_note(sessions, scene):
    version, _d, response, run = scene
    cites = version.criteria[1]
    assert _listed(_report(sessions, scene, BO), run) == []
    [seen] = _listed(_report(sessions, scene, EVE), run)
    assert (seen.criterion_id, seen.reasons[agreement.HUMAN]) == (cites.id, SECRET)
    reviews.set_human_verdict(sessions, actor=BO, response_id=response.id,
                              criterion_id=cites.id, verdict="UNMET", note="mine")
    # Bo answered 'cites': Ana's MET and Bo's UNMET dispute it, so no human verdict
    # applies there yet and nothing is listed; Eve settles it for Ana.
    assert _listed(_report(sessions, scene, BO), run) == []
    reviews.adjudicate(sessions, actor=EVE, response_id=response.id,
                       criterion_id=cites.id, verdict="MET", note="settled")
    [after] = _listed(_report(sessions, scene, BO), run, cites.id)
    assert after.verdicts[agreement.HUMAN] == V.MET


def test_blind_reviewer_sees_no_human_score_and_no_figures_from_others(sessions, scene):
    blind = _report(sessions, scene, BO)
    assert agreement.HUMAN not in [s.key for s in blind.data.sources]
    assert blind.score_points == () and blind.data.reviewed_responses == 0
    assert all(j.verdicts_vs_human is None for j in blind.judges)
    assert human_baseline.build_baseline(blind.data).reviewers == ()
    full = _report(sessions, scene, EVE)
    assert len(full.score_points) == 1 and full.data.reviewed_responses == 1
    assert [r.key for r in human_baseline.build_baseline(full.data).reviewers] == [ANA.key]


def test_a_reviewer_who_answered_every_criterion_sees_the_same_figures(sessions, scene):
    version, _d, response, run = scene
    for criterion, verdict in zip(version.criteria, ANSWERS, strict=True):
        reviews.set_human_verdict(sessions, actor=BO, response_id=response.id,
                                  criterion_id=criterion.id, verdict=verdict, note="")
    blind, full = _report(sessions, scene, BO), _report(sessions, scene, EVE)
    assert blind.score_points == full.score_points and len(blind.score_points) == 1
    assert _listed(blind, run) == _listed(full, run) != []


def test_nobody_signed_in_sees_no_peoples_verdicts(sessions, scene):
    version, dataset, _response, run = scene
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    report = agreement.build_report(agreement_blind.as_seen(data, blindness.NOBODY))
    assert _listed(report, run) == [] and report.data.reviewer_verdicts == {}
