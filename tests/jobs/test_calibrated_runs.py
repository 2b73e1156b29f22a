"""Calibrated runs through the real runner and litellm's HTTP path to the fake provider: the
prompts carry exactly the recorded examples, never the graded response, and a requeued run
reuses what it recorded."""

from __future__ import annotations

import re

import pytest

from storage.services import calibration, reviews, runs
from tests.actors import ADMIN
from tests.fake_provider import is_probe
from tests.jobs.helpers import MODEL, make_dataset, make_rubric, run_now

TEXT = re.compile(r"answer number (\d+)\n")


def _review(sessions, version, responses):
    for i, response in enumerate(responses):
        for c, criterion in enumerate(version.criteria):
            reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                      criterion_id=criterion.id,
                                      verdict="MET" if (i + c) % 2 else "UNMET",
                                      note=f"note {i}/{c}")


def _launch(sessions, version, dataset, api_base, *, grader="per_criterion", k=2, seed=0,
            use_cache=True):
    return runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader=grader,
        model=MODEL, actor=ADMIN,
        settings={"api_base": api_base, "calibration": {"k": k, "seed": seed},
                  "extra": {"use_cache": use_cache}})


def _split(prompt: str) -> tuple[str, str]:
    examples, graded = prompt.split("The response to grade:")
    return examples, graded


def _expected(sessions, run_id, responses):
    """Per response number and criterion position, the example numbers its prompt must show."""
    loaded = calibration.load_examples(sessions, run_id)
    number = {r.id: i for i, r in enumerate(responses)}
    return {
        (number[r.id], position): sorted(number[e.response_key] for e in shown)
        for r in responses
        for position, shown in enumerate(loaded.for_response(r.id, r.output))
    }


def test_per_criterion_prompts_carry_exactly_the_recorded_examples(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 10)
    _review(sessions, version, responses[:7])
    run = _launch(sessions, version, dataset, fake_provider.api_base, k=2, seed=4)
    result = run_now(sessions, run.id)
    assert (result.status, result.graded, result.failed) == ("done", 10, 0)
    expected = _expected(sessions, run.id, responses)
    requirement = {c.requirement: c.position for c in version.criteria}
    seen = set()
    assert len(fake_provider.bodies) == 10 * len(version.criteria)
    for body in fake_provider.bodies:
        prompt = body["messages"][-1]["content"]
        examples, graded = _split(prompt)
        [graded_number] = [int(n) for n in TEXT.findall(graded)]
        position = next(p for text, p in requirement.items() if text in graded)
        shown = sorted(int(n) for n in TEXT.findall(examples))
        assert graded_number not in shown  # never its own example
        assert shown == expected[graded_number, position]
        assert len(shown) == 2
        assert examples.count("<human_verdict>") == 2
        for n in shown:
            verdict = "MET" if (n + position) % 2 else "UNMET"
            assert (f"answer number {n}\n</response>\n<human_verdict>{verdict}</human_verdict>\n"
                    f"<reason>note {n}/{position}</reason>") in examples
        seen.add((graded_number, position))
    assert len(seen) == 10 * len(version.criteria)
    # Responses that are examples were graded too, with a reserve in their own place.
    used = {e.response_id for e in calibration.list_run_examples(sessions, run.id)
            if e.role == "example"}
    assert used and all(run_id in {r.id for r in responses} for run_id in used)


def test_one_shot_prompts_carry_each_criterions_examples(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 8)
    _review(sessions, version, responses[:6])
    run = _launch(sessions, version, dataset, fake_provider.api_base, grader="one_shot", k=2)
    assert run_now(sessions, run.id).status == "done"
    expected = _expected(sessions, run.id, responses)
    assert len(fake_provider.bodies) == 8
    for body in fake_provider.bodies:
        examples, graded = _split(body["messages"][-1]["content"])
        [graded_number] = [int(n) for n in TEXT.findall(graded)]
        for position in range(len(version.criteria)):
            verdicts = re.findall(
                rf"answer number (\d+)\n</response>\n(?:<human_verdict criterion=\"\d\">\w+"
                rf"</human_verdict>\n<reason criterion=\"\d\">[^<]*</reason>\n)*?"
                rf"<human_verdict criterion=\"{position + 1}\">", examples)
            assert sorted(int(n) for n in verdicts) == expected[graded_number, position]
        assert str(graded_number) not in TEXT.findall(examples)


