"""Human verdicts: append-only history, effective scores through grading's aggregation."""

from __future__ import annotations

import random

import pytest

from grading.length_penalty import compute_length_penalty
from grading.types import LengthPenalty, Verdict
from storage.errors import InvalidInputError, NotFoundError, StaleVerdictError
from storage.run_settings import RunSettings
from storage.services import datasets, reviews, runs
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, make_rubric
from tests.storage.judges import ScriptedJudge, grade

V = Verdict
ALL = [V.MET, V.UNMET, V.CANNOT_ASSESS]


def _setup(sessions, texts: dict[str, str], grader: str = "per_criterion", **settings):
    version = make_rubric(sessions)
    dataset = datasets.create_dataset(
        sessions, "Answers", responses=[{"id": k, "text": t} for k, t in texts.items()],
            actor=ADMIN)
    responses = {r.external_id: r for r in datasets.list_responses(sessions, dataset.id)}
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader=grader, model="openai/judge",
                          settings=RunSettings(allow_cannot_assess=True, **settings), actor=ADMIN)
    return version, responses, run


def _record(sessions, run, version, responses, judge):
    for _key, response in responses.items():
        report = grade(run.grader, run.settings, version.to_criteria(), response.output, judge)
        runs.record_grade(sessions, run.id, response.id, report)


def test_override_changes_the_effective_score_and_keeps_the_judge_score(sessions):
    version, responses, run = _setup(sessions, {"a": "[a] short answer"})
    judge = ScriptedJudge(CRITERIA, {"a": [V.MET, V.UNMET, V.MET, V.UNMET]})
    _record(sessions, run, version, responses, judge)
    [before] = reviews.effective_grades_for_run(sessions, run.id)
    assert before.score == before.judge_score == pytest.approx(12.5 / 17.5)
    assert before.reviewed_count == 0 and before.criteria_count == 4

    saved = reviews.set_human_verdict(
        sessions, response_id=responses["a"].id, criterion_id=version.criteria[1].id,
        verdict="met", reviewer="ana", note="the source is in the footnote")
    assert (saved.verdict, saved.previous_verdict, saved.seq) == (V.MET, None, 1)
    [after] = reviews.effective_grades_for_response(sessions, responses["a"].id)
    assert after.score == pytest.approx(1.0)
    assert after.judge_score == before.judge_score
    assert after.reviewed_count == 1
    cites = after.criteria[1]
    assert (cites.judge_verdict, cites.effective_verdict, cites.overridden) == (
        V.UNMET, V.MET, True)
    assert cites.judge_reason == "judged 1" and cites.human.reviewer == "ana"
    assert reviews.effective_grade(sessions, after.grade_id) == after


def test_history_records_who_changed_what_from_what_to_what_and_why(sessions):
    version, responses, _ = _setup(sessions, {"a": "[a] text"})
    rid, cid = responses["a"].id, version.criteria[0].id
    first = reviews.set_human_verdict(sessions, response_id=rid, criterion_id=cid,
                                      verdict="MET", reviewer="ana")
    second = reviews.set_human_verdict(sessions, response_id=rid, criterion_id=cid,
                                       verdict="UNMET", reviewer="bo", note="dose is wrong")
    reviews.set_human_verdict(sessions, response_id=rid, criterion_id=version.criteria[2].id,
                              verdict="CANNOT_ASSESS", reviewer="bo")
    history = reviews.verdict_history(sessions, rid, criterion_id=cid)
    assert [(h.reviewer, h.previous_verdict, h.verdict, h.note) for h in history] == [
        ("ana", None, V.MET, ""), ("bo", V.MET, V.UNMET, "dose is wrong")]
    assert history[1].replaces_id == first.id and history[1].created_at >= first.created_at
    assert len(reviews.verdict_history(sessions, rid, rubric_version_id=version.id)) == 3
    current = reviews.current_verdicts(sessions, rid, version.id)
    assert current[cid] == second and len(current) == 2


def test_bad_reviewer_input_is_explained(sessions):
    version, responses, _ = _setup(sessions, {"a": "[a] text"})
    base = {"response_id": responses["a"].id, "criterion_id": version.criteria[0].id}
    with pytest.raises(InvalidInputError, match="name"):
        reviews.set_human_verdict(sessions, **base, verdict="MET", reviewer="  ")
    with pytest.raises(InvalidInputError, match="MET, UNMET or CANNOT_ASSESS"):
        reviews.set_human_verdict(sessions, **base, verdict="maybe", reviewer="ana")
    with pytest.raises(NotFoundError):
        reviews.set_human_verdict(sessions, response_id=base["response_id"],
                                  criterion_id=10**6, verdict="MET", reviewer="ana")
    assert reviews.verdict_history(sessions, base["response_id"]) == []


