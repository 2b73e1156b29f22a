"""The Agreement report on multi-choice criteria, from verdicts that are option labels.

Storage of option verdicts is added separately (migration 0015); these tests build the
report's input by hand, with criteria that carry ``options`` and ``scale_type`` as the
stored criteria will, and check that each multi-choice row gets the figures of its scale."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sklearn.metrics import cohen_kappa_score

from grading import CriterionOption
from grading.option_agreement import OptionPairwiseAgreement, options_alpha
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.services import agreement

M, U, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
LIKERT = (*(CriterionOption(label=f"{i}", value=(i - 1) / 4) for i in range(1, 6)),
          CriterionOption(label="N/A", value=0.0, na=True))


@dataclass(frozen=True)
class OptionCriterionInfo(CriterionInfo):
    """A stored criterion with options (the fields migration 0015 adds)."""

    options: tuple[CriterionOption, ...] | None = None
    scale_type: str = "ordinal"


def _criteria():
    return (CriterionInfo(1, 0, "cites", "Cites a source", 1.0, None),
            OptionCriterionInfo(2, 1, "clarity", "How clear?", 1.0, None, options=LIKERT),
            OptionCriterionInfo(3, 2, "tone", "Tone?", 1.0, None,
                                options=({"label": "formal", "value": 1.0},
                                         {"label": "casual", "value": 0.5}),
                                scale_type="nominal"))


def _source(key: str, run_id: int | None):
    return agreement.AgreementSource(
        key=key, label=key, run_id=run_id, grader="per_criterion" if run_id else None,
        model="m" if run_id else None, status="done", per_criterion=True, verdict_count=1,
        grades=4, failed=0, total_tokens=0, cost=None, unknown_cost_count=0)


HUMAN = {(1, 1): M, (2, 1): U, (3, 1): M, (4, 1): U,
         (1, 2): "1", (2, 2): "3", (3, 2): "5", (4, 2): "N/A",
         (1, 3): "formal", (2, 3): "casual", (3, 3): "formal", (4, 3): "casual"}
JUDGE = {(1, 1): M, (2, 1): M, (3, 1): M, (4, 1): U,
         (1, 2): "2", (2, 2): "3", (3, 2): "4", (4, 2): "2",
         (1, 3): "formal", (2, 3): "formal", (3, 3): "formal", (4, 3): "casual"}
OTHER = {(1, 1): U, (2, 1): U, (3, 1): M, (4, 1): CA,
         (1, 2): "1", (2, 2): "4", (3, 2): "5", (4, 2): "1",
         (1, 3): "casual", (2, 3): "casual", (3, 3): "formal", (4, 3): "formal"}


def _data(criteria=None):
    return agreement.AgreementData(
        rubric_version_id=1, dataset_id=1, criteria=criteria or _criteria(),
        response_labels={1: "a", 2: "b", 3: "c", 4: "d"},
        sources=(_source("human", None), _source("run:1", 1), _source("run:2", 2)),
        verdicts={"human": HUMAN, "run:1": JUDGE, "run:2": OTHER}, reasons={},
        judge_scores={}, human_scores={}, reviewed_responses=4, fully_reviewed_responses=4)


def _only(source, cid):
    return {k: v for k, v in source.items() if k[1] == cid}


def test_criterion_kinds_read_options_and_scale_from_the_criteria():
    kinds = agreement.criterion_kinds(_criteria())
    assert kinds[1] is None
    assert kinds[2].labels == ("1", "2", "3", "4", "5") and kinds[2].scale_type == "ordinal"
    assert kinds[3].labels == ("formal", "casual") and kinds[3].scale_type == "nominal"


def test_a_multi_choice_row_has_the_figures_of_its_scale():
    report = agreement.build_report(_data())
    pair = report.pair("human", "run:1")
    clarity = pair.per_criterion[2]
    assert isinstance(clarity, OptionPairwiseAgreement)
    assert clarity.metric == "quadratic-weighted kappa"
    assert clarity.kappa == pytest.approx(cohen_kappa_score(
        ["1", "3", "5"], ["2", "3", "4"], labels=["1", "2", "3", "4", "5"],
        weights="quadratic"))
    assert clarity.excluded_cannot_assess == 1
    tone = pair.per_criterion[3]
    assert tone.metric == "Cohen's kappa"
    assert tone.kappa == pytest.approx(cohen_kappa_score(
        ["formal", "casual", "formal", "casual"], ["formal", "formal", "formal", "casual"]))
    assert tone.confusion.labels == ("formal", "casual")
    assert tone.confusion.rows == ((2, 0), (1, 1))
    kinds = agreement.criterion_kinds(_criteria())
    assert report.alpha.per_criterion[2] == options_alpha(
        [_only(s, 2) for s in (HUMAN, JUDGE, OTHER)], kinds[2])
    assert report.alpha.per_criterion[2].metric == "Krippendorff's alpha (ordinal)"
    assert report.alpha.per_criterion[3].metric == "Krippendorff's alpha (nominal)"


def test_the_overall_and_judge_figures_are_the_binary_criteria_s():
    report = agreement.build_report(_data())
    overall = report.pair("human", "run:1").overall
    assert overall.pairs_used == 4
    assert "2 multi-choice criteria are not pooled here" in overall.note
    judge = next(j for j in report.judges if j.source.key == "run:1")
    assert judge.verdicts_vs_human == overall


def test_the_criterion_table_ranks_and_counts_disagreements_on_options():
    report = agreement.build_report(_data())
    rows = agreement.criterion_table(report, "human", "run:1")
    by_name = {r.criterion.name: r for r in rows}
    # clarity: responses 1 and 3 got other options (4 is N/A on one side: no disagreement)
    assert by_name["clarity"].disagreements == 2
    assert by_name["tone"].disagreements == 1
    assert by_name["cites"].disagreements == 1
    kappas = [r.pair.cohens_kappa for r in rows]
    assert kappas == sorted(kappas)  # worst first, whatever the scale
    found = agreement.disagreements(report.data, ["human", "run:1"], 2)
    assert [(d.response_label, d.verdicts) for d in found] == [
        ("a", {"human": "1", "run:1": "2"}), ("c", {"human": "5", "run:1": "4"})]


def test_the_same_labels_on_a_binary_criterion_are_refused_not_miscounted():
    criteria = tuple(CriterionInfo(c.id, c.position, c.name, c.requirement, c.weight, None)
                     for c in _criteria())
    with pytest.raises(ValueError, match="verdict must be MET, UNMET or CANNOT_ASSESS"):
        agreement.build_report(_data(criteria))


def test_a_binary_only_report_is_unchanged():
    criteria = (_criteria()[0],)
    binary = {k: {key: v for key, v in vs.items() if key[1] == 1}
              for k, vs in {"human": HUMAN, "run:1": JUDGE, "run:2": OTHER}.items()}
    data = agreement.AgreementData(
        rubric_version_id=1, dataset_id=1, criteria=criteria,
        response_labels={1: "a", 2: "b", 3: "c", 4: "d"},
        sources=(_source("human", None), _source("run:1", 1), _source("run:2", 2)),
        verdicts=binary, reasons={}, judge_scores={}, human_scores={},
        reviewed_responses=4, fully_reviewed_responses=4)
    report = agreement.build_report(data)
    assert report.pair("human", "run:1").overall.note == ""


def test_the_human_baseline_leaves_multi_choice_criteria_out_and_names_them():
    from dataclasses import replace

    from storage.services.human_baseline import build_baseline

    people = {"ana": HUMAN, "bo": OTHER}
    data = replace(_data(), reviewer_verdicts=people, reviewer_names={"ana": "Ana", "bo": "Bo"})
    baseline = build_baseline(data)
    assert baseline.left_out == ("clarity", "tone")
    assert [row.criterion.name for row in baseline.criteria] == ["cites"]
    [cites] = baseline.criteria
    assert cites.method == "kappa" and cites.among.n == 3  # bo's CANNOT_ASSESS left out
    ana = next(r for r in baseline.reviewers if r.key == "ana")
    assert ana.verdicts == 12 and ana.vs_final.pairs_used == 4  # binary criterion only


def test_the_multi_choice_figures_for_the_command_use_each_scale_with_intervals():
    from dataclasses import replace

    from grading.option_agreement import kappa_interval
    from storage.services.option_baseline import option_baseline_json

    data = replace(_data(), reviewer_verdicts={"ana": HUMAN, "bo": OTHER, "cy": JUDGE})
    clarity, tone = option_baseline_json(data)
    kinds = agreement.criterion_kinds(_criteria())
    assert clarity["criterion"] == "clarity" and clarity["scale_type"] == "ordinal"
    assert clarity["options"] == ["1", "2", "3", "4", "5"]
    among = clarity["reviewers"]
    assert among["method"] == "Krippendorff's alpha (ordinal)" and among["count"] == 3
    assert among["value"] == options_alpha([_only(s, 2) for s in (HUMAN, OTHER, JUDGE)],
                                           kinds[2]).alpha
    [run1, _run2] = tone["judges"]
    vs = run1["vs_human_verdict"]
    assert vs["metric"] == "Cohen's kappa" and vs["n"] == 4
    interval = kappa_interval({r: v for (r, c), v in HUMAN.items() if c == 3},
                              {r: v for (r, c), v in JUDGE.items() if c == 3}, kinds[3])
    assert vs["kappa_ci95"] == [interval.low, interval.high]
    two = option_baseline_json(replace(_data(), reviewer_verdicts={"ana": HUMAN, "bo": OTHER}))
    assert two[0]["reviewers"]["method"] == "quadratic-weighted kappa"
    binary_only = replace(_data(), criteria=_criteria()[:1])
    assert option_baseline_json(binary_only) == []


def test_the_command_prints_the_multi_choice_figures_as_sentences():
    from dataclasses import replace

    from storage.agreement_command import option_lines
    from storage.services.option_baseline import option_baseline_json

    data = replace(_data(), reviewer_verdicts={"ana": HUMAN, "bo": OTHER})
    lines = option_lines(option_baseline_json(data))
    assert lines[0].startswith("clarity (ordinal): 2 reviewers, quadratic-weighted kappa ")
    assert lines[1].startswith("  run:1: quadratic-weighted kappa vs the human verdict ")
    assert lines[3].startswith("tone (nominal): 2 reviewers, Cohen's kappa ")
