"""The review services take an option label for a multi-choice criterion (the Review page's
number keys will send one): validated against the criterion's options, stored beside the
verdict, compared by consensus, and scored by the one aggregation function."""

from __future__ import annotations

import pytest

from grading.rubric import Rubric
from grading.types import Verdict
from storage.errors import InvalidInputError
from storage.services import reviewers, reviews
from storage.services.grade_records import record_grade
from tests.actors import ADMIN
from tests.kinds import LIKERT, MIXED, judge_report
from tests.storage.helpers import make_dataset, make_rubric, make_run

V = Verdict
CRITERIA = MIXED
RUBRIC = Rubric(CRITERIA)
_judge_report = judge_report


@pytest.fixture
def graded(sessions):
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset, [response, *_] = make_dataset(sessions, count=1)
    run = make_run(sessions, version.id, dataset.id)
    grade = record_grade(sessions, run.id, response.id, _judge_report(["MET", "Fair", "formal"]))
    ids = {c.name: c.id for c in version.criteria}
    ids["version"] = version.id
    return grade, response.id, ids


def test_an_option_label_is_stored_and_changes_the_effective_score(sessions, graded):
    grade, response_id, ids = graded
    assert [c.option for c in grade.criteria] == [None, "Fair", "formal"]
    saved = reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response_id,
                                      criterion_id=ids["clarity"], verdict=" excellent ")
    assert (saved.verdict, saved.option, saved.choice) == (V.MET, "Excellent", "Excellent")
    effective = reviews.effective_grade(sessions, grade.id)
    assert effective.score == pytest.approx(RUBRIC.compute_score(["MET", "Excellent",
                                                                   "formal"]))
    clarity = effective.criteria[1]
    assert (clarity.judge_choice, clarity.effective_choice, clarity.overridden) == (
        "Fair", "Excellent", True)

    # an NA option is stored as the abstention it is, and scored by the strategy
    na = reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response_id,
                                   criterion_id=ids["tone"], verdict="No Text")
    assert (na.verdict, na.option) == (V.CANNOT_ASSESS, "no text")
    assert reviews.effective_grade(sessions, grade.id).score == pytest.approx(
        RUBRIC.compute_score(["MET", "Excellent", "no text"]))
    # CANNOT_ASSESS names no option
    abstained = reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response_id,
                                          criterion_id=ids["clarity"], verdict="cannot assess")
    assert (abstained.verdict, abstained.option, abstained.previous_option) == (
        V.CANNOT_ASSESS, None, "Excellent")
    history = reviews.verdict_history(sessions, response_id)
    assert [(h.criterion_id, h.choice) for h in history if h.criterion_id == ids["clarity"]
            ] in ([(ids["clarity"], "Excellent"), (ids["clarity"], V.CANNOT_ASSESS)],
                  [(ids["clarity"], V.CANNOT_ASSESS), (ids["clarity"], "Excellent")])


@pytest.mark.parametrize("criterion, answer, words", [
    pytest.param("clarity", "MET", "criterion 'clarity' is answered by choosing one of its "
                 "options ('Poor', 'Fair', 'Good', 'Very good', 'Excellent')",
                 id="a-verdict-naming-no-option"),
    pytest.param("clarity", "Superb", "'Superb' is not one of them", id="an-unknown-label"),
    pytest.param("accurate", "Good", "criterion 'accurate': verdict must be MET, UNMET or "
                 "CANNOT_ASSESS", id="a-label-on-a-binary-criterion"),
])
def test_a_wrong_answer_names_the_criterion_and_nothing_is_written(
        sessions, graded, criterion, answer, words):
    grade, response_id, ids = graded
    with pytest.raises(InvalidInputError) as caught:
        reviews.save_review(sessions, actor=ADMIN, response_id=response_id, verdicts={
            ids["tone"]: ("casual", ""),  # a good answer in the same save is not written
            ids[criterion]: (answer, "")})
    assert words in str(caught.value)
    assert reviews.verdict_history(sessions, response_id) == []
    assert reviews.effective_grade(sessions, grade.id).score == grade.score


def test_reviewers_agree_on_the_same_option_and_dispute_different_ones(sessions, graded):
    grade, response_id, ids = graded
    ana = reviewers.Actor(key="ana@x", name="Ana", roles=frozenset({reviewers.Role.REVIEWER}))
    bo = reviewers.Actor(key="bo@x", name="Bo", roles=frozenset({reviewers.Role.REVIEWER}))
    for actor, label in ((ana, "Good"), (bo, "good")):
        reviews.set_human_verdict(sessions, actor=actor, response_id=response_id,
                                  criterion_id=ids["clarity"], verdict=label)
    for actor, label in ((ana, "formal"), (bo, "casual")):
        reviews.set_human_verdict(sessions, actor=actor, response_id=response_id,
                                  criterion_id=ids["tone"], verdict=label)
    effective = reviews.effective_grade(sessions, grade.id)
    _accurate, clarity, tone = effective.criteria
    assert (clarity.decision.status, clarity.effective_choice) == ("agreed", "Good")
    assert (tone.decision.status, tone.effective_choice) == ("disputed", "formal")
    assert effective.score == pytest.approx(RUBRIC.compute_score(["MET", "Good", "formal"]))

    reviews.adjudicate(sessions, actor=ADMIN, response_id=response_id,
                       criterion_id=ids["tone"], verdict="casual")
    reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response_id,
                              criterion_id=ids["accurate"], verdict="UNMET")
    human = reviews.human_score(sessions, response_id, ids["version"])
    assert human.score == pytest.approx(RUBRIC.compute_score(["UNMET", "Good", "casual"]))


