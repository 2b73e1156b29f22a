"""The Agreement page's data: sources gathered from storage, numbers from grading.agreement."""

from __future__ import annotations

import pytest

from grading.agreement import compare_verdicts_by_criterion, krippendorff_alpha_by_criterion
from grading.score_agreement import compare_scores
from grading.types import Verdict
from storage.errors import NotFoundError
from storage.services import agreement, agreement_lists, datasets, reviews, rubrics, runs
from tests.actors import ADMIN
from tests.storage.agreement_seed import CHEAP, HOLISTIC, HUMAN, STRONG, seed
from tests.storage.helpers import CRITERIA

V = Verdict


def _expected(table, seeded) -> dict:
    return {
        (seeded.responses[key].id, criterion.id): verdict
        for key, verdicts in table.items()
        for criterion, verdict in zip(seeded.version.criteria, verdicts, strict=True)
        if verdict is not None
    }


def test_sources_are_each_run_and_the_humans_with_their_verdicts(sessions):
    seeded = seed(sessions)
    data = agreement.gather_sources(sessions, seeded.version.id, seeded.dataset.id)

    assert [s.key for s in data.sources] == [
        "human", f"run:{seeded.cheap.id}", f"run:{seeded.strong.id}",
        f"run:{seeded.holistic.id}"]
    human, cheap, strong, holistic = data.sources
    assert human.label == "Human" and human.is_human
    assert cheap.label == f"#{seeded.cheap.id} · per-criterion · openai/mini-judge"
    assert data.verdicts["human"] == _expected(HUMAN, seeded)
    assert data.verdicts[cheap.key] == _expected(CHEAP, seeded)
    assert data.verdicts[strong.key] == _expected(STRONG, seeded)
    assert data.verdicts[holistic.key] == {} and not holistic.per_criterion
    assert [s.key for s in data.verdict_sources] == ["human", cheap.key, strong.key]
    assert data.reasons["human"][seeded.responses["r0"].id, seeded.version.criteria[0].id] == (
        "checked r0")
    assert data.response_labels[seeded.responses["r3"].id] == "r3"
    assert (data.reviewed_responses, data.fully_reviewed_responses) == (5, 4)


def test_tokens_and_cost_come_from_the_run_totals_and_unknown_cost_stays_unknown(sessions):
    seeded = seed(sessions)
    data = agreement.gather_sources(sessions, seeded.version.id, seeded.dataset.id)
    cheap = data.source(f"run:{seeded.cheap.id}")
    strong = data.source(f"run:{seeded.strong.id}")
    holistic = data.source(f"run:{seeded.holistic.id}")
    assert (cheap.grades, cheap.total_tokens) == (6, 2400)
    assert cheap.cost == pytest.approx(6 * 0.0004)
    assert cheap.cost_per_grade == pytest.approx(0.0004)
    assert cheap.tokens_per_grade == 400
    assert strong.cost == pytest.approx(6 * 0.009)
    assert holistic.cost is None and holistic.cost_per_grade is None
    assert holistic.unknown_cost_count == 6


def test_scores_are_the_judges_own_and_the_human_scores_under_each_runs_settings(sessions):
    seeded = seed(sessions)
    data = agreement.gather_sources(sessions, seeded.version.id, seeded.dataset.id)
    key = f"run:{seeded.cheap.id}"
    assert data.judge_scores[key] == {
        g.response_id: g.judge_score
        for g in reviews.effective_grades_for_run(sessions, seeded.cheap.id)}
    complete = [seeded.responses[k].id for k in ("r0", "r1", "r2", "r3")]
    expected = {s.response_id: s.score for s in reviews.human_scores(
        sessions, seeded.version.id, complete, seeded.cheap.settings.scoring())}
    assert data.human_scores[key] == pytest.approx(expected)
    holistic = f"run:{seeded.holistic.id}"
    assert data.judge_scores[holistic] == pytest.approx(
        {seeded.responses[k].id: v / 100 for k, v in HOLISTIC.items()})


