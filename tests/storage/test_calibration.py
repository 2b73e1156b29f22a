"""Calibrated runs: examples drawn from people's verdicts at launch, recorded, reused, held out.

Every test runs on SQLite and PostgreSQL (the ``sessions`` fixture)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from grading import Criterion, Verdict
from storage import models as m
from storage.services import agreement, calibration, reviews, rubrics, runs
from storage.services.calibration import CalibrationRefusedError
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import make_dataset

CRITERIA = [Criterion(name="dose", requirement="States the dose", weight=5),
            Criterion(name="harm", requirement="Recommends a harmful drug", weight=-5)]
ANA, BO = local_actor("ana"), local_actor("bo")


def _setup(sessions, count: int = 12):
    version = rubrics.create_rubric(sessions, "Dosing", CRITERIA, actor=ADMIN)
    dataset, responses = make_dataset(sessions, count=count)
    return version, dataset, responses


def _review(sessions, version, responses, pattern, *, actor=ANA, note="because {i}"):
    """pattern(i) -> verdict per criterion index, or None to leave it unreviewed."""
    for i, response in enumerate(responses):
        for c, criterion in enumerate(version.criteria):
            verdict = pattern(i, c)
            if verdict is not None:
                reviews.set_human_verdict(sessions, actor=actor, response_id=response.id,
                                          criterion_id=criterion.id, verdict=verdict,
                                          note=note.format(i=i) if note else "")


def _launch(sessions, version, dataset, k=4, seed=0, grader="per_criterion", **extra):
    return runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                           grader=grader, model="openai/judge",
                           settings={"calibration": {"k": k, "seed": seed}, **extra},
                           actor=ADMIN)


def _alternating(i, c):
    return "MET" if (i + c) % 2 else "UNMET"


def test_examples_are_drawn_at_launch_balanced_with_the_reviewers_note(sessions):
    version, dataset, responses = _setup(sessions)
    _review(sessions, version, responses[:10], _alternating)
    run = _launch(sessions, version, dataset, k=4, seed=3)
    used = calibration.list_run_examples(sessions, run.id)
    by_id = {r.id: r for r in responses}
    for criterion in version.criteria:
        shown = [e for e in used if e.criterion_id == criterion.id and e.role == "example"]
        assert len(shown) == 4
        assert sorted(e.verdict for e in shown) == ["MET", "MET", "UNMET", "UNMET"]
        for e in shown:
            i = responses.index(by_id[e.response_id])
            assert e.reason == f"because {i}"
            assert e.verdict == _alternating(i, criterion.position)
            assert e.status == "agreed" and e.carried_from is None
            assert e.response_label == by_id[e.response_id].external_id
        reserves = [e for e in used if e.criterion_id == criterion.id and e.role == "reserve"]
        assert sorted(e.verdict for e in reserves) == ["MET", "UNMET"]
        assert not {e.response_id for e in reserves} & {e.response_id for e in shown}
    # Unreviewed responses are never examples.
    assert not {e.response_id for e in used} & {r.id for r in responses[10:]}


def test_the_same_seed_draws_the_same_examples_and_another_seed_may_not(sessions):
    version, dataset, responses = _setup(sessions, count=20)
    _review(sessions, version, responses, _alternating)

    def drawn(run):
        return [(e.criterion_id, e.response_id, e.role)
                for e in calibration.list_run_examples(sessions, run.id)]

    first = drawn(_launch(sessions, version, dataset, k=4, seed=7))
    assert drawn(_launch(sessions, version, dataset, k=4, seed=7)) == first
    others = {tuple(drawn(_launch(sessions, version, dataset, k=4, seed=s))) for s in range(4)}
    assert len(others) > 1


def test_disputed_verdicts_are_never_examples_and_adjudicated_ones_are(sessions):
    version, dataset, responses = _setup(sessions, count=8)
    dose = version.criteria[0]
    _review(sessions, version, responses, _alternating)
    # bo disagrees with ana on responses 0-3 for "dose": disputed...
    for response in responses[:4]:
        i = responses.index(response)
        other = "UNMET" if _alternating(i, 0) == "MET" else "MET"
        reviews.set_human_verdict(sessions, actor=BO, response_id=response.id,
                                  criterion_id=dose.id, verdict=other, note="bo says no")
    # ...until an adjudicator decides response 0.
    reviews.adjudicate(sessions, actor=ADMIN, response_id=responses[0].id,
                       criterion_id=dose.id, verdict="MET", note="adjudicated: it is there")
    counts = {c.criterion_id: c for c in calibration.reviewed_counts(sessions, version.id)}
    assert counts[dose.id].total == 5  # 4 undisputed + 1 adjudicated
    run = _launch(sessions, version, dataset, k=5)
    used = [e for e in calibration.list_run_examples(sessions, run.id)
            if e.criterion_id == dose.id]
    ids = {e.response_id for e in used}
    assert not ids & {r.id for r in responses[1:4]}
    adjudicated = next(e for e in used if e.response_id == responses[0].id)
    assert (adjudicated.verdict, adjudicated.status, adjudicated.reason) == (
        "MET", "adjudicated", "adjudicated: it is there")


def test_cannot_assess_is_not_counted_and_a_missing_note_stays_empty(sessions):
    version, dataset, responses = _setup(sessions, count=6)
    _review(sessions, version, responses,
            lambda i, c: "CANNOT_ASSESS" if i == 0 else _alternating(i, c), note="")
    counts = calibration.reviewed_counts(sessions, version.id)
    assert [c.total for c in counts] == [5, 5]
    run = _launch(sessions, version, dataset, k=2)
    used = calibration.list_run_examples(sessions, run.id)
    assert responses[0].id not in {e.response_id for e in used}
    assert {e.reason for e in used} == {""}


def test_verdicts_carried_from_an_earlier_version_count(sessions):
    version, dataset, responses = _setup(sessions, count=6)
    _review(sessions, version, responses, _alternating)
    runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                    grader="per_criterion", model="openai/judge", actor=ADMIN)  # freezes v1
    changed = [CRITERIA[0].model_copy(update={"weight": 7}),
               CRITERIA[1].model_copy(update={"requirement": "Recommends a banned drug"})]
    v2 = rubrics.save_criteria(sessions, version.id, changed, actor=ADMIN)
    assert v2.id != version.id
    counts = calibration.reviewed_counts(sessions, v2.id)
    assert [c.total for c in counts] == [6, 0]  # the reworded criterion's carry ended
    with pytest.raises(CalibrationRefusedError, match=r"criterion 2 \('harm'\): 0"):
        _launch(sessions, v2, dataset, k=2)
    _review(sessions, v2, responses, lambda i, c: _alternating(i, c) if c == 1 else None)
    run = _launch(sessions, v2, dataset, k=2)
    used = calibration.list_run_examples(sessions, run.id)
    assert {e.carried_from for e in used if e.criterion_position == 0} == {1}
    assert {e.carried_from for e in used if e.criterion_position == 1} == {None}


def _nothing_written(sessions, before_runs: int) -> None:
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(m.RunRow)) == before_runs
        assert session.scalar(select(func.count()).select_from(m.RunExampleRow)) == 0
        assert session.scalar(select(func.count()).select_from(m.RunResponseRow)) == 0


def test_k_larger_than_the_reviewed_examples_is_refused_before_anything_is_written(sessions):
    version, dataset, responses = _setup(sessions, count=6)
    _review(sessions, version, responses[:3], _alternating)
    with pytest.raises(CalibrationRefusedError) as refused:
        _launch(sessions, version, dataset, k=4)
    message = str(refused.value)
    assert "4 examples per criterion" in message
    assert "criterion 1 ('dose'): 3 (1 MET, 2 UNMET)" in message
    assert "Choose k of at most 3" in message
    with pytest.raises(CalibrationRefusedError):
        runs.launch_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                        grader="one_shot", model="openai/judge",
                        settings={"calibration": {"k": 4}}, actor=ADMIN)
    _nothing_written(sessions, 0)


def test_nothing_reviewed_says_to_review_first(sessions):
    version, dataset, _ = _setup(sessions, count=3)
    with pytest.raises(CalibrationRefusedError, match="Review responses on every criterion"):
        _launch(sessions, version, dataset, k=1)
    _nothing_written(sessions, 0)


def test_holistic_runs_cannot_be_calibrated(sessions):
    version, dataset, responses = _setup(sessions, count=6)
    _review(sessions, version, responses, _alternating)
    with pytest.raises(CalibrationRefusedError, match="one overall score"):
        _launch(sessions, version, dataset, k=2, grader="rubric_as_judge")
    _nothing_written(sessions, 0)


def test_loaded_examples_carry_the_texts_and_never_show_a_response_to_itself(sessions):
    version, dataset, responses = _setup(sessions, count=10)
    _review(sessions, version, responses, _alternating)
    run = _launch(sessions, version, dataset, k=4, seed=2)
    loaded = calibration.load_examples(sessions, run.id)
    loaded.check(version.to_criteria())
    recorded = calibration.list_run_examples(sessions, run.id)
    by_id = {r.id: r for r in responses}
    for position, examples in enumerate(loaded.sets):
        wanted = [e.response_id for e in recorded
                  if e.criterion_position == position and e.role == "example"]
        assert [e.response_key for e in examples.examples] == wanted
        for e in examples.examples:
            assert (e.output, e.query) == (by_id[e.response_key].output,
                                          by_id[e.response_key].query)
    for response in responses:
        for shown in loaded.for_response(response.id, response.output):
            assert response.id not in [e.response_key for e in shown]
    assert loaded.response_keys == {e.response_id for e in recorded}
    plain = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/judge", actor=ADMIN)
    assert calibration.load_examples(sessions, plain.id) is None


def _grade_alternating(sessions, graded_runs, responses, criteria) -> None:
    """Every run judges every response as the reviewers did (the alternating pattern)."""
    from tests.storage.helpers import judge_report

    for run in graded_runs:
        runs.start_run(sessions, run.id)
        for i, response in enumerate(responses):
            verdicts = [Verdict(_alternating(i, c)) for c in range(len(criteria))]
            runs.record_grade(sessions, run.id, response.id, judge_report(
                criteria, verdicts, run.settings.scoring(), response.to_grade))


def test_agreement_of_a_calibrated_run_leaves_out_its_example_responses(sessions):
    version, dataset, responses = _setup(sessions, count=10)
    _review(sessions, version, responses, _alternating)
    calibrated = _launch(sessions, version, dataset, k=2)
    plain = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/judge", actor=ADMIN)
    criteria = version.to_criteria()
    _grade_alternating(sessions, (calibrated, plain), responses, criteria)
    used = {e.response_id for e in calibration.list_run_examples(sessions, calibrated.id)}
    assert 0 < len(used) < len(responses)
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    calibrated_keys = {rid for rid, _ in data.verdicts[f"run:{calibrated.id}"]}
    assert calibrated_keys == {r.id for r in responses} - used
    assert set(data.judge_scores[f"run:{calibrated.id}"]) == {r.id for r in responses} - used
    assert {rid for rid, _ in data.verdicts[f"run:{plain.id}"]} == {r.id for r in responses}
    held = data.held_out[f"run:{calibrated.id}"]
    assert (held.reviewed, held.examples, held.held_out, held.k) == (
        10, len(used), 10 - len(used), 2)
    assert f"run:{plain.id}" not in data.held_out
    report = agreement.build_report(data)
    pair = report.pair(agreement.HUMAN, f"run:{calibrated.id}")
    assert pair.overall.pairs_used == (10 - len(used)) * len(criteria)


def test_a_panel_with_a_calibrated_member_is_measured_on_held_out_responses(sessions):
    from storage.services import panels

    version, dataset, responses = _setup(sessions, count=10)
    _review(sessions, version, responses, _alternating)
    calibrated = _launch(sessions, version, dataset, k=2)
    plain = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/other", actor=ADMIN)
    criteria = version.to_criteria()
    _grade_alternating(sessions, (calibrated, plain), responses, criteria)
    panel = panels.create_panel(sessions, run_ids=[calibrated.id, plain.id], rule="majority",
                                actor=ADMIN)
    used = {e.response_id for e in calibration.list_run_examples(sessions, calibrated.id)}
    assert 0 < len(used) < len(responses)
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    key = f"panel:{panel.id}"
    assert {rid for rid, _ in data.verdicts[key]} == {r.id for r in responses} - used
    assert set(data.judge_scores[key]) <= {r.id for r in responses} - used
    held = data.held_out[key]
    assert (held.reviewed, held.examples, held.held_out, held.k) == (
        10, len(used), 10 - len(used), 2)
    [source] = [s for s in data.sources if s.key == key]
    assert source.verdict_count == (10 - len(used)) * len(criteria)


def test_the_estimate_counts_the_examples_every_prompt_shows(sessions):
    from storage.jobs import estimate_run

    version, dataset, responses = _setup(sessions, count=10)
    _review(sessions, version, responses, _alternating)
    price = {"input_per_million": 1.0, "output_per_million": 1.0}

    def estimate(**settings):
        return estimate_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/judge",
                            settings={"price": price, **settings})

    plain = estimate()
    calibrated = estimate(calibration={"k": 4, "seed": 0})
    assert calibrated.calls == plain.calls
    assert calibrated.prompt_tokens > plain.prompt_tokens
    assert "with 4 reviewed examples per criterion" in calibrated.note
    # Too many asked: the estimate stays without examples (the launch refuses, with why).
    assert estimate(calibration={"k": 20}).prompt_tokens == plain.prompt_tokens


def test_agreement_command_says_what_a_calibrated_run_is_measured_on(sessions, db_url, capsys):
    import json

    from storage import cli

    version, dataset, responses = _setup(sessions, count=8)
    _review(sessions, version, responses, _alternating)
    run = _launch(sessions, version, dataset, k=2)
    used = {e.response_id for e in calibration.list_run_examples(sessions, run.id)}
    assert cli.main(["agreement", "--dataset", "Answers", "--rubric", "Dosing",
                     "--format", "json", "--db", db_url]) == 0
    held = json.loads(capsys.readouterr().out)["held_out"][f"run:{run.id}"]
    assert held == {"k": 2, "reviewed": 8, "examples": len(used), "held_out": 8 - len(used)}
    assert cli.main(["agreement", "--dataset", "Answers", "--rubric", "Dosing",
                     "--format", "text", "--db", db_url]) == 0
    assert (f"held out: {8 - len(used)} of 8 reviewed responses; {len(used)} were examples"
            in capsys.readouterr().out)


def test_a_wording_trial_on_a_calibrated_run_uses_only_its_held_out_responses(sessions):
    from storage.services import trials
    from tests.storage.helpers import judge_report

    version, dataset, responses = _setup(sessions, count=10)
    _review(sessions, version, responses, _alternating)
    run = _launch(sessions, version, dataset, k=2)
    criteria = version.to_criteria()
    runs.start_run(sessions, run.id)
    for i, response in enumerate(responses):
        runs.record_grade(sessions, run.id, response.id, judge_report(
            criteria, [Verdict(_alternating(i, c)) for c in range(2)], run.settings.scoring(),
            response.to_grade))
    used = {e.response_id for e in calibration.list_run_examples(sessions, run.id)}
    assert used
    plan = trials.plan_trial(sessions, base_run_id=run.id,
                             criterion_id=version.criteria[0].id, requirement="States a dose")
    assert {c.response.id for c in plan.cases} == {r.id for r in responses} - used


def test_two_calibrated_launches_at_the_same_moment_queue_one_run_with_one_draw(sessions):
    """Two browsers (or a reload and the old tab) launch the same calibrated run at once:
    one run, one set of examples, and both are told about the same run."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    version, dataset, responses = _setup(sessions)
    _review(sessions, version, responses[:10], _alternating)
    barrier = Barrier(3)

    def launch(_):
        barrier.wait()
        return runs.launch_run(
            sessions, rubric_version_id=version.id, dataset_id=dataset.id,
            grader="per_criterion", model="openai/judge",
            settings={"calibration": {"k": 2, "seed": 5}}, actor=ADMIN)

    with ThreadPoolExecutor(3) as pool:
        launches = list(pool.map(launch, range(3)))
    assert sum(launch.created for launch in launches) == 1
    [run_id] = {launch.run.id for launch in launches}
    assert [r.id for r in runs.list_runs(sessions)] == [run_id]
    with sessions() as session:
        drawn = session.scalar(select(func.count()).select_from(m.RunExampleRow))
    assert drawn == len(calibration.list_run_examples(sessions, run_id)) > 0
