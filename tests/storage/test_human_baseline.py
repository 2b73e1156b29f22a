"""The human baseline, checked against scikit-learn and the krippendorff package on generated
verdicts; and end to end through the database and `rubric-workbench agreement`."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

from grading.types import ScoringSettings, Verdict
from storage import cli
from storage.dto import CriterionInfo
from storage.services import agreement, human_baseline, reviews, runs
from storage.services.agreement import HUMAN, AgreementData, AgreementSource
from storage.services.reviewers import local_actor
from tests.storage.helpers import CRITERIA, judge_report, make_dataset, make_rubric, make_run

V = Verdict
CLASSES = [V.MET, V.UNMET]


def _source(key: str) -> AgreementSource:
    return AgreementSource(key=key, label=key, run_id=int(key.split(":")[1]), grader="x",
                           model="m", status="done", per_criterion=True, verdict_count=1,
                           grades=1, failed=0, total_tokens=0, cost=None,
                           unknown_cost_count=0)


def _generated(reviewers: int, seed: int, n: int = 60):
    """Reviewers who mostly agree with a truth, a good and a noisy judge, some CANNOT_ASSESS
    and some gaps; criterion 1 only."""
    rng = random.Random(seed)
    truth = {rid: rng.choice(CLASSES) for rid in range(n)}

    def noisy(rate, gaps=0.1):
        out = {}
        for rid, v in truth.items():
            if rng.random() < gaps:
                continue
            if rng.random() < 0.05:
                out[rid] = V.CANNOT_ASSESS
            elif rng.random() < rate:
                out[rid] = V.UNMET if v is V.MET else V.MET
            else:
                out[rid] = v
        return out

    people = {f"p{i}": noisy(0.1 + 0.05 * i) for i in range(reviewers)}
    judges = {"run:1": noisy(0.05, gaps=0), "run:2": noisy(0.4, gaps=0)}
    final = {}
    for rid in truth:
        said = {p[rid] for p in people.values() if rid in p}
        if len(said) == 1:
            final[rid] = said.pop()
    key = lambda m: {(rid, 1): v for rid, v in m.items()}  # noqa: E731
    data = AgreementData(
        rubric_version_id=1, dataset_id=1,
        criteria=(CriterionInfo(1, 0, "c", "req", 1.0, None),),
        response_labels={rid: f"r{rid}" for rid in truth},
        sources=tuple(_source(k) for k in judges),
        verdicts={**{k: key(v) for k, v in judges.items()}, HUMAN: key(final)},
        reasons={}, judge_scores={}, human_scores={}, reviewed_responses=n,
        fully_reviewed_responses=n,
        reviewer_verdicts={k: key(v) for k, v in people.items()},
        reviewer_names={k: k.upper() for k in people},
        reviewer_seconds={"p0": {0: 10.0, 1: 30.0, 2: 20.0}},
    )
    return data, people, judges, final


def _pairs(a: dict, b: dict):
    keys = [k for k in a if k in b and a[k] in CLASSES and b[k] in CLASSES]
    return [a[k].value for k in keys], [b[k].value for k in keys]


WORDS = {"above": "above the people", "below": "below the people",
         "inside": "inside the people", "unclear": "can't tell yet"}


def _expected_position(judge, people_f1) -> str:
    """The rule, stated plainly: above / below only when the judge's 95% interval clears
    every reviewer's; inside only when it lies within 0.05 of the people's figures."""
    people = [f for f in people_f1.values() if f.value is not None]
    low, high = judge.interval.low, judge.interval.high
    if low > max(f.interval.high for f in people):
        return "above"
    if high < min(f.interval.low for f in people):
        return "below"
    if (low >= min(f.value for f in people) - 0.05
            and high <= max(f.value for f in people) + 0.05):
        return "inside"
    return "unclear"


@pytest.mark.parametrize("seed", range(5))
def test_two_reviewers_kappa_percent_and_leave_one_out_match_scikit_learn(seed):
    data, people, judges, final = _generated(2, seed)
    [row] = human_baseline.build_baseline(data).criteria
    a, b = _pairs(people["p0"], people["p1"])
    assert row.method == "kappa" and row.among.n == len(a)
    assert row.among.value == pytest.approx(cohen_kappa_score(a, b))
    assert row.percent.value == pytest.approx(100 * accuracy_score(a, b))
    # leave-one-out with two people: each one against the other
    assert row.people_f1["p1"].value == pytest.approx(f1_score(a, b, average="macro"))
    assert row.people_f1["p0"].value == pytest.approx(f1_score(b, a, average="macro"))
    for judge in row.judges:
        scores = []
        for left, other in (("p0", "p1"), ("p1", "p0")):
            reference = {k: v for k, v in people[other].items()
                         if v in CLASSES and k in people[left]}
            truth, said = _pairs(reference, judges[judge.source_key])
            scores.append(f1_score(truth, said, average="macro"))
        assert judge.loo_f1.value == pytest.approx(sum(scores) / 2)
        truth, said = _pairs(final, judges[judge.source_key])
        assert judge.vs_human.cohens_kappa == pytest.approx(cohen_kappa_score(truth, said))
        expected = _expected_position(judge.loo_f1, row.people_f1)
        assert judge.position == expected and WORDS[expected] in judge.sentence


@pytest.mark.parametrize("seed", range(5))
def test_three_reviewers_alpha_matches_krippendorff_and_majority_is_the_reference(seed):
    data, people, _judges, _final = _generated(3, seed)
    baseline = human_baseline.build_baseline(data)
    [row] = baseline.criteria
    keys = sorted(people)
    units = sorted({rid for p in people.values() for rid in p})
    table = np.array([[{V.MET: 1.0, V.UNMET: 0.0}.get(people[k].get(u), np.nan)
                       for u in units] for k in keys])
    assert row.method == "alpha"
    assert row.among.value == pytest.approx(krippendorff.alpha(
        reliability_data=table, level_of_measurement="nominal"))
    # p0 against the majority of p1 and p2 (ties left out)
    reference = {}
    for rid in people["p0"]:
        votes = Counter(people[k][rid] for k in ("p1", "p2")
                        if rid in people[k] and people[k][rid] in CLASSES)
        top = votes.most_common()
        if top and (len(top) == 1 or top[0][1] > top[1][1]):
            reference[rid] = top[0][0]
    truth, said = _pairs(reference, people["p0"])
    assert row.people_f1["p0"].value == pytest.approx(f1_score(truth, said, average="macro"))
    good = next(j for j in row.judges if j.source_key == "run:1")
    noisy = next(j for j in row.judges if j.source_key == "run:2")
    assert good.loo_f1.value > noisy.loo_f1.value
    low, _high = row.people_range
    assert low == min(f.value for f in row.people_f1.values())
    for judge in (good, noisy):
        expected = _expected_position(judge.loo_f1, row.people_f1)
        assert judge.position == expected and WORDS[expected] in judge.sentence
    [p0, *_] = baseline.reviewers
    assert (p0.name, p0.median_seconds, p0.timed_responses) == ("P0", 20.0, 3)


def _seed_two_reviewers(sessions, judged: bool = False):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=4)
    run = make_run(sessions, version.id, dataset.id)
    if judged:  # the judge says what ana says, except once
        for i, response in enumerate(responses):
            said = [V.MET if ((i + j) % 2 == 1) != ((i, j) == (1, 0)) else V.UNMET
                    for j in range(len(CRITERIA))]
            runs.record_grade(sessions, run.id, response.id, judge_report(
                CRITERIA, said, ScoringSettings(), response.output))
    ana, bo = local_actor("ana"), local_actor("bo")
    for i, response in enumerate(responses):
        for j, criterion in enumerate(version.criteria):
            verdict = "MET" if (i + j) % 2 else "UNMET"
            reviews.set_human_verdict(sessions, actor=ana, response_id=response.id,
                                      criterion_id=criterion.id, verdict=verdict,
                                      review_seconds=10.0 + i)
            other = verdict if i != 3 else ("UNMET" if verdict == "MET" else "MET")
            reviews.set_human_verdict(sessions, actor=bo, response_id=response.id,
                                      criterion_id=criterion.id, verdict=other)
    return version, dataset, responses


def test_the_database_gives_each_reviewers_verdicts_and_disputes_are_not_final(sessions):
    version, dataset, responses = _seed_two_reviewers(sessions)
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    assert set(data.reviewer_verdicts) == {"ana", "bo"}
    assert len(data.reviewer_verdicts["ana"]) == 16
    # response 4: the two disagree everywhere, so it has no final human verdict
    assert not any(rid == responses[3].id for rid, _c in data.verdicts[HUMAN])
    baseline = human_baseline.build_baseline(data)
    ana = next(r for r in baseline.reviewers if r.key == "ana")
    assert ana.median_seconds == pytest.approx(11.5) and ana.verdicts == 16
    assert ana.vs_final.percent_agreement == pytest.approx(100.0)
    assert ana.vs_final.pairs_used == 12


def test_a_reviewer_is_named_by_the_name_of_their_newest_verdict(sessions):
    from storage.services.reviewers import Actor, Role

    version, dataset, responses = _seed_two_reviewers(sessions)
    renamed = Actor(key="ana", name="Ana Lima", roles=frozenset({Role.REVIEWER}))
    # a change on the FIRST response, saved last: the order of the rows is not the order of
    # the saves
    criterion = version.criteria[0]
    reviews.set_human_verdict(sessions, actor=renamed, response_id=responses[0].id,
                              criterion_id=criterion.id, verdict="CANNOT_ASSESS")
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    assert data.reviewer_names["ana"] == "Ana Lima"
    baseline = human_baseline.build_baseline(data)
    assert next(r for r in baseline.reviewers if r.key == "ana").name == "Ana Lima"


def test_agreement_command_prints_the_per_criterion_figures_as_json(sessions, db_url, capsys):
    version, _dataset, _responses = _seed_two_reviewers(sessions, judged=True)
    status = cli.main(["agreement", "--dataset", "Answers", "--rubric", "Dosing:1",
                       "--format", "json", "--db", db_url])
    out = capsys.readouterr()
    assert status == 0, out.err
    report = json.loads(out.out)
    assert [c["criterion"] for c in report["criteria"]] == [c.label for c in version.criteria]
    first = report["criteria"][0]
    assert first["reviewers"]["count"] == 2 and first["reviewers"]["method"] == "kappa"
    percent = dict(first["reviewers"]["percent_agreement"])
    low, high = percent.pop("ci95")  # a 95% bootstrap interval around the figure
    assert percent == {"value": 75.0, "n": 4, "note": ""}
    assert 0 <= low <= 75.0 <= high <= 100
    assert {r["reviewer"] for r in report["reviewers"]} == {"ana", "bo"}
    # per reviewer: verdicts given, median time per response, agreement with the final one
    ana = next(r for r in report["reviewers"] if r["reviewer"] == "ana")
    assert (ana["verdicts"], ana["responses"], ana["median_seconds_per_response"],
            ana["timed_responses"]) == (16, 4, 11.5, 4)
    assert (ana["vs_final_verdict"]["percent_agreement"], ana["vs_final_verdict"]["n"]) == (
        100.0, 12)
    for reviewer in report["reviewers"]:
        final = reviewer["vs_final_verdict"]
        low, high = final["percent_agreement_ci95"]
        assert low <= final["percent_agreement"] <= high
    # each judge against the human verdict in force and against the people, with n and
    # intervals
    for row in report["criteria"]:
        [judge] = row["judges"]
        versus = judge["vs_human_verdict"]
        assert versus["n"] == 3 and versus["percent_agreement"] is not None
        assert "kappa_ci95" in versus and "macro_f1_ci95" in versus
        assert judge["leave_one_out_macro_f1"]["n"] > 0
        # n=4: the intervals cover everything, so nothing is claimed (issue 35.3)
        assert judge["position"] == "unclear"
        assert re.search(r"can't tell yet .*\(n=\d+; need about \d+ reviewed responses\)",
                         judge["sentence"]), judge["sentence"]
        assert judge["responses_needed"] > 4
    [accurate] = [r["judges"][0] for r in report["criteria"] if r["criterion"] == "accurate"]
    assert accurate["vs_human_verdict"]["percent_agreement"] == pytest.approx(200 / 3)
    agreement = first["reviewers"]["agreement"]
    low, high = agreement["ci95"]
    assert low <= agreement["value"] <= high
    assert cli.main(["agreement", "--dataset", "Answers", "--rubric", "Dosing:1",
                     "--format", "text", "--db", db_url]) == 0
    text = capsys.readouterr().out  # the text format carries the interval too
    assert f"[95% {low:.2f}, {high:.2f}]" in text.splitlines()[0]
    judged = [line for line in text.splitlines() if "the people's macro-F1" in line]
    # every figure with its n: the people's own figures too, as they are (two reviewers:
    # one number, not a "range")
    assert judged and all(re.search(r"the people's macro-F1: \d\.\d\d \[[^]]*\] \(each of "
                                    r"2 reviewers, n=\d+\)", line)
                          for line in judged), judged
    assert cli.main(["agreement", "--dataset", "Answers", "--rubric", "Nope",
                     "--db", db_url]) == 1
    assert "no rubric named 'Nope'" in capsys.readouterr().err


def _reference_interval(items: list[int], statistic) -> tuple[float, float]:
    """The interval computed straightforwardly: the same draws (numpy PCG64, the baseline's
    seed), the statistic recomputed on each resample by scikit-learn / krippendorff from
    the resampled responses, then numpy's percentiles (lower / higher, as the percentile
    bootstrap of grading/bootstrap.py)."""
    rng = np.random.default_rng(human_baseline.SEED)
    draws = rng.integers(0, len(items), size=(human_baseline.RESAMPLES, len(items)))
    values = [v for v in (statistic([items[i] for i in row]) for row in draws)
              if v is not None]
    return (float(np.percentile(values, 2.5, method="lower")),
            float(np.percentile(values, 97.5, method="higher")))


def _kappa_on(a: dict, b: dict):
    def statistic(sample):
        x = [a[r].value for r in sample if a.get(r) in CLASSES and b.get(r) in CLASSES]
        y = [b[r].value for r in sample if a.get(r) in CLASSES and b.get(r) in CLASSES]
        if not x or len(set(x) | set(y)) < 2:
            return None
        return cohen_kappa_score(x, y)
    return statistic


def _f1_on(a: dict, b: dict):
    def statistic(sample):
        x = [a[r].value for r in sample if a.get(r) in CLASSES and b.get(r) in CLASSES]
        y = [b[r].value for r in sample if a.get(r) in CLASSES and b.get(r) in CLASSES]
        if not x:
            return None
        present = sorted(set(x) | set(y))
        return f1_score(x, y, labels=present, average="macro", zero_division=np.nan)
    return statistic


def test_intervals_match_a_straightforward_bootstrap_on_the_same_resamples():
    data, people, judges, final = _generated(reviewers=2, seed=5, n=80)
    [row] = human_baseline.build_baseline(data).criteria
    items = sorted({rid for p in people.values() for rid in p} | set(final))

    kappa = row.among.interval
    assert (kappa.low, kappa.high) == pytest.approx(
        _reference_interval(items, _kappa_on(people["p0"], people["p1"])))
    assert kappa.low <= row.among.value <= kappa.high

    good = next(j for j in row.judges if j.source_key == "run:1")
    assert (good.vs_human_kappa_interval.low, good.vs_human_kappa_interval.high) == \
        pytest.approx(_reference_interval(items, _kappa_on(final, judges["run:1"])))
    assert (good.vs_human_f1_interval.low, good.vs_human_f1_interval.high) == \
        pytest.approx(_reference_interval(items, _f1_on(final, judges["run:1"])))

    # a reviewer's leave-one-out macro-F1: against the other reviewer (two reviewers)
    p0 = row.people_f1["p0"].interval
    reference = {rid: v for rid, v in people["p1"].items() if v in CLASSES}
    mine = {rid: people["p0"][rid] for rid in reference if rid in people["p0"]}
    assert (p0.low, p0.high) == pytest.approx(
        _reference_interval(items, _f1_on(reference, mine)))

    # the same data give the same intervals
    again = human_baseline.build_baseline(data).criteria[0]
    assert again.among.interval == kappa


def test_alpha_and_percent_intervals_match_a_straightforward_bootstrap():
    data, people, _judges, final = _generated(reviewers=3, seed=8, n=70)
    [row] = human_baseline.build_baseline(data).criteria
    items = sorted({rid for p in people.values() for rid in p} | set(final))
    keys = sorted(people)

    def alpha(sample):
        table = [[people[k][r].value == "MET" if people[k].get(r) in CLASSES else np.nan
                  for r in sample] for k in keys]
        table = np.array(table, dtype=float)
        pairable = (~np.isnan(table)).sum(axis=0) >= 2
        values = table[:, pairable]
        if pairable.sum() < 2 or len(set(values[~np.isnan(values)])) < 2:
            return None
        return krippendorff.alpha(reliability_data=values, level_of_measurement="nominal")

    def percent(sample):
        agree = total = 0
        for a, b in ((0, 1), (0, 2), (1, 2)):
            x, y = people[keys[a]], people[keys[b]]
            for r in sample:
                if x.get(r) in CLASSES and y.get(r) in CLASSES:
                    total += 1
                    agree += x[r] is y[r]
        return 100 * agree / total if total else None

    assert row.method == "alpha"
    assert (row.among.interval.low, row.among.interval.high) == pytest.approx(
        _reference_interval(items, alpha))
    assert (row.percent.interval.low, row.percent.interval.high) == pytest.approx(
        _reference_interval(items, percent))


def test_intervals_narrow_as_the_number_of_responses_grows():
    widths = []
    for n in (30, 120, 480):
        data, *_ = _generated(reviewers=2, seed=3, n=n)
        [row] = human_baseline.build_baseline(data).criteria
        interval = row.among.interval
        judge = row.judges[0].vs_human_kappa_interval
        widths.append((interval.high - interval.low, judge.high - judge.low))
    assert widths[0][0] > widths[1][0] > widths[2][0]
    assert widths[0][1] > widths[1][1] > widths[2][1]
    assert widths[2][0] < widths[0][0] / 2.5  # about 1/sqrt(n): a quarter of the n, half the width


def test_too_few_responses_give_no_interval_but_keep_the_figure():
    data, *_ = _generated(reviewers=2, seed=1, n=1)
    [row] = human_baseline.build_baseline(data).criteria
    assert row.among.interval is None


# -- issue 35.3: claim only what the intervals support ------------------------------------------
def _fig(value, low, high, n=4):
    from grading.bootstrap import Interval

    return human_baseline.Figure(value, n, "", Interval(low, high, 0.95, 1000, 0))


@pytest.mark.parametrize(("judge", "people", "position"), [
    pytest.param(_fig(0.55, 0.20, 0.90), [_fig(0.75, 0.40, 1.0)] * 2, "unclear",
                 id="n4-interval-covers-the-people"),
    pytest.param(_fig(0.95, 0.92, 0.98, 400), [_fig(0.70, 0.65, 0.75, 400)] * 2, "above",
                 id="clearly-above"),
    pytest.param(_fig(0.40, 0.35, 0.45, 400), [_fig(0.70, 0.65, 0.75, 400),
                                               _fig(0.80, 0.75, 0.85, 400)], "below",
                 id="clearly-below"),
    pytest.param(_fig(0.76, 0.73, 0.79, 900), [_fig(0.72, 0.69, 0.75, 900),
                                               _fig(0.78, 0.75, 0.81, 900)], "inside",
                 id="inside-to-within-the-margin"),
    pytest.param(_fig(0.60, 0.50, 0.70, 100), [_fig(0.75, 0.68, 0.82, 100)] * 2, "unclear",
                 id="point-below-but-intervals-overlap"),
])
def test_a_position_is_claimed_only_when_the_intervals_support_it(judge, people, position):
    people_f1 = {f"p{i}": f for i, f in enumerate(people)}
    decision = human_baseline.decide(judge, people_f1)
    assert decision.position == position
    assert (decision.needed is not None) == (position == "unclear")


def test_the_responses_needed_follow_the_square_root_rule():
    """Half-width 0.35 at n=4, the people 0.20 below at 0.75 with half-width 0.30: separating
    needs 4 * ((0.35 + 0.30) / 0.20)^2 = 42.25 -> 43 responses; being inside (within 0.05)
    would need the judge's figure within 0.05 of theirs, which it is not: 43 is said."""
    judge = _fig(0.55, 0.20, 0.90)
    people = {"a": _fig(0.75, 0.45, 1.05), "b": _fig(0.75, 0.45, 1.05)}
    decision = human_baseline.decide(judge, people)
    assert (decision.position, decision.needed) == ("unclear", 43)
    # a judge right on the people's figure: only "inside" can become true; its interval
    # (half-width 0.35) must shrink to the 0.05 margin: 4 * (0.35 / 0.05)^2 = 196
    on_it = human_baseline.decide(_fig(0.75, 0.40, 1.10), people)
    assert (on_it.position, on_it.needed) == ("unclear", 196)


