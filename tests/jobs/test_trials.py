"""Rewording a criterion: tried on reviewed responses through the real provider path, adopted
as a new version. The fake judge's verdict depends on the criterion's wording."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from grading.types import Criterion, Verdict
from storage.errors import InvalidInputError, InvalidStateError
from storage.jobs.estimate import estimate_for
from storage.services import calibration, datasets, reviews, rubrics, runs, trials
from storage.services.reviewers import Actor, PermissionDeniedError, Role, local_actor
from tests.fake_provider import Reply, judge_reply
from tests.jobs.helpers import make_run, run_now

ADMIN = local_actor("Ada")
M, U = Verdict.MET, Verdict.UNMET
STRICT = "Gives the correct dose and names its source"


def wording_sensitive_judge(body):
    """Old wording: every response MET. New (strict) wording: MET only where it is right."""
    prompt = body["messages"][-1]["content"]
    if "<criterion" not in prompt:
        return judge_reply(body)
    if "correct dose and names its source" in prompt:
        right = re.search(r"answer \d+ is right", prompt) is not None
        return Reply(json.dumps({"verdict": "MET" if right else "UNMET",
                                 "reason": "strict reading"}))
    return Reply(json.dumps({"verdict": "MET", "reason": "lenient reading"}))


def _dosing(sessions, count: int):
    """The 'Dosing' rubric (accurate, polite) and ``count`` answers, even ones right."""
    version = rubrics.create_rubric(sessions, "Dosing", [
        Criterion(name="accurate", requirement="States the dose", weight=10),
        Criterion(name="polite", requirement="Is polite", weight=2),
    ], actor=ADMIN)
    rows = [{"id": f"r{i}", "text": f"answer {i} is {'right' if i % 2 == 0 else 'wrong'}"}
            for i in range(count)]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    return version, dataset, datasets.list_responses(sessions, dataset.id, limit=None)


@pytest.fixture
def reviewed(sessions, fake_provider):
    """Six responses graded by a lenient judge; people reviewed 'accurate' on all six."""
    fake_provider.default = wording_sensitive_judge
    version, dataset, responses = _dosing(sessions, 6)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                   model="openai/gpt-4o-mini")
    assert run_now(sessions, run.id).status == "done"
    accurate = version.criteria[0]
    for index, response in enumerate(responses):
        reviews.set_human_verdict(sessions, response_id=response.id, criterion_id=accurate.id,
                                  verdict=M if index % 2 == 0 else U, actor=local_actor("Pat"),
                                  note="checked the dose")
    return version, responses, run, accurate


def test_trial_judges_only_the_reworded_criterion_and_reports_before_and_after(
        sessions, fake_provider, reviewed):
    _version, _responses, run, accurate = reviewed
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    assert len(plan.cases) == 6 and plan.estimate.calls == 6
    assert plan.estimate.cost is not None  # the model has a price: a cap can be kept
    before_calls = fake_provider.requests
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=5.0))
    assert fake_provider.requests - before_calls == 6  # one call per reviewed response
    assert all("Is polite" not in b["messages"][-1]["content"]
               for b in fake_provider.bodies[before_calls:])

    assert result.before.agreement.pairs_used == 6
    assert result.before.agreement.percent_agreement == pytest.approx(50.0)
    assert result.after.agreement.percent_agreement == pytest.approx(100.0)
    assert result.after.agreement.balanced_f1 == pytest.approx(1.0)
    assert result.after.macro_f1_interval is not None
    assert result.difference_interval is not None and result.difference_interval.low > 0
    assert sorted(f.external_id for f in result.flips) == ["r1", "r3", "r5"]
    flip = result.flips[0]
    assert (flip.before, flip.after) == (M, U)
    assert flip.before_reason == "lenient reading" and flip.after_reason == "strict reading"
    assert result.stopped is None and result.failed == 0

    # The stored trial reads back with the same figures (the page shows it after a reload).
    stored = trials.get_trial(sessions, result.trial_id)
    assert stored.after.agreement == result.after.agreement
    assert [f.response_id for f in stored.flips] == [f.response_id for f in result.flips]
    assert trials.list_trials(sessions, accurate.id)[0][:2] == (result.trial_id, STRICT)

    # Trying the same wording again costs nothing: the answers come from the cache.
    again = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    assert fake_provider.requests - before_calls == 6
    assert again.after.agreement.percent_agreement == pytest.approx(100.0)
    assert again.trial_id != result.trial_id


def test_adopting_makes_a_new_version_and_carries_verdicts_when_confirmed(
        sessions, fake_provider, reviewed):
    version, responses, run, accurate = reviewed
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    adopted = trials.adopt_wording(sessions, result.trial_id, actor=ADMIN,
                                   carry_human_verdicts=True)
    assert adopted.number == version.number + 1
    assert [c.requirement for c in adopted.criteria] == [STRICT, "Is polite"]
    carried = reviews.current_verdicts(sessions, responses[1].id, adopted.id)
    [(criterion_id, verdict)] = carried.items()
    assert criterion_id == adopted.criteria[0].id and verdict.verdict is U
    assert verdict.reviewer == "Pat" and "carried from v1" in verdict.note
    # the old version's verdicts stay where they were
    assert reviews.current_verdicts(sessions, responses[1].id, version.id)[accurate.id].verdict \
        is U
    # a second adoption of the same trial would fork the rubric: refused
    with pytest.raises(InvalidStateError, match="newer version"):
        trials.adopt_wording(sessions, result.trial_id, actor=ADMIN, carry_human_verdicts=False)


def test_a_carried_verdict_keeps_the_time_the_person_answered(sessions, fake_provider,
                                                               reviewed):
    """Carried to the adopted version, a verdict shows when Pat answered, not when the
    wording was adopted (issue 35 item 15); the note says it was carried."""
    import time

    version, responses, run, accurate = reviewed
    given = reviews.current_verdicts(sessions, responses[1].id, version.id)[accurate.id]
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    time.sleep(1.1)  # the adoption is later than the answer, whatever the clock's grain
    adopted = trials.adopt_wording(sessions, result.trial_id, actor=ADMIN,
                                   carry_human_verdicts=True)
    carried = reviews.current_verdicts(sessions, responses[1].id, adopted.id)
    [verdict] = carried.values()
    assert "carried from v1" in verdict.note
    assert verdict.created_at == given.created_at
    assert verdict.created_at < adopted.created_at


def test_adopting_without_confirmation_carries_nothing(sessions, fake_provider, reviewed):
    _version, responses, run, accurate = reviewed
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    adopted = trials.adopt_wording(sessions, result.trial_id, actor=ADMIN,
                                   carry_human_verdicts=False)
    assert reviews.current_verdicts(sessions, responses[0].id, adopted.id) == {}


def test_an_adopted_wording_keeps_the_review_sets_reviewers_per_response(
        sessions, fake_provider, reviewed):
    """Two reviewers per response on v1: the version made by adopting a wording trial still
    asks for two (it was silently back to 1), and says where the settings come from."""
    from storage.services import review_sets

    version, _responses, run, accurate = reviewed
    review_sets.update_settings(sessions, actor=ADMIN, dataset_id=run.dataset_id,
                                rubric_version_id=version.id, reviewers_per_response=2,
                                sample_size=3)
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    adopted = trials.adopt_wording(sessions, result.trial_id, actor=ADMIN,
                                   carry_human_verdicts=False)
    carried = review_sets.get_settings(sessions, run.dataset_id, adopted.id)
    assert (carried.reviewers_per_response, carried.sample_size) == (2, 3)
    assert carried.carried_from == version.number


def test_the_cost_cap_stops_the_trial(sessions, fake_provider, reviewed):
    _version, _responses, run, accurate = reviewed
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT + " exactly")
    before_calls = fake_provider.requests
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=1e-9,
                                          concurrency=1))
    assert fake_provider.requests - before_calls == 1
    assert result.judged == 1 and "cost cap" in result.stopped


def test_eight_calls_in_flight_never_take_a_trial_past_its_cap(sessions, fake_provider,
                                                              reviewed):
    # A million prompt tokens a call: $0.15 each at gpt-4o-mini's price. Checked only after
    # each answer, all six calls went out at once ($0.90 against a cap of $0.50).
    _version, _responses, run, accurate = reviewed

    def expensive(body):
        reply = wording_sensitive_judge(body)
        reply.usage = {"prompt_tokens": 1_000_000, "completion_tokens": 0,
                       "total_tokens": 1_000_000}
        return reply

    fake_provider.default = expensive
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT + " in full")
    before_calls = fake_provider.requests
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=0.5,
                                          concurrency=8))
    assert fake_provider.requests - before_calls == 3  # $0.45; a fourth would make $0.60
    assert result.judged == 3 and result.cost == pytest.approx(0.45)
    assert "would have gone over it" in result.stopped


def test_trials_that_cannot_tell_anything_are_refused(sessions, fake_provider, reviewed):
    version, responses, run, accurate = reviewed
    polite = version.criteria[1]
    calls = fake_provider.requests
    with pytest.raises(InvalidInputError, match="nobody has reviewed 'polite'"):
        trials.plan_trial(sessions, base_run_id=run.id, criterion_id=polite.id,
                          requirement="Is very polite")
    assert trials.list_trials(sessions, polite.id) == [] and fake_provider.requests == calls
    with pytest.raises(InvalidInputError, match="the new wording is empty"):
        trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                          requirement="  ")
    holistic = make_run(sessions, version.id, responses[0].dataset_id, fake_provider.api_base,
                        grader="rubric_as_judge")
    with pytest.raises(InvalidInputError, match="holistic"):
        trials.plan_trial(sessions, base_run_id=holistic.id, criterion_id=accurate.id,
                          requirement=STRICT)


def test_an_unpriced_model_with_a_cost_cap_is_refused_before_any_call(
        sessions, fake_provider, reviewed):
    version, responses, _run, accurate = reviewed
    unpriced = make_run(sessions, version.id, responses[0].dataset_id, fake_provider.api_base,
                        model="openai/no-such-price")
    run_now(sessions, unpriced.id)
    plan = trials.plan_trial(sessions, base_run_id=unpriced.id, criterion_id=accurate.id,
                             requirement=STRICT)
    before_calls = fake_provider.requests
    with pytest.raises(InvalidInputError, match="price of openai/no-such-price is unknown"):
        asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=1.0))
    assert fake_provider.requests == before_calls


def test_only_admins_try_and_adopt(sessions, fake_provider, reviewed):
    _version, _responses, run, accurate = reviewed
    reviewer = Actor(key="rita", name="Rita", roles=frozenset({Role.REVIEWER}))
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    with pytest.raises(PermissionDeniedError, match="Rita may not try"):
        asyncio.run(trials.run_trial(sessions, plan, actor=reviewer, max_cost=None))
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    with pytest.raises(PermissionDeniedError, match="Rita may not adopt"):
        trials.adopt_wording(sessions, result.trial_id, actor=reviewer,
                             carry_human_verdicts=True)
    assert len(runs.list_runs(sessions)) == 1


def test_a_trial_uses_the_human_verdict_in_force_not_any_reviewers_latest(
        sessions, fake_provider, reviewed):
    """Pat reviewed all six; Quinn disagrees on r0 and r1 (disputed: left out of the trial),
    agrees on r2 (agreed: in). An adjudicator then decides r1 against Pat: r1 is back in,
    with the adjudicator's verdict (even though Quinn answered last)."""
    _version, responses, run, accurate = reviewed
    quinn = local_actor("Quinn")
    for index, verdict in ((0, U), (1, M), (2, M)):
        reviews.set_human_verdict(sessions, response_id=responses[index].id,
                                  criterion_id=accurate.id, verdict=verdict, actor=quinn)
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    humans = {c.response.external_id: c.human for c in plan.cases}
    assert sorted(humans) == ["r2", "r3", "r4", "r5"]  # r0, r1 disputed
    assert humans["r2"] is M

    judge = Actor(key="judy", name="Judy", roles=frozenset({Role.ADJUDICATOR}))
    reviews.adjudicate(sessions, actor=judge, response_id=responses[1].id,
                       criterion_id=accurate.id, verdict=M, note="the dose is right")
    reviews.set_human_verdict(sessions, response_id=responses[1].id, criterion_id=accurate.id,
                              verdict=U, actor=local_actor("Pat"), note="still think not")
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    humans = {c.response.external_id: c.human for c in plan.cases}
    assert sorted(humans) == ["r1", "r2", "r3", "r4", "r5"]
    assert humans["r1"] is M  # the adjudicator's verdict, not Pat's latest UNMET

    # the stored trial's figures are read against the same human verdicts
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    assert result.judged == 5
    flipped = {f.external_id: f.human for f in result.flips}
    # the judge's flips, each shown against the human verdict in force (r1: the adjudicator's)
    assert flipped == {"r1": M, "r3": U, "r5": U}


