"""The trust report's pairwise order effect from real comparisons (fake provider, real
HTTP, both orders asked): a judge scripted to always prefer the response shown first is
caught, a judge that reads the responses is not; the figures reach the Agreement report's
JSON (``rubric-workbench agreement --format json``: ``trust.pairwise_order``)."""

from __future__ import annotations

import asyncio
import json

import pytest
from statsmodels.stats.proportion import proportion_confint

from storage import cli
from storage.jobs.comparison_runner import run_comparison
from storage.services import comparisons, datasets, trust_json, trust_report
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.fake_provider import judge_reply
from tests.jobs.helpers import CRITERIA, make_dataset, make_rubric, make_run, run_now

PAIRS = 12
FAST = {"retry_base_delay": 0.001, "retry_max_delay": 0.01}


def _compare(sessions, fake, version: int, a: int, b: int, model: str) -> int:
    made = comparisons.create_comparison(
        sessions, rubric_version_id=version, a=Source(a), b=Source(b), model=model,
        settings={"api_base": fake.api_base, "timeout": 10.0}, actor=ADMIN)
    ended = asyncio.run(run_comparison(sessions, made.id, actor=ADMIN, **FAST))
    assert (ended.status, ended.done_count) == ("done", PAIRS)
    return made.id


def test_a_judge_always_preferring_the_first_shown_response_is_caught(
        sessions, fake_provider, db_url, capsys):
    version = make_rubric(sessions).id
    dataset, _ = make_dataset(sessions, PAIRS)
    other = datasets.create_dataset(sessions, "Rewritten", actor=ADMIN, responses=[
        {"id": f"r{i}", "query": f"question {i}", "text": f"a longer rewritten answer {i}"}
        for i in range(PAIRS)]).id

    def reply(body: dict):
        if "<response_b>" in body["messages"][-1]["content"] and body["model"] == "first":
            return json.dumps({"reason": "the first one", "preference": "A"})
        return judge_reply(body)  # the other judge prefers the longer response

    fake_provider.default = reply
    biased = _compare(sessions, fake_provider, version, dataset.id, other, "openai/first")
    fair = _compare(sessions, fake_provider, version, dataset.id, other, "openai/fake-judge")
    run = make_run(sessions, version, dataset.id, fake_provider.api_base,
                   model="openai/first")
    assert run_now(sessions, run.id).status == "done"

    report = trust_report.trust_report(sessions, version, dataset.id)
    found = {p.model: p for p in report.pairwise}
    assert set(found) == {"openai/first", "openai/fake-judge"}
    units = PAIRS * len(CRITERIA)
    first = found["openai/first"]
    assert first.comparisons == (biased,)
    low, high = proportion_confint(units, units, alpha=0.05, method="wilson")
    figure = first.order.first_shown
    assert (figure.value, figure.n) == (pytest.approx(0.5), units)
    assert (figure.low, figure.high) == (pytest.approx(low - 0.5), pytest.approx(high - 0.5))
    assert first.order.consistency.value == 0.0 and first.order.both_first == units
    reads = found["openai/fake-judge"].order
    assert reads.first_shown.value == 0.0 and reads.first_shown.low < 0 < reads.first_shown.high
    assert reads.consistency.value == 1.0 and reads.consistency.n == units
    assert found["openai/fake-judge"].comparisons == (fair,)
    # the run of the same model carries it, and its verdict says so
    judge = report.judge(f"run:{run.id}")
    assert judge.pairwise_order == first.order
    assert "first-shown response favoured in comparisons: +0.50 share of picks" in judge.verdict

    data = trust_json.trust_json(report)
    [run_json] = [j for j in data["judges"] if j["source"] == f"run:{run.id}"]
    assert run_json["pairwise_order"]["cant_tell_yet"] is False
    assert cli.main(["agreement", "--dataset", "Answers", "--rubric", "Dosing", "--format",
                     "json", "--db", db_url]) == 0
    printed = json.loads(capsys.readouterr().out)["trust"]["pairwise_order"]
    [biased_json] = [p for p in printed if p["model"] == "openai/first"]
    assert biased_json["comparisons"] == [biased]
    assert biased_json["first_shown_preferred_minus_chance"]["value"] == pytest.approx(0.5)
    assert biased_json["first_shown_preferred_minus_chance"]["ci95"][0] > 0
    assert biased_json["position_consistency"] == {"value": 0.0, "ci95": [
        0.0, pytest.approx(first.order.consistency.high)], "n": units}
    assert biased_json["pair_criteria_answered"] == units


def test_a_dataset_without_comparisons_has_no_pairwise_figures(sessions, fake_provider):
    version = make_rubric(sessions).id
    dataset, _ = make_dataset(sessions, 3)
    run = make_run(sessions, version, dataset.id, fake_provider.api_base)
    assert run_now(sessions, run.id).status == "done"
    report = trust_report.trust_report(sessions, version, dataset.id)
    assert report.pairwise == () and report.judge(f"run:{run.id}").pairwise_order is None
    assert trust_json.trust_json(report)["pairwise_order"] == []