def test_a_stale_form_is_detected_and_nothing_is_written(sessions):
    version, responses, _ = _setup(sessions, {"a": "[a] text"})
    key = {"response_id": responses["a"].id, "criterion_id": version.criteria[0].id}
    # both reviewers open the form while there is no verdict yet
    ana = reviews.set_human_verdict(sessions, **key, verdict="MET", reviewer="ana",
                                    expected_current_id=None)
    with pytest.raises(StaleVerdictError, match="ana changed this verdict to MET") as caught:
        reviews.set_human_verdict(sessions, **key, verdict="UNMET", reviewer="bo",
                                  expected_current_id=None)
    assert caught.value.current_id == ana.id
    # after reloading, bo's form shows ana's verdict and the save goes through
    bo = reviews.set_human_verdict(sessions, **key, verdict="UNMET", reviewer="bo",
                                   expected_current_id=ana.id)
    assert bo.previous_verdict == V.MET
    assert len(reviews.verdict_history(sessions, key["response_id"])) == 2


SCORING = [
    pytest.param(strategy, normalize, penalty, id=f"{strategy}-{'norm' if normalize else 'raw'}"
                 f"{'-penalty' if penalty else ''}")
    for strategy in ("skip", "zero", "partial", "fail")
    for normalize in (True, False)
    for penalty in (None, LengthPenalty(free_budget=5, max_cap=30, penalty_at_cap=0.4,
                                        exponent=1.3))
]


@pytest.mark.parametrize(("strategy", "normalize", "penalty"), SCORING)
def test_effective_scores_agree_with_the_graders(sessions, strategy, normalize, penalty):
    """Storage's effective score = what the real grader gives when the judge answers the
    effective verdicts, for per-criterion and one-shot runs, every strategy and setting."""
    rng = random.Random(f"{strategy}{normalize}{penalty}")
    texts = {f"r{i}": f"[r{i}] " + "word " * n for i, n in enumerate((2, 8, 20, 40, 3))}
    settings = {"cannot_assess": strategy, "normalize": normalize, "partial_credit": 0.25,
                "length_penalty": penalty}
    judged = {k: [rng.choice(ALL) for _ in CRITERIA] for k in texts}
    judged["r4"] = [V.CANNOT_ASSESS] * 4  # nothing to score under "skip"
    version, responses, run = _setup(sessions, texts, **settings)
    second = runs.create_run(sessions, rubric_version_id=version.id,
                             dataset_id=run.dataset_id, grader="one_shot", model="other",
                             settings=run.settings, actor=ADMIN)
    judge = ScriptedJudge(CRITERIA, judged)
    _record(sessions, run, version, responses, judge)
    _record(sessions, second, version, responses, judge)

    effective = {k: list(v) for k, v in judged.items()}
    for number, key in enumerate(texts):
        for index in rng.sample(range(len(CRITERIA)), k=min(number, len(CRITERIA))):
            verdict = rng.choice(ALL)
            reviews.set_human_verdict(sessions, response_id=responses[key].id,
                                      criterion_id=version.criteria[index].id,
                                      verdict=verdict, reviewer="ana")
            effective[key][index] = verdict

    truth = ScriptedJudge(CRITERIA, effective)
    for current in (run, second):
        by_response = {g.response_id: g for g in reviews.effective_grades_for_run(
            sessions, current.id)}
        for number, (key, response) in enumerate(responses.items()):
            expected = grade(current.grader, current.settings, CRITERIA, response.output,
                             truth)
            got = by_response[response.id]
            assert got.score == pytest.approx(expected.score, abs=1e-12, rel=1e-12), key
            assert got.raw_score == pytest.approx(expected.raw_score, abs=1e-12), key
            assert got.length_penalty == expected.length_penalty
            assert [c.effective_verdict for c in got.criteria] == effective[key]
            assert got.reviewed_count == min(number, len(CRITERIA))
            if number == 0:  # nothing reviewed: exactly the judge's stored score
                assert got.score == got.judge_score