TRIAL_PROCESS = """
import sys, time
from storage.engine import open_database
from storage.jobs import trial_worker
from storage.services import trials
from storage.services.reviewers import local_actor

url, run_id, criterion_id, requirement = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \\
    sys.argv[4]
sessions = open_database(url)
plan = trials.plan_trial(sessions, base_run_id=run_id, criterion_id=criterion_id,
                         requirement=requirement)
print(trial_worker.start_trial(sessions, plan, actor=local_actor("Ada"), max_cost=None),
      flush=True)
time.sleep(600)
"""


def _wait_for(check, timeout=120.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_a_trial_killed_with_its_app_reads_as_interrupted_and_a_retry_completes_it(
        sessions, db_url, fake_provider, reviewed):
    """The app (a separate process) runs a trial; r3-r5 hang at the provider; the process is
    killed. Any reader — a reload, a second browser, the restarted app — sees the progress
    and "interrupted"; a retry judges only what was not judged and completes."""
    import os
    import signal
    import subprocess
    import sys

    from storage.jobs import trial_worker
    from storage.services import trial_progress

    _version, _responses, run, accurate = reviewed

    def first_three_then_hang(body):
        prompt = body["messages"][-1]["content"]
        if any(f"answer {i} is" in prompt for i in (3, 4, 5)):
            return Reply(hang=300)
        return wording_sensitive_judge(body)

    fake_provider.default = first_three_then_hang
    app = subprocess.Popen([sys.executable, "-c", TRIAL_PROCESS, db_url, str(run.id),
                            str(accurate.id), STRICT], stdout=subprocess.PIPE, text=True,
                           env=os.environ.copy())
    try:
        trial_id = int(app.stdout.readline())
        running = _wait_for(lambda: (s := trial_progress.trial_status(sessions, trial_id))
                            .judged >= 3 and s)
        assert (running.status, running.judged, running.total) == ("running", 3, 6)
    finally:
        app.send_signal(signal.SIGKILL)
        app.wait()
        app.stdout.close()
    fake_provider.default = wording_sensitive_judge  # the provider is fine again

    interrupted = trial_progress.trial_status(sessions, trial_id)
    assert (interrupted.status, interrupted.judged) == ("interrupted", 3)
    assert trials.get_trial(sessions, trial_id).status == "interrupted"
    asked_before = len(fake_provider.answered)

    trial_worker.retry_trial(sessions, trial_id, actor=ADMIN)
    with pytest.raises(InvalidStateError, match="only an interrupted or failed trial"):
        trial_worker.retry_trial(sessions, trial_id, actor=ADMIN)  # a second browser's click
    done = _wait_for(lambda: (s := trial_progress.trial_status(sessions, trial_id))
                     .status != "running" and s)
    assert (done.status, done.judged) == ("done", 6)
    retried = [b["messages"][-1]["content"] for b in fake_provider.answered[asked_before:]]
    assert len(retried) == 3 and all(any(f"answer {i} is" in p for i in (3, 4, 5))
                                     for p in retried)  # r0-r2 were kept, not asked again
    result = trials.get_trial(sessions, trial_id)
    assert result.after.agreement.percent_agreement == pytest.approx(100.0)
    assert sorted(f.external_id for f in result.flips) == ["r1", "r3", "r5"]


def test_a_trial_of_another_machine_is_interrupted_once_its_heartbeat_is_old(
        sessions, fake_provider, reviewed):
    from datetime import timedelta

    from storage.services import trial_progress

    _version, _responses, run, accurate = reviewed
    trial_id = trial_progress.begin(
        sessions, criterion_id=accurate.id, base_run_id=run.id, requirement=STRICT, total=6,
        max_cost=None, actor=ADMIN, worker="another-host:4242:abcd")
    began = trial_progress.trial_status(sessions, trial_id)
    assert began.status == "running"
    later = began.created_at + timedelta(seconds=trial_progress.LEASE_SECONDS + 1)
    assert trial_progress.trial_status(sessions, trial_id, now=later).status == "interrupted"
    with pytest.raises(InvalidStateError, match="is running"):
        trial_progress.claim_retry(sessions, trial_id, actor=ADMIN, worker="me:1:x")


def test_a_calibrated_runs_wording_is_tried_with_the_examples_it_showed_its_judge(
        sessions, fake_provider):
    # "Before" is a calibrated judge's verdicts: "after" must come from the same judge with
    # the same examples, or the trial compares calibration, not wording.
    fake_provider.default = wording_sensitive_judge
    version, dataset, responses = _dosing(sessions, 10)
    for index, response in enumerate(responses):
        for criterion in version.criteria:
            reviews.set_human_verdict(sessions, response_id=response.id,
                                      criterion_id=criterion.id, actor=local_actor("Pat"),
                                      verdict=M if index % 2 == 0 else U,
                                      note=f"checked {index}")
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model="openai/gpt-4o-mini", actor=ADMIN,
        settings={"api_base": fake_provider.api_base, "calibration": {"k": 2, "seed": 3}})
    assert run_now(sessions, run.id).status == "done"
    accurate = version.criteria[0]
    shown = {e.response_id for e in calibration.list_run_examples(sessions, run.id)
             if e.criterion_id == accurate.id and e.role == "example"}
    assert len(shown) == 2

    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    assert plan.examples is not None
    plain = estimate_for(grader="per_criterion", model=plan.base_run.model,
                         criteria=[plan.new_criterion], settings=plan.base_run.settings,
                         responses=[(c.response.to_grade, c.response.query) for c in plan.cases])
    assert plan.estimate.prompt_tokens > plain.prompt_tokens  # the estimate counts them
    assert plan.cases and not {c.response.id for c in plan.cases} & shown  # held out
    before_calls = fake_provider.requests
    asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    bodies = fake_provider.bodies[before_calls:]
    assert len(bodies) == len(plan.cases)
    texts = {r.id: r.output for r in responses}
    for body in bodies:
        prompt = body["messages"][-1]["content"]
        examples, graded = prompt.split("The response to grade:")
        assert STRICT in prompt and "States the dose" not in prompt  # the new wording only
        assert all(texts[i] in examples for i in shown)  # the run's own examples
        assert examples.count("<human_verdict>") == 2
        assert not any(texts[c.response.id] in examples for c in plan.cases
                       if c.response.output in graded)  # never the graded response
