"""The workbench rubric judge inside verifiers 0.4.0's own Task.score (real package, own venv),
with the local fake provider as the judge over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from tests.compat.venvs import run_driver
from tests.fake_provider import Reply
from tests.rewards.conftest import DRIVER_ENV

DRIVER = Path(__file__).parent / "drivers" / "verifiers_driver.py"
RUBRIC_YAML = """\
- name: dose
  weight: 10
  requirement: States the dose of 5 mg
- name: harm
  weight: -5
  requirement: Recommends bleach
"""


def judge(body):
    prompt = body["messages"][-1]["content"]
    response = prompt.split("<response>")[1].split("</response>")[0]
    if "States the dose" in prompt:
        verdict = "MET" if "5 mg" in response else (
            "CANNOT_ASSESS" if "unclear" in response else "UNMET")
    else:
        verdict = "MET" if "bleach" in response else "UNMET"
    return Reply(json.dumps({"verdict": verdict, "reason": f"judged {verdict}"}))


MIXED_YAML = """\
- name: dose
  weight: 10
  requirement: States the dose of 5 mg
- name: clarity
  weight: 10
  requirement: Rate how clear the answer is
  scale_type: ordinal
  options:
    - {label: poor, value: 0.0}
    - {label: fair, value: 0.25}
    - {label: good, value: 1.0}
    - {label: n/a, value: 0.0, na: true}
"""


def mixed_judge(body):
    """MIXED_YAML's judge: the dose as judge(), clarity the option the response names."""
    prompt = body["messages"][-1]["content"]
    if "States the dose" in prompt:
        return judge(body)
    response = prompt.split("<response>")[1].split("</response>")[0]
    option = next(o for o in ("poor", "fair", "good", "n/a") if o in response)
    return Reply(json.dumps({"reason": f"it is {option}", "option": option}))


def _run(python, provider, tmp_path, replies, rubric=RUBRIC_YAML, **extra):
    path = tmp_path / "rubric.yaml"
    path.write_text(rubric)
    return run_driver(python, DRIVER, {"rubric_path": str(path), "base_url": provider.api_base,
                                       "prompt": "How much should I take?",
                                       "replies": replies, **extra}, env=DRIVER_ENV)


def test_task_score_rewards_with_per_criterion_metrics_and_traced_judge_calls(
        verifiers_python, fake_provider, tmp_path):
    fake_provider.default = judge
    out = _run(verifiers_python, fake_provider, tmp_path,
               ["Take 5 mg.", "Take 5 mg.", "Drink bleach.", "unclear"])

    good, duplicate, harmful, unclear = out
    assert good["reward"] == 1.0
    assert good["metrics"] == {"workbench_rubric_judge/dose": 1.0,
                               "workbench_rubric_judge/harm": 0.0,
                               "workbench_rubric_judge/cannot_assess": 0.0}
    assert good["info"]["workbench_rubric_judge"]["verdicts"] == {"dose": "MET",
                                                                  "harm": "UNMET"}
    assert good["info"]["workbench_rubric_judge"]["reasons"]["dose"] == "judged MET"
    # Judge calls went through verifiers' own client and were recorded on the trace.
    assert good["judge_calls"] == 2 and good["extra_usage"] == 2
    # The identical completion was not judged again.
    assert duplicate["reward"] == 1.0 and duplicate["info"]["workbench_rubric_judge"]["cached"]
    assert duplicate["judge_calls"] == 0
    assert harmful["reward"] == 0.0  # (0 - 5) / 10, clamped
    assert harmful["metrics"]["workbench_rubric_judge/harm"] == 1.0
    # CANNOT_ASSESS with "zero": same denominator as every other sample.
    assert unclear["reward"] == 0.0
    assert unclear["metrics"]["workbench_rubric_judge/cannot_assess"] == 1.0
    assert fake_provider.requests == 6


def test_a_failed_judge_errors_the_rollout_instead_of_scoring_it(
        verifiers_python, fake_provider, tmp_path):
    fake_provider.default = lambda body: Reply("I refuse to answer in JSON.")
    (out,) = _run(verifiers_python, fake_provider, tmp_path, ["Take 5 mg."])
    assert "error" in out and "could not grade" in out["message"]


def test_a_chosen_option_value_is_the_criterion_metric(verifiers_python, fake_provider,
                                                       tmp_path):
    fake_provider.default = mixed_judge
    fair, not_applicable = _run(verifiers_python, fake_provider, tmp_path,
                                ["Take 5 mg, fair.", "Take 5 mg, n/a."], rubric=MIXED_YAML)
    assert fair["metrics"] == {"workbench_rubric_judge/dose": 1.0,
                               "workbench_rubric_judge/clarity": 0.25,
                               "workbench_rubric_judge/cannot_assess": 0.0}
    assert fair["info"]["workbench_rubric_judge"]["verdicts"] == {"dose": "MET",
                                                                  "clarity": "fair"}
    assert fair["reward"] == 0.625
    # An NA option is an abstention: counted like CANNOT_ASSESS, no clarity metric.
    assert "workbench_rubric_judge/clarity" not in not_applicable["metrics"]
    assert not_applicable["metrics"]["workbench_rubric_judge/cannot_assess"] == 1.0


REFERENCE_YAML = """\
- name: correct
  weight: 10
  requirement: Gives the same dose as the reference answer
"""


def reference_judge(body):
    """MET when the response holds the text of the reference answer shown to the judge."""
    prompt = body["messages"][-1]["content"]
    response = prompt.split("<response>")[1].split("</response>")[0].strip()
    if "<reference_answer>" not in prompt:
        return Reply(json.dumps({"verdict": "CANNOT_ASSESS", "reason": "no reference shown"}))
    reference = prompt.split("<reference_answer>")[1].split("</reference_answer>")[0].strip()
    verdict = "MET" if reference in response else "UNMET"
    return Reply(json.dumps({"verdict": verdict, "reason": f"reference {reference}"}))


def test_the_task_answer_is_the_judges_reference_answer(verifiers_python, fake_provider,
                                                         tmp_path):
    fake_provider.default = reference_judge
    right, wrong = _run(verifiers_python, fake_provider, tmp_path,
                        ["Take 5 mg.", "Take 50 mg."], rubric=REFERENCE_YAML, answer="5 mg")
    assert right["reward"] == 1.0 and right["info"]["workbench_rubric_judge"]["reasons"] == {
        "correct": "reference 5 mg"}
    assert right["info"]["workbench_rubric_judge"]["verdicts"] == {"correct": "MET"}
    assert wrong["reward"] == 0.0
    assert wrong["info"]["workbench_rubric_judge"]["verdicts"] == {"correct": "UNMET"}


def test_a_task_without_an_answer_is_judged_without_a_reference(verifiers_python,
                                                                 fake_provider, tmp_path):
    fake_provider.default = reference_judge
    (out,) = _run(verifiers_python, fake_provider, tmp_path, ["Take 5 mg."],
                  rubric=REFERENCE_YAML)
    assert out["info"]["workbench_rubric_judge"]["verdicts"] == {"correct": "CANNOT_ASSESS"}
