"""Code written against rubric's classes runs unchanged on grading (only the import differs)."""

from __future__ import annotations

import json

import pytest

from grading import CriterionReport, EvaluationReport, LengthPenalty, Rubric
from grading.autograders import (
    Autograder,
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.autograders.schemas import (
    CriterionEvaluation,
    OneShotOutput,
    PerCriterionOutput,
    RubricAsJudgeOutput,
)
from grading.rubric import UnusedArgumentWarning
from grading.utils import parse_json_to_dict

RUBRIC = Rubric.from_dict([
    {"weight": 10, "requirement": "mentions apples"},
    {"weight": -4, "requirement": "mentions worms"},
])


class KeywordJudge(Autograder):
    """A rubric 1.3-style custom grader: judge/generate/aggregate with strings."""

    def __init__(self, generate_fn, **kwargs):
        super().__init__(generate_fn=generate_fn, **kwargs)
        self.seen: list = []

    async def judge(self, to_grade: str, rubric, query=None):
        self.seen.append(to_grade)
        reports = []
        for criterion in rubric:
            answer = await self.generate("system", f"{criterion.requirement}\n{to_grade}")
            assert isinstance(answer, str)
            data = parse_json_to_dict(answer)
            reports.append(CriterionReport(
                requirement=criterion.requirement, weight=criterion.weight,
                verdict=data["criterion_status"], reason=data["explanation"]))
        return reports

    async def aggregate(self, judge_results, *, normalize=True):
        total = sum(r.weight for r in judge_results if r.verdict == "MET")
        score = total / 10 if normalize else total
        return EvaluationReport(score=score, raw_score=total, report=judge_results)


async def keyword_generate(system_prompt, user_prompt):
    requirement, _, text = user_prompt.partition("\n")
    word = requirement.split()[-1]
    status = "MET" if word in text else "UNMET"
    return f"Sure:\n```json\n{json.dumps({'criterion_status': status, 'explanation': word})}\n```"


async def test_a_custom_judge_receives_what_rubric_passes_and_its_aggregate_gets_normalize():
    grader = KeywordJudge(keyword_generate, normalize=False)
    with pytest.warns(UnusedArgumentWarning, match="some_option"):
        report = await RUBRIC.grade({"thinking": "worms?", "output": "apples and worms"},
                                    autograder=grader, query="q", some_option=True)
    assert grader.seen == ["<thinking>worms?</thinking>\n<output>apples and worms</output>"]
    assert [r.verdict.value for r in report.report] == ["MET", "MET"]
    assert report.score == 6 and report.raw_score == 6


async def test_the_length_penalty_applies_to_a_custom_grader_too():
    grader = KeywordJudge(keyword_generate,
                          length_penalty=LengthPenalty(free_budget=1, max_cap=2))
    report = await RUBRIC.grade("apples apples apples", autograder=grader)
    assert grader.seen == ["apples apples apples"]
    assert report.score == 0.5 and report.raw_score == 10


class LoudGrader(PerCriterionGrader):
    """Overrides generate() as rubric allows: returns text from the user's own client."""

    calls = 0

    async def generate(self, system_prompt, user_prompt, **kwargs):
        LoudGrader.calls += 1
        return '{"criterion_status": "UNMET", "explanation": "overridden"}'


async def test_an_overridden_generate_is_what_the_builtin_graders_call():
    report = await RUBRIC.grade("apples", autograder=LoudGrader())
    assert LoudGrader.calls == 2
    assert [r.reason for r in report.report] == ["overridden", "overridden"]
    assert report.score == 0.0


async def test_rubric_2_generate_fns_returning_output_models_work_with_keyword_calls():
    async def per_criterion(system_prompt, user_prompt, **kwargs):
        return PerCriterionOutput(criterion_status="MET", explanation="yes")

    async def holistic(system_prompt, user_prompt, **kwargs):
        return RubricAsJudgeOutput(overall_score=75, explanation="fine")

    report = await RUBRIC.grade("x", autograder=PerCriterionGrader(generate_fn=per_criterion))
    assert report.score == 0.6 and report.report[0].reason == "yes"
    report = await RUBRIC.grade("x", autograder=RubricAsJudgeGrader(generate_fn=holistic))
    assert report.score == 0.75 and report.reason == "fine"


def test_rubric_module_names_are_all_importable():
    import grading
    import grading.autograders
    import grading.autograders.schemas
    import grading.types
    import grading.utils

    names = {
        grading: ["Rubric", "Criterion", "CriterionReport", "EvaluationReport", "LengthPenalty",
                  "PenaltyType", "CountFn", "DefaultFallbackVerdicts", "ThinkingOutputDict",
                  "ToGradeInput", "compute_length_penalty", "normalize_to_grade_input",
                  "parse_thinking_output", "word_count", "CriterionEvaluation", "OneShotOutput",
                  "PerCriterionOutput", "RubricAsJudgeOutput", "PerCriterionGenerateFn",
                  "OneShotGenerateFn", "RubricAsJudgeGenerateFn",
                  "default_per_criterion_generate_fn", "default_oneshot_generate_fn",
                  "default_rubric_as_judge_generate_fn"],
        grading.autograders: ["Autograder", "PerCriterionGrader", "PerCriterionOneShotGrader",
                              "RubricAsJudgeGrader", "OneShotOutput", "PerCriterionOutput",
                              "RubricAsJudgeOutput"],
        grading.autograders.schemas: ["CriterionEvaluation", "OneShotOutput",
                                      "PerCriterionOutput", "RubricAsJudgeOutput"],
        grading.types: ["CountFn", "ThinkingOutputDict", "ToGradeInput", "PenaltyType",
                        "DefaultFallbackVerdicts", "LengthPenalty", "Criterion",
                        "CriterionReport", "EvaluationReport", "GenerateFn", "AutograderFn",
                        "PerCriterionGenerateFn", "OneShotGenerateFn",
                        "RubricAsJudgeGenerateFn"],
        grading.utils: ["word_count", "parse_thinking_output", "normalize_to_grade_input",
                        "compute_length_penalty", "parse_json_to_dict", "default_generate_fn",
                        "default_per_criterion_generate_fn", "default_oneshot_generate_fn",
                        "default_rubric_as_judge_generate_fn"],
    }
    missing = [f"{m.__name__}.{n}" for m, ns in names.items() for n in ns if not hasattr(m, n)]
    assert missing == []


async def test_grade_accepts_and_ignores_extra_keyword_arguments_as_rubric_does():
    async def met_if_apples(system_prompt, user_prompt):
        response = user_prompt.split("<response>")[-1]
        status = "MET" if "mentions apples" in user_prompt and "apples" in response else "UNMET"
        return json.dumps({"criterion_status": status, "explanation": "x"})

    grader = PerCriterionGrader(generate_fn=met_if_apples)
    plain = await RUBRIC.grade("apples", autograder=grader)
    # accepted as rubric accepts them, but never silently (issue 34)
    with pytest.warns(UnusedArgumentWarning, match="metadata, request_id, temperature"):
        extra = await RUBRIC.grade("apples", autograder=grader, query=None, temperature=0.3,
                                   request_id="r-1", metadata={"run": 1})
    assert extra.score == plain.score == 1.0
    assert [r.verdict for r in extra.report] == [r.verdict for r in plain.report]


def _answers(model):
    """The same answer as a string, a GenerateResult and the 2.x output model."""
    from grading.types import GenerateResult

    text = model.model_dump_json()
    return {"str": text, "GenerateResult": GenerateResult(text=text), "model": model}


ONE_SHOT = OneShotOutput(criteria_evaluations=[
    CriterionEvaluation(criterion_number=1, criterion_status="MET", explanation="apples"),
    CriterionEvaluation(criterion_number=2, criterion_status="UNMET", explanation="no worms")])


@pytest.mark.parametrize("kind", ["str", "GenerateResult", "model"])
@pytest.mark.parametrize(("grader", "answer", "score"), [
    (PerCriterionGrader, PerCriterionOutput(criterion_status="MET", explanation="e"), 0.6),
    (PerCriterionOneShotGrader, ONE_SHOT, 1.0),
    (RubricAsJudgeGrader, RubricAsJudgeOutput(overall_score=75, explanation="fine"), 0.75),
], ids=["per_criterion", "one_shot", "holistic"])
async def test_every_grader_takes_a_string_a_generate_result_or_an_output_model(
        grader, answer, score, kind):
    returned = _answers(answer)[kind]

    async def generate(system_prompt, user_prompt, **kwargs):
        return returned

    report = await RUBRIC.grade("apples", autograder=grader(generate_fn=generate))
    assert report.score == pytest.approx(score) and report.error is None