def test_n4_with_two_reviewers_says_cant_tell_and_shows_the_people_as_one_figure():
    """The issue's case: 4 responses, two reviewers differing once, a judge differing once
    more. It used to read "below the range of the people (0.73)"."""
    data, *_ = _generated(2, seed=0, n=4)
    [row] = human_baseline.build_baseline(data).criteria
    values = {round(f.value, 6) for f in row.people_f1.values() if f.value is not None}
    assert len(values) == 1  # macro-F1 is symmetric: two reviewers give one number
    assert "each of 2 reviewers" in row.people_spread and "–" not in row.people_spread
    for judge in row.judges:
        assert judge.position in ("unclear", "unknown"), judge.sentence
        if judge.position == "unclear":
            assert "can't tell yet" in judge.sentence and "(n=" in judge.sentence
            assert "below" not in judge.sentence.split("can't tell yet")[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_confusion_cells_per_response_are_those_counted_one_key_at_a_time(seed):
    """The baseline's per-response confusion cells read each verdict map once as an array;
    they are the cells counted key by key: only A's keys count, B may hold more responses
    (a judge's verdicts beyond the reviewed ones) and values that are not MET/UNMET."""
    rng = random.Random(seed)
    values = [Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS, "short"]
    items = sorted(rng.sample(range(1, 400), 120))
    a = {rid: rng.choice(values) for rid in items if rng.random() < 0.8}
    b = {rid: rng.choice(values) for rid in range(1, 400) if rng.random() < 0.7}
    boot = human_baseline._Resampler(items)
    cell_of = {(Verdict.MET, Verdict.MET): 0, (Verdict.MET, Verdict.UNMET): 1,
               (Verdict.UNMET, Verdict.MET): 2, (Verdict.UNMET, Verdict.UNMET): 3}
    expected = np.zeros((len(items), 4), dtype=np.int64)
    for rid, first in a.items():
        cell = cell_of.get((first, b.get(rid)))
        if cell is not None:
            expected[items.index(rid), cell] += 1
    assert expected.sum() > 10
    assert (boot.cells(a, b) == expected).all()
    assert (boot.cells(a, b) == expected).all()  # the maps' arrays read again
    assert (boot.cells(b, a) == boot.cells(a, b)[:, [0, 2, 1, 3]]).all()


def test_the_majority_is_the_verdict_most_gave_and_none_on_a_tie():
    met, unmet, cannot = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
    majority = human_baseline._majority
    assert majority([met]) is met and majority([unmet, cannot]) is unmet
    assert majority([met, unmet, met]) is met and majority([unmet, unmet, met]) is unmet
    assert majority([met, unmet]) is None and majority([cannot]) is None and majority([]) is None
    assert majority([met, unmet, cannot, cannot]) is None
