"""The human baseline over verdict patterns (issue 41) == the baseline computed before, one
response and one figure at a time (tests/storage/baseline_before.py), field for field."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from grading.bootstrap import percentile_interval, percentile_interval_array
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.services import human_baseline
from storage.services.agreement_sources import HUMAN, AgreementData, AgreementSource
from storage.services.baseline_patterns import unique_rows
from storage.services.baseline_resampler import Draws, Resampler
from tests.storage.baseline_before import build_baseline as before

V = Verdict


def _source(key: str) -> AgreementSource:
    return AgreementSource(key=key, label=key, run_id=int(key.split(":")[1]), grader="x",
                           model="m", status="done", per_criterion=True, verdict_count=1,
                           grades=1, failed=0, total_tokens=0, cost=None,
                           unknown_cost_count=0)


def _world(seed: int, reviewers: int, n: int = 50, criteria: int = 3,
           none_verdicts: bool = False) -> AgreementData:
    """Reviewers and judges noisy around a truth on several criteria: gaps, CANNOT_ASSESS,
    a reviewer missing a whole criterion, judges on responses nobody reviewed, a verdict in
    force where the reviewers agreed (or one adjudicated)."""
    rng = random.Random(seed)
    cids = list(range(10, 10 + criteria))
    truth = {(rid, c): rng.choice([V.MET, V.UNMET]) for rid in range(n) for c in cids}

    def noisy(rate, keys, gaps):
        out = {}
        for key in keys:
            if rng.random() < gaps:
                continue
            value = truth[key]
            if rng.random() < 0.06:
                value = V.CANNOT_ASSESS
            elif rng.random() < rate:
                value = V.UNMET if value is V.MET else V.MET
            if none_verdicts and rng.random() < 0.03:
                value = None
            out[key] = value
        return out

    reviewed = [k for k in truth if k[0] < n * 2 // 3]
    people = {f"p{i}": noisy(0.1 + 0.1 * i, reviewed, 0.2) for i in range(reviewers)}
    if reviewers > 1:  # the last reviewer left the first criterion alone
        people[f"p{reviewers - 1}"] = {k: v for k, v in people[f"p{reviewers - 1}"].items()
                                       if k[1] != cids[0]}
    judges = {f"run:{j}": noisy(0.05 + 0.15 * j, truth, 0.02) for j in range(1, 4)}
    final = {}
    for key in reviewed:
        said = {p[key] for p in people.values() if p.get(key) is not None}
        if len(said) == 1:
            final[key] = said.pop()
        elif said and rng.random() < 0.5:
            final[key] = rng.choice(sorted(said))
    return AgreementData(
        rubric_version_id=1, dataset_id=1,
        criteria=tuple(CriterionInfo(c, i, f"c{c}", "req", 1.0, None)
                       for i, c in enumerate(cids)),
        response_labels={rid: f"r{rid}" for rid in range(n)},
        sources=tuple(_source(k) for k in judges),
        verdicts={**judges, HUMAN: final}, reasons={}, judge_scores={}, human_scores={},
        reviewed_responses=n, fully_reviewed_responses=n,
        reviewer_verdicts=people, reviewer_names={k: k.upper() for k in people},
        reviewer_seconds={"p0": {0: 10.0, 1: 30.0}})


@pytest.mark.parametrize("reviewers", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_baseline_over_patterns_equals_the_baseline_response_by_response(seed, reviewers):
    data = _world(seed, reviewers)
    found = human_baseline.build_baseline(data)
    assert found == before(data)
    assert repr(found) == repr(before(data))  # the same floats, not merely equal ones
    if reviewers >= 2:
        row = found.criteria[1]
        assert row.among.interval is not None and row.judges[0].loo_f1.interval is not None
        assert found.reviewers[0].vs_final_kappa_interval is not None


@pytest.mark.parametrize("seed", [3, 4])
def test_none_and_spelled_verdicts_count_as_they_did(seed):
    """A None verdict (no verdict) and a verdict given as a string: the fallbacks for values
    that are not Verdicts give the same baseline as before."""
    data = _world(seed, 2, none_verdicts=True)
    assert human_baseline.build_baseline(data) == before(data)
    first = next(iter(data.reviewer_verdicts))
    spelled = {k: (v.value if isinstance(v, Verdict) and k[0] % 3 == 0 else v)
               for k, v in data.reviewer_verdicts[first].items()}
    data = AgreementData(**{**data.__dict__,
                            "reviewer_verdicts": {**data.reviewer_verdicts, first: spelled}})
    assert repr(human_baseline.build_baseline(data)) == repr(before(data))


def test_too_few_responses_give_the_same_figures_without_intervals():
    for n in (1, 2):
        data = _world(5, 2, n=n, criteria=1)
        assert human_baseline.build_baseline(data) == before(data)


def test_grouped_weights_are_the_sums_of_their_responses_draws():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 7, 300)
    groups[:7] = np.arange(7)  # every group has a response
    draws = Draws()
    boot = Resampler.grouped(groups, 7, draws)
    per_item = draws.weights(300).astype(np.int64)
    expected = np.stack([per_item[:, groups == g].sum(axis=1) for g in range(7)], axis=1)
    assert (boot.weights == expected).all()
    assert (draws.weights(300) == Resampler(list(range(300))).weights).all()


@pytest.mark.parametrize("shape", [(50, 3), (200, 7), (40, 30)])  # 30 columns: too wide
def test_unique_rows_are_numpys(shape):
    found = np.random.default_rng(shape[1]).integers(0, 5, shape)
    rows, groups = unique_rows(found)
    expected = np.unique(found, axis=0)
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, expected.tolist()))
    assert (rows[groups] == found).all()


def test_the_array_percentile_interval_is_the_list_one():
    rng = np.random.default_rng(0)
    for _ in range(200):
        values = rng.integers(0, 40, 1000) / rng.integers(1, 40, 1000)
        values[rng.random(1000) < rng.random() * 0.7] = np.nan
        listed = [None if math.isnan(v) else v for v in values.tolist()]
        assert repr(percentile_interval_array(values, resamples=1000)) == repr(
            percentile_interval(listed, resamples=1000))


def test_a_multi_choice_criterion_beside_them_changes_nothing():
    """Option labels (strings) in the same maps, on a criterion the baseline leaves out:
    the binary criteria's figures are the ones computed before."""
    from grading import CriterionOption

    data = _world(6, 2)
    likert = tuple(CriterionOption(label=f"{i}", value=i / 4) for i in range(5))
    multi = CriterionInfo(99, 9, "clarity", "How clear?", 1.0, None, options=likert,
                          scale_type="ordinal")
    rng = random.Random(6)

    def with_labels(verdicts):
        return {**verdicts, **{(rid, 99): rng.choice(likert).label for rid in range(40)}}

    data = AgreementData(**{
        **data.__dict__, "criteria": (*data.criteria, multi),
        "verdicts": {k: with_labels(v) for k, v in data.verdicts.items()},
        "reviewer_verdicts": {k: with_labels(v) for k, v in data.reviewer_verdicts.items()}})
    found = human_baseline.build_baseline(data)
    assert found.left_out == ("clarity",)
    assert repr(found) == repr(before(data))
