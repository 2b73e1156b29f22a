"""Grading runs and grades: settings, status, grades written one at a time, resume, totals."""

from __future__ import annotations

import pytest

from grading.errors import ConfigurationError
from grading.types import CriterionReport, EvaluationReport, LengthPenalty, Verdict
from storage.errors import GradeExistsError, InvalidStateError, NotFoundError
from storage.run_settings import RunSettings
from storage.services import reviews, runs
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run
from tests.storage.judges import ScriptedJudge, grade

V = Verdict


def test_run_round_trip_with_every_setting(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=4)
    settings = RunSettings(
        normalize=False, cannot_assess="partial", partial_credit=0.25,
        length_penalty=LengthPenalty(free_budget=10, max_cap=50, penalty_at_cap=2.0,
                                     penalty_type="OUTPUT_ONLY"),
        num_retries=4, allow_cannot_assess=True,
        fallback_verdicts={"positive": "UNMET", "negative": "MET"},
        system_prompt="Be strict.", api_base="http://127.0.0.1:8000/v1",
        extra={"temperature": 0.0, "max_tokens": 400},
    )
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="one_shot",
        model="openai/judge", settings=settings, name="strict judge",
        response_ids=[responses[3].id, responses[1].id], actor=ADMIN,
    )
    assert runs.get_run(sessions, run.id) == run
    assert run.settings == settings and run.settings.scoring().cannot_assess == "partial"
    assert (run.status, run.grader, run.model, run.name) == (
        "queued", "one_shot", "openai/judge", "strict judge")
    assert run.response_count == 2 and run.created_at.tzinfo is not None
    assert runs.pending_response_ids(sessions, run.id) == sorted(
        [responses[1].id, responses[3].id])
    assert runs.list_runs(sessions, dataset_id=dataset.id) == [run]
    assert runs.list_runs(sessions, statuses=["done"]) == []


@pytest.mark.parametrize("settings", [
    {"api_key": "sk-123"},
    {"extra": {"OPENAI_API_KEY": "sk-123"}},
    {"extra": {"headers": {"Authorization": "Bearer x"}}},
])
def test_run_settings_never_hold_credentials(sessions, settings):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    with pytest.raises(ConfigurationError, match="credentials"):
        make_run(sessions, version.id, dataset.id, **settings)
    assert runs.list_runs(sessions) == []


def test_unknown_grader_strategy_or_selection_is_refused(sessions):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    with pytest.raises(ConfigurationError, match="unknown grader"):
        make_run(sessions, version.id, dataset.id, grader="vibes")
    with pytest.raises(ConfigurationError, match="cannot_assess"):
        make_run(sessions, version.id, dataset.id, cannot_assess="ignore")
    _other, [foreign, *_] = make_dataset(sessions, "Other")
    with pytest.raises(NotFoundError, match="not in dataset"):
        runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                        grader="per_criterion", model="m", response_ids=[foreign.id], actor=ADMIN)
    assert runs.list_runs(sessions) == []


def test_grades_are_stored_as_they_complete_and_resume_skips_them(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=3)
    run = make_run(sessions, version.id, dataset.id, allow_cannot_assess=True)
    runs.start_run(sessions, run.id, worker="w1")
    judge = ScriptedJudge(CRITERIA, {"r0": [V.MET, V.UNMET, V.CANNOT_ASSESS, V.UNMET]})
    report = grade("per_criterion", run.settings, CRITERIA, "[r0] answer", judge)
    stored = runs.record_grade(sessions, run.id, responses[0].id, report, latency_s=1.5)

    assert (stored.score, stored.raw_score, stored.llm_raw_score) == (
        report.score, report.raw_score, report.llm_raw_score)
    assert (stored.total_tokens, stored.cost, stored.latency_s) == (240, 0.004, 1.5)
    assert [(c.verdict, c.reason) for c in stored.criteria] == [
        (r.verdict, r.reason) for r in report.report]
    assert [c.criterion_id for c in stored.criteria] == [c.id for c in version.criteria]
    assert runs.get_grade(sessions, stored.id) == stored
    assert runs.list_grades(sessions, run.id) == [stored]
    # a restarted worker grades only what is missing
    assert runs.pending_response_ids(sessions, run.id) == [r.id for r in responses[1:]]
    progress = runs.get_run(sessions, run.id)
    assert (progress.status, progress.done_count, progress.failed_count) == ("running", 1, 0)
    assert (progress.total_tokens, progress.cost) == (240, pytest.approx(0.004))
    with pytest.raises(GradeExistsError):
        runs.record_grade(sessions, run.id, responses[0].id, report)
    assert runs.get_run(sessions, run.id).done_count == 1


