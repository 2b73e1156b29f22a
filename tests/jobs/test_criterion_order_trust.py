"""The trust report's criterion-order effect from a real shuffled one-shot run (fake
provider, real HTTP): a judge scripted to favour the criteria listed first is caught, and
each figure is recomputed here with statsmodels (Newcombe's interval) from the prompts the
judge was sent and the answers it was scripted to give, not from the database."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from storage import cli
from storage.services import trust_json, trust_report
from tests.jobs.helpers import CRITERIA, make_dataset, make_rubric, make_run, run_now

RESPONSES = 90
MET_RATE = {1: 0.85, 2: 0.55, 3: 0.25}  # by the place listed at: a strong primacy effect


def _listed(prompt: str) -> list[str]:
    block = prompt[prompt.index("<criteria>"):prompt.index("</criteria>")]
    return re.findall(r'<criterion number="\d+"[^>]*>\n(.+)\n</criterion>', block)


def test_a_judge_favouring_the_first_listed_criteria_is_caught(sessions, fake_provider,
                                                              db_url, capsys):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, RESPONSES)
    said: dict[tuple[str, str], tuple[int, float]] = {}  # (response, requirement) -> seen

    def judge(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if "<criteria>" not in prompt:  # the per-criterion run's calls
            return json.dumps({"verdict": "MET", "reason": "r"})
        response = prompt[prompt.index("answer number "):].split("\n", 1)[0]
        rng = random.Random(response)
        entries = []
        for n, requirement in enumerate(_listed(prompt), start=1):
            met = rng.random() < MET_RATE[n]
            said[response, requirement] = (n, 1.0 if met else 0.0)
            entries.append({"number": n, "reason": "r", "verdict": "MET" if met else "UNMET"})
        return json.dumps({"criteria": entries})

    fake_provider.default = judge
    shuffled = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                        grader="one_shot", shuffle_criteria=True)
    plain = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                     grader="per_criterion")
    for run in (shuffled, plain):
        assert run_now(sessions, run.id).status == "done"

    report = trust_report.trust_report(sessions, version.id, dataset.id)
    judge_trust = report.judge(f"run:{shuffled.id}")
    for row, criterion in zip(judge_trust.criteria, CRITERIA, strict=True):
        seen = [said[f"answer number {i}", criterion.requirement] for i in range(RESPONSES)]
        early = np.array([v for n, v in seen if n == 1])
        late = np.array([v for n, v in seen if n == 3])
        low, high = confint_proportions_2indep(int(late.sum()), len(late),
                                               int(early.sum()), len(early),
                                               method="newcomb", compare="diff")
        effect = row.criterion_order
        assert effect.listed == 3
        assert (effect.early.n, effect.late.n) == (len(early), len(late))
        figure = effect.late_minus_early
        assert figure.value == pytest.approx(late.mean() - early.mean())
        assert (figure.low, figure.high) == (pytest.approx(low), pytest.approx(high))
        assert figure.n == len(early) + len(late)
        assert figure.high < 0  # the injected effect (-0.6) is found on every criterion
    assert "judged lower when listed late" in judge_trust.verdict
    # the per-criterion run never listed the criteria together: nothing to measure
    assert all(r.criterion_order is None for r in report.judge(f"run:{plain.id}").criteria)

    data = trust_json.trust_json(report)
    [first] = [j for j in data["judges"] if j["source"] == f"run:{shuffled.id}"]
    order = first["criteria"][0]["criterion_order"]
    assert order["criteria_listed"] == 3 and order["cant_tell_yet"] is False
    assert order["late_minus_early"]["value"] == pytest.approx(
        judge_trust.criteria[0].criterion_order.late_minus_early.value)
    [other] = [j for j in data["judges"] if j["source"] == f"run:{plain.id}"]
    assert other["criteria"][0]["criterion_order"] is None

    assert cli.main(["agreement", "--dataset", "Answers", "--rubric", "Dosing", "--format",
                     "json", "--db", db_url]) == 0
    printed = json.loads(capsys.readouterr().out)["trust"]
    [first] = [j for j in printed["judges"] if j["source"] == f"run:{shuffled.id}"]
    assert first["criteria"][2]["criterion_order"]["late_minus_early"]["ci95"][1] < 0


def test_a_few_shuffled_responses_cannot_tell_yet(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 6)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base,
                   grader="one_shot", shuffle_criteria=True)
    assert run_now(sessions, run.id).status == "done"
    judge = trust_report.trust_report(sessions, version.id, dataset.id).judge(
        f"run:{run.id}")
    for row in judge.criteria:
        assert not row.criterion_order.enough
        assert row.criterion_order.late_minus_early.value is None
        assert row.criterion_order.early.n + row.criterion_order.late.n <= 6
    assert "criterion order: can't tell yet" in judge.verdict