def test_human_scores_follow_a_runs_own_settings(sessions):
    seeded = seed(sessions)
    raw_run = runs.create_run(sessions, rubric_version_id=seeded.version.id,
                              dataset_id=seeded.dataset.id, grader="per_criterion",
                              model="openai/raw-judge",
                              settings={"normalize": False,
                                        "length_penalty": {"free_budget": 2, "max_cap": 10}},
                                            actor=ADMIN)
    data = agreement.gather_sources(sessions, seeded.version.id, seeded.dataset.id)
    r0 = seeded.responses["r0"].id
    expected = reviews.human_score(sessions, r0, seeded.version.id,
                                   raw_run.settings.scoring())
    assert data.human_scores[f"run:{raw_run.id}"][r0] == pytest.approx(expected.score)
    assert expected.score != pytest.approx(
        data.human_scores[f"run:{seeded.cheap.id}"][r0])


def test_every_number_is_grading_agreements_on_the_same_data(sessions):
    seeded = seed(sessions)
    report = agreement.agreement_report(sessions, seeded.version.id, seeded.dataset.id)
    # every verdict (the report holds the judges' verdicts where people reviewed)
    data = agreement.gather_sources(sessions, seeded.version.id, seeded.dataset.id)
    cheap, strong = f"run:{seeded.cheap.id}", f"run:{seeded.strong.id}"
    assert set(report.pairwise) == {("human", cheap), ("human", strong), (cheap, strong)}
    for a, b in report.pairwise:
        expected = compare_verdicts_by_criterion(data.verdicts[a], data.verdicts[b])
        got = report.pair(b, a)
        assert got.overall == expected.overall
        for criterion_id, value in expected.per_criterion.items():
            assert got.per_criterion[criterion_id] == value
    alpha = krippendorff_alpha_by_criterion(
        [data.verdicts[k] for k in ("human", cheap, strong)])
    assert report.alpha.overall == alpha.overall
    assert report.alpha.per_criterion == alpha.per_criterion

    [cheap_judge, strong_judge, holistic_judge] = report.judges
    assert cheap_judge.verdicts_vs_human == report.pairwise["human", cheap].overall
    assert strong_judge.verdicts_vs_human == report.pairwise["human", strong].overall
    assert cheap_judge.scores_vs_human == compare_scores(
        data.human_scores[cheap], data.judge_scores[cheap])
    assert holistic_judge.verdicts_vs_human is None
    assert holistic_judge.scores_vs_human is not None
    assert holistic_judge.scores_vs_human.pairs_used == 4
    # Human is the reference: rows of the confusion matrix are the human verdicts.
    overall = report.pairwise["human", strong].overall
    assert overall.excluded_cannot_assess == 0  # STRONG's CANNOT_ASSESS is on unreviewed r5
    assert overall.pairs_used == 18
    assert {p.source_key for p in report.score_points} == {
        cheap, strong, f"run:{seeded.holistic.id}"}
    assert len(report.score_points) == 12


def test_per_criterion_table_puts_the_worst_criterion_first_and_counts_disagreements(sessions):
    seeded = seed(sessions)
    report = agreement.agreement_report(sessions, seeded.version.id, seeded.dataset.id)
    cheap = f"run:{seeded.cheap.id}"
    rows = agreement.criterion_table(report, "human", cheap)
    kappas = [r.pair.cohens_kappa for r in rows if r.pair.cohens_kappa is not None]
    assert kappas == sorted(kappas)
    assert {r.criterion.id for r in rows} == {c.id for c in seeded.version.criteria}
    by_name = {r.criterion.name: r for r in rows}
    # cheap vs human on "cites": r1 agree, r3 M vs U, r4 U vs M -> 2 disagreements.
    assert by_name["cites"].disagreements == 2
    found = agreement_lists.disagreement_list(sessions, report, ["human", cheap],
                                              by_name["cites"].criterion.id)
    assert [d.response_label for d in found] == ["r3", "r4"]
    assert found[0].verdicts == {"human": V.UNMET, cheap: V.MET}
    assert found[0].reasons["human"] == "checked r3"

    everything = agreement.criterion_table(report)
    assert all(r.pair is None for r in everything)
    alphas = [r.alpha.alpha for r in everything if r.alpha.alpha is not None]
    assert alphas == sorted(alphas)