def test_rubric_as_judge_keeps_its_score_until_every_criterion_is_reviewed(sessions):
    penalty = LengthPenalty(free_budget=2, max_cap=10, penalty_at_cap=0.2)
    version, responses, run = _setup(sessions, {"a": "[a] five words of answer"},
                                     grader="rubric_as_judge", length_penalty=penalty)
    holistic = ScriptedJudge(CRITERIA, {}, holistic={"a": 80})
    _record(sessions, run, version, responses, holistic)
    rid = responses["a"].id
    humans = [V.MET, V.UNMET, V.MET, V.MET]
    for index, verdict in enumerate(humans):
        [current] = reviews.effective_grades_for_response(sessions, rid)
        assert current.score == current.judge_score == pytest.approx(
            0.8 - compute_length_penalty(responses["a"].output, penalty))
        assert current.reviewed_count == index
        reviews.set_human_verdict(sessions, response_id=rid,
                                  criterion_id=version.criteria[index].id, verdict=verdict,
                                  reviewer="ana")
    [reviewed] = reviews.effective_grades_for_response(sessions, rid)
    expected = grade("per_criterion", run.settings, CRITERIA, responses["a"].output,
                     ScriptedJudge(CRITERIA, {"a": humans}))
    assert reviewed.fully_reviewed
    assert reviewed.score == pytest.approx(expected.score)
    assert reviewed.score != pytest.approx(reviewed.judge_score)


def test_human_score_exists_once_every_criterion_is_reviewed(sessions):
    version, responses, run = _setup(sessions, {"a": "[a] x", "b": "[b] y"})
    rid = responses["a"].id
    humans = [V.MET, V.CANNOT_ASSESS, V.UNMET, V.UNMET]
    for index, verdict in enumerate(humans):
        partial = reviews.human_score(sessions, rid, version.id)
        assert (partial.score, partial.reviewed_count, partial.complete) == (None, index, False)
        reviews.set_human_verdict(sessions, response_id=rid,
                                  criterion_id=version.criteria[index].id, verdict=verdict,
                                  reviewer="ana")
    done = reviews.human_score(sessions, rid, version.id, run.settings.scoring())
    expected = grade("per_criterion", run.settings, CRITERIA, "[a] x",
                     ScriptedJudge(CRITERIA, {"a": humans}))
    assert done.complete and done.score == pytest.approx(expected.score)
    assert done.raw_score == pytest.approx(expected.raw_score)
    [a, b] = reviews.human_scores(sessions, version.id, [rid, responses["b"].id])
    assert a.complete and b.reviewed_count == 0 and b.score is None


def test_a_failed_criterion_is_scored_once_a_human_fills_it_in(sessions):
    version, responses, run = _setup(sessions, {"a": "[a] x"})
    from grading.types import CriterionReport, EvaluationReport

    failed = EvaluationReport(score=None, error="judge failed on 'cites'", report=[
        CriterionReport(**c.model_dump(), verdict=None if i == 1 else V.MET,
                        error="no answer" if i == 1 else None)
        for i, c in enumerate(CRITERIA)])
    runs.record_grade(sessions, run.id, responses["a"].id, failed)
    rid = responses["a"].id
    reviews.set_human_verdict(sessions, response_id=rid, criterion_id=version.criteria[0].id,
                              verdict="MET", reviewer="ana")
    [g] = reviews.effective_grades_for_run(sessions, run.id)
    assert g.score is None and "1 criteria have no verdict" in g.error
    reviews.set_human_verdict(sessions, response_id=rid, criterion_id=version.criteria[1].id,
                              verdict="UNMET", reviewer="ana")
    [g] = reviews.effective_grades_for_run(sessions, run.id)
    expected = grade("per_criterion", run.settings, CRITERIA, "[a] x",
                     ScriptedJudge(CRITERIA, {"a": [V.MET, V.UNMET, V.MET, V.MET]}))
    assert g.error is None and g.score == pytest.approx(expected.score)


def test_verdicts_under_one_version_do_not_touch_another(sessions):
    from storage.services import rubrics

    version, responses, run = _setup(sessions, {"a": "[a] x"})
    _record(sessions, run, version, responses,
            ScriptedJudge(CRITERIA, {"a": [V.MET, V.MET, V.MET, V.UNMET]}))
    v2 = rubrics.save_criteria(sessions, version.id, CRITERIA, actor=ADMIN)  # frozen: a new version
    reviews.set_human_verdict(sessions, response_id=responses["a"].id,
                              criterion_id=v2.criteria[3].id, verdict="MET", reviewer="ana")
    [g] = reviews.effective_grades_for_run(sessions, run.id)
    assert g.reviewed_count == 0 and g.score == g.judge_score == 1.0


def test_effective_grades_for_a_large_selection_are_read_in_chunks(sessions):
    version, responses, run = _setup(sessions, {f"r{i}": f"[r{i}] x" for i in range(3)})
    judge = ScriptedJudge(CRITERIA, {k: [V.MET, V.UNMET, V.MET, V.UNMET] for k in responses})
    _record(sessions, run, version, responses, judge)
    ids = [r.id for r in responses.values()]
    # ids that have no grade (or do not exist) are simply absent from the result
    selection = [*ids, *range(10**6, 10**6 + 1200)]
    got = reviews.effective_grades_for_run(sessions, run.id, selection)
    assert [g.response_id for g in got] == sorted(ids)