def test_a_wording_trial_on_a_rating_compares_options(sessions, graded):
    """Trials used to refuse ratings; now a rating is tried on people's options (the whole
    trial through the provider path: tests/jobs/test_option_trials.py)."""
    from storage.services import trials

    grade, response_id, ids = graded
    reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response_id,
                              criterion_id=ids["tone"], verdict="no text")
    # an NA option is an abstention: nothing to compare, and the message says what to do
    with pytest.raises(InvalidInputError, match="nobody has reviewed 'tone' by choosing an "
                                                "option"):
        trials.plan_trial(sessions, base_run_id=grade.run_id, criterion_id=ids["tone"],
                          requirement="Which tone, formally?")
    reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response_id,
                              criterion_id=ids["clarity"], verdict="Good")
    plan = trials.plan_trial(sessions, base_run_id=grade.run_id, criterion_id=ids["clarity"],
                             requirement="How clear and short is it?")
    [case] = plan.cases
    assert (case.human, case.before) == ("Good", "Fair")
    assert plan.new_criterion.options == CRITERIA[1].options
    assert plan.new_criterion.requirement == "How clear and short is it?"


def test_the_gold_set_carries_option_labels_values_and_the_reference(sessions):
    from storage.services import datasets, labels

    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Refs", responses=[
        {"id": "a", "text": "five mg", "reference": "5 mg"}], actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id, limit=None)
    ids = {c.name: c.id for c in version.criteria}
    reviews.save_review(sessions, actor=ADMIN, response_id=response.id, verdicts={
        ids["accurate"]: ("MET", ""), ids["clarity"]: ("very good", "clear"),
        ids["tone"]: ("no text", "")})
    [record] = labels.iter_gold_records(sessions, version.id, dataset.id)
    assert record["reference"] == "5 mg"
    assert [(i["verdict"], i["criteria_met"], i["option_value"]) for i in record["rubrics"]] == [
        ("MET", True, None), ("Very good", None, 0.75), ("no text", None, None)]
    assert record["rubrics"][1]["reviewers"][0]["verdict"] == "Very good"
    assert record["human_score"] == pytest.approx(RUBRIC.compute_score(
        ["MET", "Very good", "no text"]))


def test_a_chosen_option_is_never_drawn_as_a_met_calibration_example(sessions, graded):
    from storage.services import calibration

    _grade, response_id, ids = graded
    for name, answer in (("accurate", "MET"), ("clarity", "Good")):
        reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response_id,
                                  criterion_id=ids[name], verdict=answer)
    counts = {c.label: (c.met, c.unmet)
              for c in calibration.reviewed_counts(sessions, ids["version"])}
    assert counts == {"accurate": (1, 0), "clarity": (0, 0), "tone": (0, 0)}


def test_agreement_on_stored_option_verdicts_is_weighted_kappa_on_the_labels(sessions):
    """The Agreement report reads the stored option labels (not the MET they are filed under):
    a judge one step off on a rating scale gets the quadratic-weighted kappa scikit-learn gives
    for the same labels, and never 100% agreement."""
    from sklearn.metrics import cohen_kappa_score

    from storage.services.agreement import agreement_report
    from storage.services.agreement_sources import HUMAN

    version = make_rubric(sessions, "Mixed agreement", CRITERIA)
    dataset, responses = make_dataset(sessions, count=6)
    run = make_run(sessions, version.id, dataset.id)
    judge = ["Poor", "Fair", "Good", "Very good", "Excellent", "Good"]
    people = ["Poor", "Good", "Good", "Excellent", "Excellent", "Fair"]
    ids = {c.name: c.id for c in version.criteria}
    for response, said, truth in zip(responses, judge, people, strict=True):
        record_grade(sessions, run.id, response.id, _judge_report(["MET", said, "formal"]))
        reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                                  criterion_id=ids["clarity"], verdict=truth)

    report = agreement_report(sessions, version.id, dataset.id)
    pair = report.pair(HUMAN, f"run:{run.id}").per_criterion[ids["clarity"]]
    order = [o.label for o in LIKERT]
    expected = cohen_kappa_score([order.index(v) for v in people],
                                 [order.index(v) for v in judge], weights="quadratic")
    assert pair.pairs_used == 6
    assert pair.percent_agreement == pytest.approx(100 * 3 / 6)
    assert pair.kappa == pytest.approx(expected)
