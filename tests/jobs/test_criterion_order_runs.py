"""One-shot runs that shuffle the criteria per response, against the fake provider over real
HTTP: each verdict lands on its criterion whatever order the judge saw, the order each
response saw is stored with its grade, a re-run replays the same prompts from the cache,
and the option is refused where it means nothing."""

from __future__ import annotations

import json
import re

import pytest

from grading.errors import ConfigurationError
from grading.types import Verdict
from storage.services import runs
from tests.jobs.helpers import CRITERIA, make_dataset, make_rubric, make_run, run_now


def listed(prompt: str) -> list[str]:
    """The requirements in the order the one-shot prompt lists them."""
    block = prompt[prompt.index("<criteria>"):prompt.index("</criteria>")]
    return re.findall(r'<criterion number="\d+"[^>]*>\n(.+)\n</criterion>', block)


def first_is_met(body: dict) -> str:
    """A judge answering by position only: MET for the criterion listed first."""
    count = len(listed(body["messages"][-1]["content"]))
    return json.dumps({"criteria": [
        {"number": n, "reason": f"listed {n}", "verdict": "MET" if n == 1 else "UNMET"}
        for n in range(1, count + 1)]})


def test_verdicts_map_back_and_each_grade_records_the_order_it_saw(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 8)
    fake_provider.default = first_is_met
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                   grader="one_shot", shuffle_criteria=True)
    assert run_now(sessions, run.id).status == "done"

    seen = {}
    for body in fake_provider.bodies:
        prompt = body["messages"][-1]["content"]
        text = next(r.output for r in responses if r.output in prompt)
        seen[text] = listed(prompt)
    assert len(seen) == 8
    assert len({tuple(order) for order in seen.values()}) > 1  # the orders differ
    by_id = {c.id: c.requirement for c in version.criteria}
    weights = {c.requirement: c.weight for c in CRITERIA}
    for grade in runs.list_grades(sessions, run.id):
        order = seen[next(r.output for r in responses if r.id == grade.response_id)]
        assert [c.prompt_position for c in grade.criteria] != [None] * 3
        for stored in grade.criteria:
            requirement = by_id[stored.criterion_id]
            assert order[stored.prompt_position - 1] == requirement
            assert stored.verdict is (Verdict.MET if stored.prompt_position == 1
                                      else Verdict.UNMET)
            assert stored.reason == f"listed {stored.prompt_position}"
        # the score is the rubric's, with MET on the criterion listed first
        first = weights[order[0]]
        positive = sum(w for w in weights.values() if w > 0)
        expected = max(first, 0) / positive if first > 0 else 0.0
        assert grade.score == pytest.approx(expected)

    again = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                     grader="one_shot", shuffle_criteria=True)
    asked = fake_provider.requests
    assert run_now(sessions, again.id).status == "done"
    assert fake_provider.requests == asked  # the same prompts: every answer from the cache
    positions = {(g.response_id, c.criterion_id): c.prompt_position
                 for g in runs.list_grades(sessions, again.id) for c in g.criteria}
    assert positions == {(g.response_id, c.criterion_id): c.prompt_position
                         for g in runs.list_grades(sessions, run.id) for c in g.criteria}


def test_without_the_option_one_shot_runs_record_no_position(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    fake_provider.default = first_is_met
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, grader="one_shot")
    assert run_now(sessions, run.id).status == "done"
    for body in fake_provider.bodies:
        assert listed(body["messages"][-1]["content"]) == [c.requirement for c in CRITERIA]
    for grade in runs.list_grades(sessions, run.id):
        assert [c.prompt_position for c in grade.criteria] == [None] * 3
        assert [c.verdict for c in grade.criteria] == [Verdict.MET, Verdict.UNMET,
                                                       Verdict.UNMET]


@pytest.mark.parametrize("grader", ["per_criterion", "rubric_as_judge"])
def test_other_graders_refuse_the_option(sessions, grader):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 1)
    with pytest.raises(ConfigurationError, match="only the one-shot grader"):
        make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1", grader=grader,
                 shuffle_criteria=True)


def test_a_non_boolean_setting_is_refused(sessions):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 1)
    with pytest.raises(Exception, match="shuffle_criteria must be true or false"):
        make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1", grader="one_shot",
                 shuffle_criteria="yes")


def test_a_criterion_left_out_of_the_shuffled_answer_is_stored_without_a_position(
        sessions, fake_provider):
    """The judge skips whatever it was shown second: that criterion is asked alone, its
    stored verdict is that call's and records no position, and the grade's note names it by
    its number in the rubric."""
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 4)

    def skip_second(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if "<criteria>" not in prompt:
            return json.dumps({"verdict": "MET", "reason": "asked alone"})
        count = len(listed(prompt))
        return json.dumps({"criteria": [
            {"number": n, "reason": "r", "verdict": "UNMET"}
            for n in range(1, count + 1) if n != 2]})

    fake_provider.default = skip_second
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                   grader="one_shot", shuffle_criteria=True)
    assert run_now(sessions, run.id).status == "done"
    shown = {}
    for body in fake_provider.bodies:
        prompt = body["messages"][-1]["content"]
        if "<criteria>" in prompt:
            shown[next(r.id for r in responses if r.output in prompt)] = listed(prompt)
    by_id = {c.id: c.requirement for c in version.criteria}
    rubric = [c.requirement for c in CRITERIA]
    for grade in runs.list_grades(sessions, run.id):
        second = shown[grade.response_id][1]
        for stored in grade.criteria:
            if by_id[stored.criterion_id] == second:
                assert (stored.verdict, stored.prompt_position, stored.reason) == (
                    Verdict.MET, None, "asked alone")
            else:
                assert stored.verdict is Verdict.UNMET
                assert shown[grade.response_id][stored.prompt_position - 1] == by_id[
                    stored.criterion_id]
        assert (f"left out criterion number(s) {rubric.index(second) + 1} of 3"
                in grade.reason)


def test_shuffling_off_is_not_stored_so_older_runs_keep_their_settings():
    from storage.run_settings import RunSettings

    assert RunSettings(extra={"shuffle_criteria": False}).extra == {}
    assert not RunSettings().shuffle_criteria
    assert RunSettings(extra={"shuffle_criteria": True}).shuffle_criteria


def test_every_read_of_a_grade_carries_the_position(sessions):
    """Stored once, read back the three ways grades are read: the stored grade handed back,
    a grade by id, and a run's grades by the repository's bulk read."""
    from storage.repositories import runs as runs_repo
    from tests.kinds import judge_report

    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, 1)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9/v1",
                   grader="one_shot", shuffle_criteria=True)
    report = judge_report(["MET", "UNMET", "UNMET"], CRITERIA)
    items = [item.model_copy(update={"prompt_position": p})
             for item, p in zip(report.report, (3, 1, 2), strict=True)]
    stored = runs.record_grade(sessions, run.id, responses[0].id,
                               report.model_copy(update={"report": items}))
    assert [c.prompt_position for c in stored.criteria] == [3, 1, 2]
    assert [c.prompt_position for c in runs.get_grade(sessions, stored.id).criteria] == [
        3, 1, 2]
    with sessions() as session:
        [grade] = runs_repo.grade_infos_for_run(session, run.id)
    assert [c.prompt_position for c in grade.criteria] == [3, 1, 2]