def test_failed_grades_and_unknown_costs_are_counted_not_invented(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=2)
    run = make_run(sessions, version.id, dataset.id)
    failed = EvaluationReport(score=None, error="provider timed out after 3 attempts")
    stored = runs.record_grade(sessions, run.id, responses[0].id, failed)
    assert (stored.score, stored.error, stored.cost, stored.total_tokens) == (
        None, "provider timed out after 3 attempts", None, None)
    partial = EvaluationReport(score=None, error="judge failed on 'cites'", report=[
        CriterionReport(**c.model_dump(), verdict=None if i == 1 else V.MET,
                        error="no answer" if i == 1 else None)
        for i, c in enumerate(CRITERIA)])
    stored = runs.record_grade(sessions, run.id, responses[1].id, partial)
    assert stored.criteria[1].verdict is None and stored.criteria[1].error == "no answer"
    progress = runs.get_run(sessions, run.id)
    assert (progress.done_count, progress.failed_count, progress.unknown_cost_count) == (0, 2, 2)
    assert progress.cost == 0


def test_a_report_for_another_rubric_is_refused(sessions):
    version = make_rubric(sessions)
    dataset, [response, *_] = make_dataset(sessions)
    run = make_run(sessions, version.id, dataset.id)
    wrong = EvaluationReport(score=1.0, report=[
        CriterionReport(requirement="Something else", weight=1, verdict=V.MET)])
    with pytest.raises(ValueError, match="has 1 criteria"):
        runs.record_grade(sessions, run.id, response.id, wrong)
    assert runs.list_grades(sessions, run.id) == []
    _other, [outsider, *_] = make_dataset(sessions, "Other")
    with pytest.raises(NotFoundError, match="not part of run"):
        runs.record_grade(sessions, run.id, outsider.id, EvaluationReport(score=1.0))


def test_a_batch_of_grades_is_stored_whole_with_its_totals(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=4)
    run = make_run(sessions, version.id, dataset.id, allow_cannot_assess=True)
    judge = ScriptedJudge(CRITERIA, {"r0": [V.MET, V.UNMET, V.CANNOT_ASSESS, V.UNMET],
                                     "r1": [V.UNMET, V.MET, V.MET, V.MET]})
    reports = [grade("per_criterion", run.settings, CRITERIA, f"[r{i}] answer", judge)
               for i in range(2)]
    failed = EvaluationReport(score=None, error="provider timed out after 3 attempts")
    batch = [runs.NewGrade(responses[0].id, reports[0], 1.5),
             runs.NewGrade(responses[2].id, failed, 0.5, transient=True),
             runs.NewGrade(responses[1].id, reports[1], 2.5)]

    stored = runs.record_grades(sessions, run.id, batch)

    assert [s.response_id for s in stored] == [responses[i].id for i in (0, 2, 1)]
    assert [s.latency_s for s in stored] == [1.5, 0.5, 2.5]
    assert [[c.verdict for c in s.criteria] for s in stored] == [
        [r.verdict for r in reports[0].report], [], [r.verdict for r in reports[1].report]]
    assert runs.list_grades(sessions, run.id) == sorted(stored, key=lambda g: g.response_id)
    progress = runs.get_run(sessions, run.id)
    assert (progress.done_count, progress.failed_count, progress.unknown_cost_count) == (2, 1, 1)
    assert (progress.total_tokens, progress.cost) == (480, pytest.approx(0.008))
    assert runs.pending_response_ids(sessions, run.id) == [responses[3].id]


def test_a_batch_with_one_bad_grade_stores_none_of_them(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=3)
    run = make_run(sessions, version.id, dataset.id)
    ok = EvaluationReport(score=None, error="no answer")
    runs.record_grade(sessions, run.id, responses[1].id, ok)
    _other, [outsider, *_] = make_dataset(sessions, "Other")

    with pytest.raises(GradeExistsError, match=str(responses[1].id)):
        runs.record_grades(sessions, run.id, [runs.NewGrade(responses[0].id, ok),
                                              runs.NewGrade(responses[1].id, ok)])
    with pytest.raises(GradeExistsError):  # twice in one batch
        runs.record_grades(sessions, run.id, [runs.NewGrade(responses[0].id, ok),
                                              runs.NewGrade(responses[0].id, ok)])
    with pytest.raises(NotFoundError, match="not part of run"):
        runs.record_grades(sessions, run.id, [runs.NewGrade(responses[2].id, ok),
                                              runs.NewGrade(outsider.id, ok)])

    assert [g.response_id for g in runs.list_grades(sessions, run.id)] == [responses[1].id]
    assert runs.get_run(sessions, run.id).failed_count == 1