def test_cannot_assess_is_not_a_disagreement(sessions):
    seeded = seed(sessions)
    report = agreement.agreement_report(sessions, seeded.version.id, seeded.dataset.id)
    concise = seeded.version.criteria[2].id
    keys = [f"run:{seeded.cheap.id}", f"run:{seeded.strong.id}"]
    labels = [d.response_label
              for d in agreement_lists.disagreement_list(sessions, report, keys, concise)]
    assert labels == ["r1"]  # r5 is MET vs CANNOT_ASSESS


def test_without_reviews_or_runs_the_report_is_empty_and_explained(sessions):
    version = rubrics.create_rubric(sessions, "Empty", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "None yet", responses=[{"text": "a"}], actor=ADMIN)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    assert report.data.sources == () and report.pairwise == {} and report.judges == ()
    assert report.alpha.overall.alpha is None
    assert "at least 2 sources" in report.alpha.overall.note
    rows = agreement.criterion_table(report)
    assert len(rows) == len(CRITERIA) and all(r.disagreements == 0 for r in rows)


def test_a_dataset_not_graded_with_the_version_has_no_sources_and_unknown_ids_fail(sessions):
    seeded = seed(sessions, rubric_name="Solo")
    other = datasets.create_dataset(sessions, "Other", responses=[{"text": "b"}], actor=ADMIN)
    report = agreement.agreement_report(sessions, seeded.version.id, other.id)
    assert report.data.sources == ()
    with pytest.raises(NotFoundError):
        agreement.agreement_report(sessions, seeded.version.id, 10_000)


def _criterion(cid: int, name: str):
    from storage.dto import CriterionInfo

    return CriterionInfo(id=cid, position=cid - 1, name=name, requirement=name, weight=1.0,
                         section=None)


def _source(key: str, run_id: int | None):
    return agreement.AgreementSource(
        key=key, label=key, run_id=run_id, grader="per_criterion" if run_id else None,
        model="m" if run_id else None, status="done", per_criterion=True, verdict_count=1,
        grades=3, failed=0, total_tokens=0, cost=None, unknown_cost_count=0)


def test_undefined_kappa_ranks_after_real_values_and_no_pairs_ranks_last():
    M, U = V.MET, V.UNMET
    human = {(1, 1): M, (2, 1): U, (3, 1): M, (1, 2): M, (2, 2): M, (3, 2): M}
    judge = {(1, 1): M, (2, 1): M, (3, 1): U, (1, 2): M, (2, 2): M, (3, 2): M, (1, 3): U}
    data = agreement.AgreementData(
        rubric_version_id=1, dataset_id=1,
        criteria=(_criterion(1, "mixed"), _criterion(2, "always met"), _criterion(3, "unseen")),
        response_labels={1: "a", 2: "b", 3: "c"},
        sources=(_source("human", None), _source("run:1", 1)),
        verdicts={"human": human, "run:1": judge}, reasons={}, judge_scores={},
        human_scores={}, reviewed_responses=3, fully_reviewed_responses=0)
    report = agreement.build_report(data)
    rows = agreement.criterion_table(report, "human", "run:1")
    assert [r.criterion.name for r in rows] == ["mixed", "always met", "unseen"]
    mixed, always, unseen = rows
    assert mixed.pair.cohens_kappa is not None and mixed.disagreements == 2
    assert always.pair.cohens_kappa is None and always.pair.percent_agreement == 100
    assert "kappa undefined" in always.pair.note
    assert unseen.pair.pairs_used == 0 and unseen.pair.note.startswith("no pairs to compare")
    assert all(r.pair.cohens_kappa == r.pair.cohens_kappa for r in rows)  # never NaN
    everything = agreement.criterion_table(report)
    assert [r.criterion.name for r in everything][-1] == "unseen"
    assert everything[-1].alpha.alpha is None and everything[-1].alpha.note
