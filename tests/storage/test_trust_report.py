"""The trust report on a real database, each figure recomputed independently here (numpy,
statsmodels, scikit-learn) from what was seeded."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import statsmodels.api as sm
from sklearn.linear_model import LinearRegression
from sqlalchemy import select
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from storage.services import trust_json, trust_report
from storage.services.blindness import Sight
from tests.kinds import LIKERT
from tests.storage import trust_seed

VALUE = {"MET": 1.0, "UNMET": 0.0, **{o.label: o.value for o in LIKERT}}


@pytest.fixture
def world(copied_world):
    """The same seeded world for every test here: built once per backend, then copied."""
    return copied_world("trust_seed", trust_seed.seed)


def _judge(report, world, key):
    return report.judge(f"run:{world.runs[key]}")


def test_corrected_estimate_uses_only_the_random_sample(sessions, world):
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    assert report.sample_size == trust_seed.SAMPLE
    assert report.sampled_reviewed == trust_seed.SAMPLE
    assert report.reviewed_outside_sample == trust_seed.HARD_CASES
    a1 = _judge(report, world, "a1")
    for j, row in enumerate(a1.criteria):
        f_all = np.array([VALUE[world.judged["a1"][rid][j]] for rid in world.response_ids])
        f_s = np.array([VALUE[world.judged["a1"][rid][j]] for rid in world.sample])
        y_s = np.array([VALUE[world.human[rid][j]] for rid in world.sample])
        theta = f_all.mean() + (y_s - f_s).mean()
        half = 1.959963984540054 * math.sqrt(
            f_all.var(ddof=1) / len(f_all) + (y_s - f_s).var(ddof=1) / len(y_s))
        c = row.corrected
        assert c.classical.value == pytest.approx(theta)
        assert c.classical.low == pytest.approx(theta - half)
        assert c.classical.n == trust_seed.SAMPLE  # the 5 hard cases are not in it
        # PPI++ (the figure shown): the judge's weight from numpy's covariance
        lam = np.cov(y_s, f_s)[0, 1] / ((1 + len(y_s) / len(f_all)) * f_all.var(ddof=1))
        lam = min(1.0, max(0.0, lam))
        tuned = lam * f_all.mean() + (y_s - lam * f_s).mean()
        half = 1.959963984540054 * math.sqrt(
            lam ** 2 * f_all.var(ddof=1) / len(f_all) + (y_s - lam * f_s).var(ddof=1) / len(y_s))
        assert c.power == pytest.approx(lam)
        assert c.corrected.value == pytest.approx(tuned)
        assert c.corrected.low == pytest.approx(tuned - half)
        assert c.corrected.n == trust_seed.SAMPLE
        assert c.people.value == pytest.approx(y_s.mean())
        assert c.judge.value == pytest.approx(f_all.mean()) and c.judge.n == len(f_all)
    assert a1.criteria[1].unit == "option value"
    assert a1.cost_per_1000 == pytest.approx(2.0)


def test_runs_of_the_same_judge_are_stability_samples(sessions, world):
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    a1, b = _judge(report, world, "a1"), _judge(report, world, "b")
    assert a1.samples == (world.runs["a1"], world.runs["a2"]) and a1.replayed == ()
    assert b.samples == (world.runs["b"],) and all(r.stability is None for r in b.criteria)
    for j, row in enumerate(a1.criteria):
        pairs = [(world.judged["a1"][rid][j], world.judged["a2"][rid][j])
                 for rid in world.response_ids]
        flips = sum(1 for x, y in pairs if x != y)
        assert row.stability.flip_rate.value == pytest.approx(flips / len(pairs))
        labels = sorted({v for p in pairs for v in p})
        table = np.array([[p.count(label) for label in labels] for p in pairs])
        assert row.stability.fleiss_kappa.value == pytest.approx(
            sm_fleiss_kappa(table, method="fleiss"))
        assert row.stability.fleiss_kappa.n == len(pairs)
    assert "across 2 samples" in a1.verdict


def test_a_run_replayed_from_the_cache_is_not_a_sample(sessions, world):
    trust_seed.mark_replayed(sessions, world.runs["a2"])
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    a1 = _judge(report, world, "a1")
    assert a1.samples == (world.runs["a1"],) and a1.replayed == (world.runs["a2"],)
    assert all(r.stability is None for r in a1.criteria)
    assert "stability not measured" in a1.verdict


def test_length_slopes_match_ols(sessions, world):
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    row = _judge(report, world, "a1").criteria[0]
    ids = world.response_ids
    x = np.array([world.lengths[r] for r in ids]) / 1000
    y = np.array([VALUE[world.judged["a1"][r][0]] for r in ids])
    model = LinearRegression().fit(x[:, None], y)
    assert row.length_all.slope.value == pytest.approx(model.coef_[0])
    assert row.length_all.slope.n == len(ids)
    reviewed = [*world.sample, *world.hard]
    xr = np.array([world.lengths[r] for r in reviewed]) / 1000
    yr = np.array([VALUE[world.judged["a1"][r][0]] for r in reviewed])
    human = np.array([VALUE[world.human[r][0]] for r in reviewed])
    fitted = sm.OLS(yr, sm.add_constant(np.column_stack([xr, human]))).fit()
    assert row.length_controlled.slope.value == pytest.approx(fitted.params[1])
    assert row.length_controlled.slope.n == len(reviewed)
    low, high = row.length_controlled.slope.low, row.length_controlled.slope.high
    assert low <= row.length_controlled.slope.value <= high


def test_position_effect_from_recorded_shuffles(sessions, world):
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    labels = [o.label for o in LIKERT]
    for key in ("a1", "b"):
        row = _judge(report, world, key).criteria[1]
        first = [world.shown[key][rid].index(labels.index(world.judged[key][rid][1])) == 0
                 for rid in world.response_ids]
        assert row.position.first_rate == pytest.approx(sum(first) / len(first))
        assert row.position.expected == pytest.approx(1 / len(LIKERT))
        assert row.position.excess.n == len(first)
    # a1 picks the first option shown on ~30% of responses on top of chance: detected
    assert _judge(report, world, "a1").criteria[1].position.excess.low > 0
    assert _judge(report, world, "a1").criteria[0].position is None  # binary: no options


def test_a_blind_reviewer_gets_no_corrected_estimate_from_verdicts_they_cannot_see(
        sessions, world):
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id,
                                       sight=Sight(viewer="someone-else", sees_all=False))
    a1 = _judge(report, world, "a1")
    assert report.sampled_reviewed == 0
    assert all(r.corrected.corrected.value is None and r.corrected.people.n == 0
               for r in a1.criteria)
    assert a1.agreement is None or a1.agreement.pairs_used == 0


def test_without_a_random_sample_nothing_is_corrected(sessions, world):
    from storage.services import review_sets
    from tests.actors import ADMIN

    review_sets.update_settings(sessions, actor=ADMIN, dataset_id=world.dataset_id,
                                rubric_version_id=world.version_id, reviewers_per_response=1,
                                sample_size=0)
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    assert report.sample_size == 0
    assert report.reviewed_outside_sample == trust_seed.SAMPLE + trust_seed.HARD_CASES
    assert all(r.corrected.corrected.value is None
               for r in _judge(report, world, "a1").criteria)
    assert report.notes and "random sample" in report.notes[0]
    data = trust_json.trust_json(report)
    assert data["reviewed_outside_sample_left_out"] == 25


def test_agreement_command_prints_the_trust_fields(sessions, world, db_url, capsys):
    from storage import cli

    status = cli.main(["agreement", "--dataset", "Trust answers", "--rubric", "Trust",
                       "--format", "json", "--db", db_url])
    out = capsys.readouterr()
    assert status == 0, out.err
    trust = json.loads(out.out)["trust"]
    assert trust["random_sample_size"] == trust_seed.SAMPLE
    assert trust["reviewed_outside_sample_left_out"] == trust_seed.HARD_CASES
    a1 = next(j for j in trust["judges"] if j["source"] == f"run:{world.runs['a1']}")
    expected = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    same = _judge(expected, world, "a1")
    assert a1["verdict"] == same.verdict
    assert a1["stability_samples"] == [f"run:{world.runs['a1']}", f"run:{world.runs['a2']}"]
    accurate = a1["criteria"][0]
    corrected = accurate["corrected_estimate"]["corrected"]
    assert corrected["value"] == pytest.approx(same.criteria[0].corrected.corrected.value)
    assert corrected["n"] == trust_seed.SAMPLE and len(corrected["ci95"]) == 2
    assert accurate["stability"]["fleiss_kappa"]["n"] == trust_seed.RESPONSES
    assert accurate["length_per_1000_chars"]["within_human_verdict"]["n"] == 25
    assert a1["criteria"][1]["position_first_shown"]["excess"]["n"] == trust_seed.RESPONSES
    assert a1["cost_per_1000_responses"] == pytest.approx(2.0)
    assert cli.main(["agreement", "--dataset", "Trust answers", "--rubric", "Trust",
                     "--format", "text", "--db", db_url]) == 0
    text = capsys.readouterr().out
    assert same.verdict in text and "random sample only" in text


def _panel_choice(j: int, one: str, two: str) -> str | None:
    """The majority of two members, worked out here: agreeing members decide, a MET/UNMET
    split is undecided (None); on the rating, the median of two is the lower option."""
    if j == 0:
        return one if one == two else None
    return min(one, two, key=lambda label: VALUE[label])


def test_a_panel_is_stable_when_its_members_samples_combined_agree(sessions):
    from storage.services import panels
    from tests.actors import ADMIN

    world = trust_seed.seed(sessions, b_twice=True)
    panel = panels.create_panel(sessions, run_ids=[world.runs["a1"], world.runs["b"]],
                                rule="majority", actor=ADMIN)
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    judge = report.judge(f"panel:{panel.id}")
    assert judge.panel_members == (world.runs["a1"], world.runs["b"])
    assert judge.samples_per_criterion == 2 and judge.stability_measured
    assert f"runs #{world.runs['b']}, #{world.runs['b2']}" in judge.stability_basis
    # panel sample 0 is the verdict the panel shows
    shown = {(g.response_id, c.criterion_id): c.decision.choice
             for g in panels.panel_grades(sessions, panel.id) for c in g.criteria}
    for j, row in enumerate(judge.criteria):
        pairs = []
        for rid in world.response_ids:
            first = _panel_choice(j, world.judged["a1"][rid][j], world.judged["b"][rid][j])
            second = _panel_choice(j, world.judged["a2"][rid][j], world.judged["b2"][rid][j])
            if first is not None:
                assert str(shown[rid, world.criterion_ids[j]]) == first
            if first is not None and second is not None:
                pairs.append((first, second))
        assert row.stability.flip_rate.n == len(pairs) > 10
        assert row.stability.flip_rate.value == pytest.approx(
            sum(1 for x, y in pairs if x != y) / len(pairs))
        labels = sorted({v for p in pairs for v in p})
        table = np.array([[p.count(label) for label in labels] for p in pairs])
        assert row.stability.fleiss_kappa.value == pytest.approx(
            sm_fleiss_kappa(table, method="fleiss"))
    assert "across 2 samples" in judge.verdict
    data = trust_json.trust_json(report)
    entry = next(j for j in data["judges"] if j["source"] == f"panel:{panel.id}")
    assert entry["panel_members"] == [f"run:{world.runs['a1']}", f"run:{world.runs['b']}"]
    assert entry["samples_per_criterion"] == 2 and entry["stability_basis"]
    measured = judge.criteria[0].stability.flip_rate.n
    assert entry["criteria"][0]["stability"]["flip_rate"]["n"] == measured
    assert entry["pairwise_order"] is None


def test_a_panel_whose_member_has_one_sample_measures_no_stability(sessions, world):
    from storage.services import panels
    from tests.actors import ADMIN

    panel = panels.create_panel(sessions, run_ids=[world.runs["a1"], world.runs["b"]],
                                rule="majority", actor=ADMIN)
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    judge = report.judge(f"panel:{panel.id}")
    assert not judge.stability_measured
    assert all(r.stability is None for r in judge.criteria)
    assert "1 panel sample" in judge.stability_basis
    assert "stability not measured" in judge.verdict


def test_a_panels_position_effect_counts_each_response_once(sessions, world):
    """The members' choices on one response are one unit (its share shown first): Wilson's
    interval of the mean share over responses, as statsmodels gives it."""
    from statsmodels.stats.proportion import proportion_confint

    from storage.services import panels
    from tests.actors import ADMIN

    panel = panels.create_panel(sessions, run_ids=[world.runs["a1"], world.runs["b"]],
                                rule="majority", actor=ADMIN)
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    row = report.judge(f"panel:{panel.id}").criteria[1]
    labels = [o.label for o in LIKERT]
    shares = [np.mean([world.shown[key][rid].index(labels.index(world.judged[key][rid][1])) == 0
                       for key in ("a1", "b")]) for rid in world.response_ids]
    chance = 1 / len(LIKERT)
    assert row.position.excess.n == len(shares) == trust_seed.RESPONSES
    assert row.position.first_rate == pytest.approx(np.mean(shares))
    low, high = proportion_confint(sum(shares), len(shares), method="wilson")
    assert row.position.excess.low == pytest.approx(low - chance)
    assert row.position.excess.high == pytest.approx(high - chance)
    assert report.judge(f"panel:{panel.id}").criteria[0].position is None
    # a panel's cost is its members': two grades of $0.002 per response
    assert report.judge(f"panel:{panel.id}").cost_per_1000 == pytest.approx(4.0)


def test_two_members_shown_the_same_orders_do_not_narrow_the_panels_interval(sessions, world):
    """A member that saw a1's option orders and chose as a1 adds no evidence of a position
    effect: the panel's figure is a1's own, not one on twice the choices."""
    from storage.services import panels
    from tests.actors import ADMIN

    twin = trust_seed.copy_run(sessions, world, "a1", "openai/judge-twin")
    panel = panels.create_panel(sessions, run_ids=[world.runs["a1"], twin],
                                rule="majority", actor=ADMIN)
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    alone = _judge(report, world, "a1").criteria[1].position.excess
    pooled = report.judge(f"panel:{panel.id}").criteria[1].position.excess
    assert (pooled.value, pooled.low, pooled.high, pooled.n) == pytest.approx(
        (alone.value, alone.low, alone.high, alone.n))


def test_the_scores_corrected_estimate_is_ppi_on_the_sampled_scores(sessions, world):
    """The score's figure, from scores worked out here: accurate (weight 10, MET 1) and
    clarity (weight 5, the option's value), normalized by the total weight."""
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    score = _judge(report, world, "a1").score

    def hand(choices):
        return (10 * VALUE[choices[0]] + 5 * VALUE[choices[1]]) / 15

    f_all = np.array([hand(world.judged["a1"][rid]) for rid in world.response_ids])
    f_s = np.array([hand(world.judged["a1"][rid]) for rid in world.sample])
    y_s = np.array([hand(world.human[rid]) for rid in world.sample])
    assert score.judge.value == pytest.approx(f_all.mean()) and score.judge.n == len(f_all)
    assert score.people.value == pytest.approx(y_s.mean())
    assert score.people.n == trust_seed.SAMPLE  # the hard cases are not in it
    lam = np.cov(y_s, f_s)[0, 1] / ((1 + len(y_s) / len(f_all)) * f_all.var(ddof=1))
    lam = min(1.0, max(0.0, lam))
    tuned = lam * f_all.mean() + (y_s - lam * f_s).mean()
    half = 1.959963984540054 * math.sqrt(
        lam ** 2 * f_all.var(ddof=1) / len(f_all) + (y_s - lam * f_s).var(ddof=1) / len(y_s))
    assert score.power == pytest.approx(lam)
    assert score.corrected.value == pytest.approx(tuned)
    assert (score.corrected.low, score.corrected.high) == pytest.approx(
        (tuned - half, tuned + half))
    assert score.corrected.n == trust_seed.SAMPLE


def test_each_judge_is_placed_against_the_peoples_own_range(sessions):
    """The human range: the judge's macro-F1 against each reviewer, averaged over the
    left-out reviewer (scikit-learn here), beside the reviewers' own figures; the verdict
    says where the judge sits."""
    from sklearn.metrics import f1_score

    from storage.services import agreement, human_baseline

    world = trust_seed.seed(sessions, second_reviewer=True)
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    a1 = _judge(report, world, "a1")
    accurate = a1.human_range[0]
    assert [h.criterion for h in a1.human_range] == ["accurate"]  # binary criteria only
    assert accurate.reviewers == 2
    shared = world.sample
    judge = [world.judged["a1"][r][0] for r in shared]
    ana = [world.human[r][0] for r in shared]
    bo = [world.second[r][0] for r in shared]
    expected = (f1_score(ana, judge, average="macro") + f1_score(bo, judge, average="macro")) / 2
    assert accurate.judge_f1.value == pytest.approx(expected)
    assert accurate.judge_f1.n == len(shared)
    people = f1_score(ana, bo, average="macro")
    assert f"{people:.2f}" in accurate.people_f1
    baseline = human_baseline.build_baseline(
        agreement.agreement_report(sessions, world.version_id, world.dataset_id).data)
    position = next(j.position for j in baseline.criteria[0].judges
                    if j.source_key == a1.source_key)
    assert accurate.position == position != "unknown"
    words = dict(trust_report_words())[position]
    assert f"{words} accurate" in a1.verdict
    entry = next(j for j in trust_json.trust_json(report)["judges"]
                 if j["source"] == a1.source_key)
    assert entry["human_range"][0]["position"] == position
    assert entry["human_range"][0]["judge_macro_f1"]["value"] == pytest.approx(expected)


def trust_report_words():
    from storage.services.trust_judge import _RANGE_WORDS

    return _RANGE_WORDS


def test_a_panels_criterion_order_effect_pools_its_members_listings(sessions, world):
    """Each member listed the two criteria in its own order per response (recorded as a
    one-shot run with shuffled criteria records it); the panel's figure pools the members'
    values by where each member was shown the criterion, worked out here with numpy and
    statsmodels' Newcombe interval."""
    from sqlalchemy import update
    from statsmodels.stats.proportion import confint_proportions_2indep

    from storage import models as m
    from storage.services import panels
    from tests.actors import ADMIN

    listed = {}  # (run key, response) -> position of "accurate" (1 or 2)
    with sessions.begin() as session:
        for key in ("a1", "b"):
            for i, rid in enumerate(world.response_ids):
                first = 1 if (i + (key == "b")) % 2 == 0 else 2
                listed[key, rid] = first
                grade = select(m.GradeRow.id).where(m.GradeRow.run_id == world.runs[key],
                                                    m.GradeRow.response_id == rid)
                for cid, position in zip(world.criterion_ids, (first, 3 - first),
                                         strict=True):
                    session.execute(update(m.GradeCriterionRow).where(
                        m.GradeCriterionRow.grade_id.in_(grade.scalar_subquery()),
                        m.GradeCriterionRow.criterion_id == cid).values(
                        prompt_position=position))
    panel = panels.create_panel(sessions, run_ids=[world.runs["a1"], world.runs["b"]],
                                rule="majority", actor=ADMIN)
    report = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    effect = report.judge(f"panel:{panel.id}").criteria[0].criterion_order
    early = [VALUE[world.judged[k][rid][0]] for k in ("a1", "b") for rid in world.response_ids
             if listed[k, rid] == 1]
    late = [VALUE[world.judged[k][rid][0]] for k in ("a1", "b") for rid in world.response_ids
            if listed[k, rid] == 2]
    assert effect.early.n == len(early) and effect.late.n == len(late)
    assert effect.late_minus_early.n == 2 * trust_seed.RESPONSES
    assert effect.early.value == pytest.approx(np.mean(early))
    assert effect.late_minus_early.value == pytest.approx(np.mean(late) - np.mean(early))
    low, high = confint_proportions_2indep(int(sum(late)), len(late), int(sum(early)),
                                          len(early), method="newcomb")
    assert (effect.late_minus_early.low, effect.late_minus_early.high) == pytest.approx(
        (low, high))
