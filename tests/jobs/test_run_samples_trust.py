"""The trust report's stability from a run's own samples: a run asking the judge three times
per criterion (fake provider, real HTTP) is measured on the verdicts it stored, and the flip
rate, Fleiss' kappa (statsmodels) and noisy flag are recomputed here from the answers the
judge was scripted to give, not from the database."""

from __future__ import annotations

import random

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from storage.jobs import run_progress
from storage.services import trust_json, trust_report
from tests.jobs.helpers import (
    CRITERIA,
    make_dataset,
    make_rubric,
    make_run,
    run_now,
    sampled_judge,
)

RESPONSES = 30
FLIP = {CRITERIA[0].requirement: 0.05, CRITERIA[1].requirement: 0.4,
        CRITERIA[2].requirement: 0.0}


def _script(responses) -> dict[tuple[str, str], list[str]]:
    """Per (response, criterion): three verdicts, each flipping from a fixed truth with the
    criterion's probability."""
    rng = random.Random(5)
    script = {}
    for i in range(len(responses)):
        for requirement, flip in FLIP.items():
            truth = rng.choice(["MET", "UNMET"])
            script[f"answer number {i}", requirement] = [
                ("UNMET" if truth == "MET" else "MET") if rng.random() < flip else truth
                for _ in range(3)]
    return script


def test_stability_comes_from_the_runs_own_samples(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, RESPONSES)
    script = _script(responses)
    fake_provider.default = sampled_judge(lambda key, k: script[key][k])
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=3,
                   temperature=1.0)
    run_now(sessions, run.id)
    assert fake_provider.requests == RESPONSES * 3 * 3

    # a second run with the same settings replays the same three samples from the cache
    again = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=3,
                     temperature=1.0)
    run_now(sessions, again.id)
    assert run_progress(sessions, again.id).provider_calls == 0

    report = trust_report.trust_report(sessions, version.id, dataset.id)
    for run_id in (run.id, again.id):
        judge = report.judge(f"run:{run_id}")
        assert (judge.samples, judge.samples_per_criterion) == ((run_id,), 3)
        assert judge.stability_measured and "across 3 samples" in judge.verdict
        for row, criterion in zip(judge.criteria, CRITERIA, strict=True):
            rows = [script[f"answer number {i}", criterion.requirement]
                    for i in range(RESPONSES)]
            coded = np.array([[1 if v == "MET" else 0 for v in r] for r in rows])
            flips = sum(len(set(r)) > 1 for r in rows)
            stability = row.stability
            assert stability.samples == 3
            assert stability.flip_rate.n == RESPONSES
            assert stability.flip_rate.value == pytest.approx(flips / RESPONSES)
            table, _ = aggregate_raters(coded)
            expected = sm_fleiss_kappa(table, method="fleiss")
            assert stability.fleiss_kappa.value == pytest.approx(expected)
            variance = coded.var(axis=1).mean()
            assert stability.mean_variance == pytest.approx(variance)
            assert stability.noisy is bool(variance > 0.05)
    _accurate, cites, harmful = report.judge(f"run:{run.id}").criteria
    assert cites.stability.noisy and not harmful.stability.noisy  # the script's intent
    assert harmful.stability.flip_rate.value == 0.0

    data = trust_json.trust_json(report)
    [first] = [j for j in data["judges"] if j["source"] == f"run:{run.id}"]
    assert first["samples_per_criterion"] == 3
    assert first["criteria"][1]["stability"]["samples"] == 3


def test_a_run_asked_once_keeps_the_runs_as_samples_rule(sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 5)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    run_now(sessions, run.id)
    judge = trust_report.trust_report(sessions, version.id, dataset.id).judge(f"run:{run.id}")
    assert judge.samples_per_criterion == 1 and not judge.stability_measured
    assert all(r.stability is None for r in judge.criteria)