def test_a_calibrated_answer_is_not_the_uncalibrated_one_from_the_cache(sessions,
                                                                       fake_provider):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 6)
    _review(sessions, version, responses)
    plain = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model=MODEL, actor=ADMIN,
                            settings={"api_base": fake_provider.api_base})
    assert run_now(sessions, plain.id).provider_calls == 6 * 3
    calibrated = run_now(sessions, _launch(sessions, version, dataset,
                                           fake_provider.api_base).id)
    assert (calibrated.cache_hits, calibrated.provider_calls) == (0, 6 * 3)
    # The same draw (same seed) asks the very same questions: answered from the cache.
    again = run_now(sessions, _launch(sessions, version, dataset, fake_provider.api_base).id)
    assert (again.cache_hits, again.provider_calls) == (6 * 3, 0)


@pytest.mark.parametrize("how", ["cancelled-before-start", "cancelled-midway"])
def test_a_requeued_run_reuses_its_recorded_examples(sessions, fake_provider, how):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 12)
    _review(sessions, version, responses[:4])
    run = _launch(sessions, version, dataset, fake_provider.api_base, k=2, seed=1)
    recorded = calibration.list_run_examples(sessions, run.id)
    expected = _expected(sessions, run.id, responses)
    if how == "cancelled-midway":
        # The provider refuses the key: the run stops (nothing more can work)...
        fake_provider.required_api_key = "another-key"
        assert run_now(sessions, run.id).status == "failed"
        fake_provider.required_api_key = None
    else:
        runs.cancel_run(sessions, run.id, actor=ADMIN)
    # ...people review more responses meanwhile, which would change a new draw...
    _review(sessions, version, responses)
    fresh = _launch(sessions, version, dataset, fake_provider.api_base, k=2, seed=1)
    assert ([(e.criterion_id, e.response_id) for e in
             calibration.list_run_examples(sessions, fresh.id)]
            != [(e.criterion_id, e.response_id) for e in recorded])
    runs.requeue_run(sessions, run.id, actor=ADMIN)
    fake_provider.bodies.clear()
    result = run_now(sessions, run.id)
    assert result.status == "done"
    # ...but the requeued run shows exactly what it recorded at launch.
    assert calibration.list_run_examples(sessions, run.id) == recorded
    requirement = {c.requirement: c.position for c in version.criteria}
    # A run that stopped may have left calls running at the server: one probe first, at most.
    asked = [b for b in fake_provider.bodies if not is_probe(b)]
    assert asked and len(fake_provider.bodies) - len(asked) <= 1
    for body in asked:
        examples, graded = _split(body["messages"][-1]["content"])
        [graded_number] = [int(n) for n in TEXT.findall(graded)]
        position = next(p for text, p in requirement.items() if text in graded)
        assert sorted(int(n) for n in TEXT.findall(examples)) == expected[graded_number,
                                                                          position]


def test_a_calibrated_run_stops_at_its_cost_cap(sessions, fake_provider):
    """The examples make every prompt longer; the run's cap still stops it, saying so."""
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 6)
    _review(sessions, version, responses[:4])
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="per_criterion",
        model=MODEL, actor=ADMIN,
        settings={"api_base": fake_provider.api_base, "calibration": {"k": 2, "seed": 0},
                  "price": {"input_per_million": 1.0, "output_per_million": 1.0},
                  "extra": {"concurrency": 1, "use_cache": False, "cost_cap": 1e-9}})
    result = run_now(sessions, run.id)
    assert result.status == "failed" and "cost cap ($1e-09)" in result.error
    info = runs.get_run(sessions, run.id)
    assert 1 <= info.graded_count < 6 and info.cost > 0
    assert "<human_verdict>" in fake_provider.bodies[0]["messages"][-1]["content"]