def test_status_changes_follow_the_run_lifecycle(sessions):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    run = make_run(sessions, version.id, dataset.id)
    with pytest.raises(InvalidStateError, match="queued"):
        runs.finish_run(sessions, run.id)
    started = runs.start_run(sessions, run.id, worker="host:1")
    assert started.status == "running" and started.started_at is not None
    assert started.claimed_by == "host:1"
    assert runs.start_run(sessions, run.id).started_at == started.started_at  # resume
    done = runs.finish_run(sessions, run.id)
    assert done.status == "done" and done.finished_at >= done.started_at
    with pytest.raises(InvalidStateError, match="done"):
        runs.cancel_run(sessions, run.id, actor=ADMIN)

    second = make_run(sessions, version.id, dataset.id)
    assert runs.cancel_run(sessions, second.id, actor=ADMIN).status == "cancelled"
    requeued = runs.requeue_run(sessions, second.id, actor=ADMIN)
    assert (requeued.status, requeued.finished_at) == ("queued", None)
    failed = runs.fail_run(sessions, second.id, "OPENAI_API_KEY is not set")
    assert (failed.status, failed.error) == ("failed", "OPENAI_API_KEY is not set")


def test_a_holistic_grade_keeps_the_judges_explanation(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=1)
    run = make_run(sessions, version.id, dataset.id, grader="rubric_as_judge")
    report = EvaluationReport(score=0.85, raw_score=12.75, llm_raw_score=85,
                              reason="Covers the dose but not the interaction.")
    stored = runs.record_grade(sessions, run.id, responses[0].id, report)

    assert stored.reason == "Covers the dose but not the interaction."
    assert stored.criteria == ()
    assert runs.get_grade(sessions, stored.id).reason == stored.reason
    assert runs.list_grades(sessions, run.id)[0].reason == stored.reason
    assert reviews.effective_grade(sessions, stored.id).judge_reason == stored.reason
    [effective] = reviews.effective_grades_for_run(sessions, run.id)
    assert effective.judge_reason == stored.reason


def _launch(sessions, version, dataset, **overrides):
    arguments = {"rubric_version_id": version.id, "dataset_id": dataset.id,
                 "grader": "per_criterion", "model": "openai/judge",
                 "settings": {"api_base": "http://127.0.0.1:9/v1"}, "name": "first"}
    return runs.launch_run(sessions, actor=ADMIN, **{**arguments, **overrides})


def test_launching_the_same_run_again_returns_the_active_one(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=3)
    first = _launch(sessions, version, dataset, response_ids=[r.id for r in responses[:2]])
    again = _launch(sessions, version, dataset, name="a second click",
                    response_ids=[responses[1].id, responses[0].id])
    assert first.created and not again.created
    assert again.run.id == first.run.id
    runs.start_run(sessions, first.run.id, worker="w")  # running is as active as queued
    assert not _launch(sessions, version, dataset,
                       response_ids=[r.id for r in responses[:2]]).created
    assert [r.id for r in runs.list_runs(sessions)] == [first.run.id]


@pytest.mark.parametrize("change", [
    pytest.param({"model": "openai/other"}, id="model"),
    pytest.param({"grader": "one_shot"}, id="grader"),
    pytest.param({"settings": {"api_base": "http://127.0.0.1:9/v1", "normalize": False}},
                 id="settings"),
    pytest.param({"settings": {"api_base": "http://127.0.0.1:8/v1"}}, id="api-base"),
    pytest.param({"response_ids": "first two"}, id="selection"),
])
def test_a_launch_that_differs_in_anything_but_the_name_queues_a_new_run(sessions, change):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=3)
    first = _launch(sessions, version, dataset)
    if change.get("response_ids") == "first two":
        change = {"response_ids": [r.id for r in responses[:2]]}
    second = _launch(sessions, version, dataset, **change)
    assert second.created and second.run.id != first.run.id


@pytest.mark.parametrize("stop", ["finish", "cancel", "fail"])
def test_a_finished_or_stopped_run_does_not_block_launching_it_again(sessions, stop):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, count=2)
    first = _launch(sessions, version, dataset)
    if stop == "finish":
        runs.start_run(sessions, first.run.id)
        runs.finish_run(sessions, first.run.id)
    elif stop == "cancel":
        runs.cancel_run(sessions, first.run.id, actor=ADMIN)
    else:
        runs.fail_run(sessions, first.run.id, "no key")
    assert _launch(sessions, version, dataset).created


def test_two_launches_at_the_same_moment_queue_one_run(sessions):
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, count=50)
    barrier = Barrier(4)

    def launch(_):
        barrier.wait()
        return _launch(sessions, version, dataset)

    with ThreadPoolExecutor(4) as pool:
        launches = list(pool.map(launch, range(4)))
    assert sum(launch.created for launch in launches) == 1
    assert len({launch.run.id for launch in launches}) == 1
    assert len(runs.list_runs(sessions)) == 1
