"""The three graders with a scripted generate_fn: scores, retries, fallbacks, errors, spend."""

from __future__ import annotations

import asyncio

import pytest

from grading import (
    ConfigurationError,
    Criterion,
    CriterionReport,
    GenerateResult,
    GradingError,
    LengthPenalty,
    ProviderError,
    Rubric,
    ScoringSettings,
    TokenUsage,
    TransientProviderError,
    Verdict,
)
from grading.autograders import (
    Autograder,
    PerCriterionGrader,
    PerCriterionOneShotGrader,
    RubricAsJudgeGrader,
)
from grading.prompts import PER_CRITERION_SYSTEM_PROMPT
from tests.grading.scripted import ScriptedGenerate, verdicts_by_requirement

FAST = {"retry_base_delay": 0.0, "retry_max_delay": 0.01}
RUBRIC = Rubric.from_dict([
    {"weight": 10, "requirement": "Alpha"},
    {"weight": 5, "requirement": "Beta"},
    {"weight": -3, "requirement": "Gamma"},
])
MET_UNMET_MET = {"Alpha": "MET", "Beta": "UNMET", "Gamma": "MET"}


def one_shot_answer(*verdicts: str) -> str:
    items = ", ".join(
        f'{{"number": {n}, "verdict": "{v}", "reason": "r{n}"}}'
        for n, v in enumerate(verdicts, start=1)
    )
    return f'{{"criteria": [{items}]}}'


def spent(text: str, prompt: int, completion: int, cost: float | None) -> GenerateResult:
    usage = TokenUsage(prompt_tokens=prompt, completion_tokens=completion,
                       total_tokens=prompt + completion)
    return GenerateResult(text=text, usage=usage, cost=cost)


# -- scores ----------------------------------------------------------------------------------
async def test_per_criterion_grader_scores_the_reference_vector():
    generate = ScriptedGenerate(route=verdicts_by_requirement(MET_UNMET_MET))
    result = await RUBRIC.grade("text", autograder=PerCriterionGrader(generate))
    assert result.score == pytest.approx(0.466667, abs=1e-6)
    assert result.raw_score == 7.0
    assert result.llm_raw_score == 7.0
    assert [r.verdict for r in result.report] == [Verdict.MET, Verdict.UNMET, Verdict.MET]
    assert [r.reason for r in result.report] == ["because Alpha", "because Beta", "because Gamma"]
    assert result.error is None
    assert len(generate.calls) == 3
    assert all(c.system_prompt == PER_CRITERION_SYSTEM_PROMPT for c in generate.calls)
    assert all(c.response_format["json_schema"]["name"] == "criterion_verdict"
               for c in generate.calls)


async def test_one_shot_grader_makes_one_call_and_scores_the_same():
    generate = ScriptedGenerate(one_shot_answer("MET", "UNMET", "MET"))
    result = await RUBRIC.grade("text", autograder=PerCriterionOneShotGrader(generate))
    assert result.score == pytest.approx(0.466667, abs=1e-6)
    assert result.raw_score == 7.0
    assert [r.reason for r in result.report] == ["r1", "r2", "r3"]
    assert len(generate.calls) == 1


async def test_all_negative_rubric_vector():
    rubric = Rubric.from_dict([{"weight": -4, "requirement": "Alpha"},
                               {"weight": -6, "requirement": "Beta"}])
    generate = ScriptedGenerate(route=verdicts_by_requirement({"Alpha": "MET", "Beta": "UNMET"}))
    result = await rubric.grade("t", autograder=PerCriterionGrader(generate))
    assert result.score == pytest.approx(0.6)
    assert result.raw_score == -4.0


@pytest.mark.parametrize(
    ("normalize", "score"),
    [pytest.param(True, 0.85, id="normalized"), pytest.param(False, 12.75, id="raw")],
)
async def test_rubric_as_judge_converts_the_holistic_score(normalize, score):
    generate = ScriptedGenerate('{"score": 85, "reason": "good"}')
    grader = RubricAsJudgeGrader(generate, normalize=normalize)
    result = await RUBRIC.grade("text", autograder=grader)
    assert result.score == pytest.approx(score)
    assert result.raw_score == pytest.approx(12.75)
    assert result.llm_raw_score == 85
    assert result.report is None
    assert result.reason == "good"
    assert generate.calls[0].response_format["json_schema"]["name"] == "holistic_score"


async def test_rubric_as_judge_on_all_negative_rubric():
    rubric = Rubric.from_dict([{"weight": -4, "requirement": "A"},
                               {"weight": -6, "requirement": "B"}])
    generate = ScriptedGenerate('{"score": 70, "reason": "r"}')
    result = await rubric.grade("t", autograder=RubricAsJudgeGrader(generate))
    assert result.score == pytest.approx(0.7)
    assert result.raw_score == pytest.approx(-10 * 0.3)


async def test_normalize_false_returns_the_weighted_sum():
    generate = ScriptedGenerate(route=verdicts_by_requirement(
        {"Alpha": "UNMET", "Beta": "UNMET", "Gamma": "MET"}))
    result = await RUBRIC.grade("t", autograder=PerCriterionGrader(generate, normalize=False))
    assert result.score == -3.0
    assert result.raw_score == -3.0


# -- retries -----------------------------------------------------------------------------------
async def test_unparseable_answer_is_retried_and_every_attempt_is_paid_for():
    generate = ScriptedGenerate(
        spent("I think it is fine", 10, 5, 0.001),
        spent('{"verdict": "MET", "reason": "ok"}', 12, 6, 0.002),
    )
    rubric = Rubric([Criterion(requirement="Alpha")])
    result = await rubric.grade("t", autograder=PerCriterionGrader(generate, **FAST))
    assert result.score == 1.0
    assert len(generate.calls) == 2
    assert result.token_usage == TokenUsage(prompt_tokens=22, completion_tokens=11,
                                            total_tokens=33)
    assert result.completion_cost == pytest.approx(0.003)


@pytest.mark.parametrize(("given", "used", "score"), [(850, 100, 1.0), (-20, 0, 0.0)])
async def test_out_of_range_holistic_score_is_clamped_as_rubric_does_and_noted(given, used, score):
    # rubric 1.3/2.x clamp the judge's number into [0, 1] instead of failing (issue 14).
    generate = ScriptedGenerate(f'{{"score": {given}, "reason": "x"}}')
    result = await RUBRIC.grade("t", autograder=RubricAsJudgeGrader(generate, **FAST))
    assert len(generate.calls) == 1
    assert result.score == score
    assert result.llm_raw_score == given
    assert result.error is None
    assert result.notes == (f"the judge's score {given} is outside 0-100; {used} was used",)


async def test_cannot_assess_answer_is_a_parse_failure_unless_allowed():
    answers = ['{"verdict": "CANNOT_ASSESS", "reason": "?"}', '{"verdict": "MET", "reason": "ok"}']
    generate = ScriptedGenerate(*answers)
    rubric = Rubric([Criterion(requirement="Alpha")])
    result = await rubric.grade("t", autograder=PerCriterionGrader(generate, **FAST))
    assert result.report[0].verdict is Verdict.MET
    assert len(generate.calls) == 2


async def test_parse_failures_exhausted_raise_a_clear_grading_error():
    rubric = Rubric([Criterion(requirement="Alpha", name="alpha")])
    generate = ScriptedGenerate("nope", "still nope", "nope again", "never asked")
    with pytest.raises(GradingError) as caught:
        await rubric.grade("t", autograder=PerCriterionGrader(generate, max_retries=2, **FAST))
    message = str(caught.value)
    assert "criterion 1 ('alpha')" in message
    assert "3 attempts" in message
    assert "nope again" in message  # preview of the last raw answer
    assert isinstance(caught.value, ValueError)  # drop-in for the rubric package
    assert len(generate.calls) == 3


async def test_max_retries_zero_means_a_single_attempt():
    generate = ScriptedGenerate("bad", '{"verdict": "MET"}')
    with pytest.raises(GradingError):
        await Rubric([Criterion(requirement="A")]).grade(
            "t", autograder=PerCriterionGrader(generate, max_retries=0))
    assert len(generate.calls) == 1


async def test_transient_failures_are_retried_with_their_own_budget():
    generate = ScriptedGenerate(
        TransientProviderError("429", retry_after=0.0, status_code=429),
        TimeoutError(),
        ConnectionError("reset"),
        "garbage",  # a parse failure does not use the transport budget
        '{"verdict": "MET", "reason": "ok"}',
    )
    grader = PerCriterionGrader(generate, transport_retries=3, max_retries=1, **FAST)
    result = await Rubric([Criterion(requirement="A")]).grade("t", autograder=grader)
    assert result.score == 1.0
    assert len(generate.calls) == 5


async def test_exception_with_retryable_status_code_from_user_fn_is_retried():
    class SdkError(Exception):
        status_code = 503

    generate = ScriptedGenerate(SdkError("busy"), '{"verdict": "UNMET", "reason": "no"}')
    result = await Rubric([Criterion(requirement="A")]).grade(
        "t", autograder=PerCriterionGrader(generate, **FAST))
    assert result.score == 0.0
    assert len(generate.calls) == 2


async def test_transport_failures_exhausted_raise():
    generate = ScriptedGenerate(*(TransientProviderError("boom", status_code=500)
                                  for _ in range(3)))
    grader = PerCriterionGrader(generate, transport_retries=2, **FAST)
    with pytest.raises(GradingError, match="failed 3 times"):
        await Rubric([Criterion(requirement="A")]).grade("t", autograder=grader)
    assert len(generate.calls) == 3


async def test_provider_error_fails_at_once_even_with_fallbacks():
    generate = ScriptedGenerate(ProviderError("Set OPENAI_API_KEY"), "unused")
    grader = PerCriterionGrader(generate, default_fallback_verdicts={"positive": "UNMET"}, **FAST)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        await Rubric([Criterion(requirement="A")]).grade("t", autograder=grader)
    assert len(generate.calls) == 1


async def test_client_error_status_from_user_fn_is_not_retried():
    class SdkAuthError(Exception):
        status_code = 401

    generate = ScriptedGenerate(SdkAuthError("bad key"), "unused")
    with pytest.raises(GradingError, match="HTTP 401"):
        await Rubric([Criterion(requirement="A")]).grade(
            "t", autograder=PerCriterionGrader(generate, **FAST))
    assert len(generate.calls) == 1


async def test_bugs_in_generate_fn_propagate_untouched():
    generate = ScriptedGenerate(KeyError("oops"))
    with pytest.raises(KeyError):
        await Rubric([Criterion(requirement="A")]).grade(
            "t", autograder=PerCriterionGrader(generate, **FAST))


# -- fallbacks and report mode -----------------------------------------------------------------
async def test_fallback_verdicts_count_by_weight_sign_and_are_marked():
    def route(prompt: str) -> str:
        return "unparseable" if "\nBeta\n" in prompt or "\nGamma\n" in prompt else (
            '{"verdict": "MET", "reason": "ok"}')

    grader = PerCriterionGrader(
        ScriptedGenerate(route=route),
        default_fallback_verdicts={"positive": "UNMET", "negative": "MET"},
        **FAST,
    )
    result = await RUBRIC.grade("t", autograder=grader)
    alpha, beta, gamma = result.report
    assert (alpha.verdict, alpha.error) == (Verdict.MET, None)
    assert beta.verdict is Verdict.UNMET and "fallback" in beta.error
    assert gamma.verdict is Verdict.MET and "fallback" in gamma.error
    assert result.raw_score == 10 - 3
    assert result.score == pytest.approx(7 / 15)
    assert "fallback verdicts used for 2 of 3" in result.error


async def test_missing_fallback_key_means_unmet():
    grader = PerCriterionGrader(ScriptedGenerate(route=lambda p: "bad"),
                                default_fallback_verdicts={"positive": "MET"}, **FAST)
    result = await RUBRIC.grade("t", autograder=grader)
    assert [r.verdict for r in result.report] == [Verdict.MET, Verdict.MET, Verdict.UNMET]


async def test_report_mode_returns_no_score_and_says_which_criterion_failed():
    def route(prompt: str) -> str:
        return "garbage" if "\nBeta\n" in prompt else '{"verdict": "MET", "reason": "ok"}'

    grader = PerCriterionGrader(ScriptedGenerate(route=route), on_error="report", **FAST)
    result = await RUBRIC.grade("t", autograder=grader)
    assert result.score is None
    assert result.raw_score is None
    assert "criterion 2" in result.error
    alpha, beta, _ = result.report
    assert alpha.verdict is Verdict.MET
    assert beta.verdict is None and "garbage" in beta.error


async def test_one_shot_failure_falls_back_for_every_criterion():
    grader = PerCriterionOneShotGrader(
        # an unusable answer, three times (an answer leaving criteria out is completed by
        # per-criterion calls instead: tests/grading/test_one_shot_completion.py)
        ScriptedGenerate(*['{"criteria": "all MET"}'] * 3),
        default_fallback_verdicts={"positive": "UNMET", "negative": "MET"},
        **FAST,
    )
    result = await RUBRIC.grade("t", autograder=grader)
    assert [r.verdict for r in result.report] == [Verdict.UNMET, Verdict.UNMET, Verdict.MET]
    assert all("fallback" in r.error for r in result.report)
    assert result.score == 0.0


async def test_one_shot_failure_in_report_mode():
    grader = PerCriterionOneShotGrader(ScriptedGenerate(route=lambda p: "x"), on_error="report",
                                       **FAST)
    result = await RUBRIC.grade("t", autograder=grader)
    assert result.score is None
    assert all(r.verdict is None for r in result.report)


async def test_rubric_as_judge_fallback_aggregates_the_fallback_verdicts():
    grader = RubricAsJudgeGrader(
        ScriptedGenerate(route=lambda p: '{"score": "lots"}'),
        default_fallback_verdicts={"positive": "MET", "negative": "UNMET"},
        **FAST,
    )
    result = await RUBRIC.grade("t", autograder=grader)
    assert result.score == 1.0
    assert result.raw_score == 15.0
    assert result.llm_raw_score is None
    assert result.report is None
    assert "fallback" in result.error


async def test_rubric_as_judge_failure_raises_or_reports():
    generate = ScriptedGenerate(route=lambda p: "no score")
    with pytest.raises(GradingError, match="holistic"):
        await RUBRIC.grade("t", autograder=RubricAsJudgeGrader(generate, **FAST))
    result = await RUBRIC.grade(
        "t", autograder=RubricAsJudgeGrader(generate, on_error="report", **FAST))
    assert (result.score, result.raw_score, result.llm_raw_score) == (None, None, None)
    assert "no usable holistic score" in result.error


# -- spend ---------------------------------------------------------------------------------------
async def test_token_usage_and_cost_are_summed_over_calls():
    def route(prompt: str) -> GenerateResult:
        return spent('{"verdict": "MET", "reason": "ok"}', 100, 10, 0.5)

    result = await RUBRIC.grade("t", autograder=PerCriterionGrader(ScriptedGenerate(route=route)))
    assert result.token_usage == TokenUsage(prompt_tokens=300, completion_tokens=30,
                                            total_tokens=330)
    assert result.completion_cost == pytest.approx(1.5)


async def test_cost_is_unknown_if_any_call_cost_is_unknown():
    def route(prompt: str) -> GenerateResult:
        cost = None if "\nBeta\n" in prompt else 0.5
        return spent('{"verdict": "MET", "reason": "ok"}', 1, 1, cost)

    result = await RUBRIC.grade("t", autograder=PerCriterionGrader(ScriptedGenerate(route=route)))
    assert result.completion_cost is None
    assert result.token_usage.total_tokens == 6


async def test_plain_string_answers_have_unknown_usage_and_cost():
    generate = ScriptedGenerate(route=verdicts_by_requirement(MET_UNMET_MET))
    result = await RUBRIC.grade("t", autograder=PerCriterionGrader(generate))
    assert result.token_usage is None
    assert result.completion_cost is None


# -- CANNOT_ASSESS ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("strategy", "score", "raw"),
    [
        pytest.param("skip", 1.0, 10.0, id="skip"),
        pytest.param("zero", 10 / 15, 10.0, id="zero"),
        pytest.param("partial", 12.5 / 15, 12.5, id="partial"),
        pytest.param("fail", 10 / 15, 10.0, id="fail"),
    ],
)
async def test_cannot_assess_strategies(strategy, score, raw):
    verdicts = {"Alpha": "MET", "Beta": "CANNOT_ASSESS", "Gamma": "UNMET"}
    grader = PerCriterionGrader(ScriptedGenerate(route=verdicts_by_requirement(verdicts)),
                                allow_cannot_assess=True, cannot_assess=strategy)
    result = await RUBRIC.grade("t", autograder=grader)
    assert result.score == pytest.approx(score)
    assert result.raw_score == pytest.approx(raw)
    assert result.cannot_assess_count == 1
    assert result.report[1].verdict is Verdict.CANNOT_ASSESS


async def test_cannot_assess_fail_strategy_charges_negative_criteria():
    verdicts = {"Alpha": "MET", "Beta": "MET", "Gamma": "CANNOT_ASSESS"}
    grader = PerCriterionGrader(ScriptedGenerate(route=verdicts_by_requirement(verdicts)),
                                allow_cannot_assess=True, cannot_assess="fail")
    result = await RUBRIC.grade("t", autograder=grader)
    assert result.raw_score == 12.0


async def test_everything_cannot_assess_gives_no_score_not_zero():
    verdicts = dict.fromkeys(("Alpha", "Beta", "Gamma"), "CANNOT_ASSESS")
    grader = PerCriterionGrader(ScriptedGenerate(route=verdicts_by_requirement(verdicts)),
                                allow_cannot_assess=True)
    result = await RUBRIC.grade("t", autograder=grader)
    assert result.score is None
    assert result.cannot_assess_count == 3
    assert "nothing left to score" in result.error


async def test_allow_cannot_assess_offers_it_in_prompt_and_schema():
    generate = ScriptedGenerate('{"verdict": "MET", "reason": "ok"}')
    grader = PerCriterionGrader(generate, allow_cannot_assess=True)
    await Rubric([Criterion(requirement="A")]).grade("t", autograder=grader)
    (call,) = generate.calls
    assert "CANNOT_ASSESS" in call.user_prompt
    assert "CANNOT_ASSESS" in str(call.response_format)


# -- length penalty ------------------------------------------------------------------------------
async def test_length_penalty_lowers_score_only_and_keeps_every_other_field():
    penalty = LengthPenalty(free_budget=10, max_cap=20, penalty_at_cap=0.5, exponent=1.6)
    answer = spent('{"verdict": "MET", "reason": "ok"}', 5, 5, 0.25)
    grader = PerCriterionGrader(ScriptedGenerate(route=lambda p: answer), length_penalty=penalty)
    result = await RUBRIC.grade(" ".join(["word"] * 15), autograder=grader)
    assert result.length_penalty == pytest.approx(0.164938, abs=1e-6)
    assert result.score == pytest.approx(12 / 15 - 0.164938, abs=1e-6)
    assert result.raw_score == 12.0
    assert result.llm_raw_score == 12.0
    assert len(result.report) == 3
    assert result.token_usage.total_tokens == 30
    assert result.completion_cost == pytest.approx(0.75)


async def test_length_penalty_clamps_normalized_score_at_zero():
    penalty = LengthPenalty(free_budget=1, max_cap=2, penalty_at_cap=0.9)
    grader = RubricAsJudgeGrader(ScriptedGenerate('{"score": 10}'), length_penalty=penalty)
    result = await RUBRIC.grade("many words here", autograder=grader)
    assert result.score == 0.0
    assert result.llm_raw_score == 10


# -- concurrency and cancellation -------------------------------------------------------------
async def test_per_criterion_calls_run_concurrently_under_the_bound():
    rubric = Rubric([Criterion(requirement=f"R{i}") for i in range(12)])
    generate = ScriptedGenerate(route=lambda p: '{"verdict": "MET"}', delay=0.02)
    result = await rubric.grade("t", autograder=PerCriterionGrader(generate, max_concurrency=3))
    assert result.score == 1.0
    assert generate.max_in_flight == 3


async def test_bound_is_shared_by_concurrent_grades_with_one_grader():
    generate = ScriptedGenerate(route=lambda p: '{"verdict": "MET"}', delay=0.02)
    grader = PerCriterionGrader(generate, max_concurrency=4)
    await asyncio.gather(*(RUBRIC.grade("t", autograder=grader) for _ in range(5)))
    assert generate.max_in_flight == 4
    assert len(generate.calls) == 15


async def test_a_fatal_failure_cancels_and_awaits_the_other_calls():
    started = asyncio.Event()
    still_running: set[str] = set()
    cancelled: list[str] = []

    async def generate(system_prompt: str, user_prompt: str) -> str:
        if "\nBeta\n" in user_prompt:
            await started.wait()
            raise ProviderError("Set OPENAI_API_KEY")
        name = "Alpha" if "\nAlpha\n" in user_prompt else "Gamma"
        still_running.add(name)
        if len(still_running) == 2:
            started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        finally:
            still_running.discard(name)
        return '{"verdict": "MET"}'

    with pytest.raises(ProviderError):
        await asyncio.wait_for(RUBRIC.grade("t", autograder=PerCriterionGrader(generate)), 5)
    assert sorted(cancelled) == ["Alpha", "Gamma"]
    assert still_running == set()


async def test_an_exhausted_criterion_in_raise_mode_cancels_the_others():
    cancelled: list[str] = []

    async def generate(system_prompt: str, user_prompt: str) -> str:
        if "\nBeta\n" in user_prompt:
            return "not json"
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append("x")
            raise
        return '{"verdict": "MET"}'

    with pytest.raises(GradingError, match="criterion 2"):
        await asyncio.wait_for(RUBRIC.grade("t", autograder=PerCriterionGrader(generate)), 5)
    assert len(cancelled) == 2


# -- generate_fn conventions -----------------------------------------------------------------
async def test_two_argument_generate_fn_gets_no_keyword_arguments():
    seen = []

    async def generate(system_prompt, user_prompt):
        seen.append(user_prompt)
        return '{"verdict": "MET", "reason": "ok"}'

    result = await Rubric([Criterion(requirement="A")]).grade(
        "t", autograder=PerCriterionGrader(generate))
    assert result.score == 1.0 and len(seen) == 1


async def test_kwargs_generate_fn_receives_the_response_format():
    seen = []

    async def generate(system_prompt, user_prompt, **kwargs):
        seen.append(kwargs)
        return '{"verdict": "MET"}'

    await Rubric([Criterion(requirement="A")]).grade("t", autograder=PerCriterionGrader(generate))
    assert seen[0]["response_format"]["type"] == "json_schema"


async def test_sync_generate_fn_is_accepted():
    def generate(system_prompt, user_prompt):
        return '{"score": 50}'

    result = await RUBRIC.grade("t", autograder=RubricAsJudgeGrader(generate))
    assert result.score == 0.5


async def test_generate_fn_returning_something_else_is_a_type_error():
    async def generate(system_prompt, user_prompt):
        return {"verdict": "MET"}

    with pytest.raises(TypeError, match="str or a GenerateResult"):
        await Rubric([Criterion(requirement="A")]).grade(
            "t", autograder=PerCriterionGrader(generate))


async def test_custom_system_prompt_and_query_reach_the_model():
    generate = ScriptedGenerate('{"score": 50}')
    grader = RubricAsJudgeGrader(generate, system_prompt="Be kind.")
    await RUBRIC.grade("answer", autograder=grader, query="What is up?")
    assert generate.calls[0].system_prompt == "Be kind."
    assert "<query>\nWhat is up?\n</query>" in generate.calls[0].user_prompt


async def test_overridden_judge_returning_reports_uses_the_shared_aggregation():
    class AlwaysMet(Autograder):
        async def judge(self, to_grade, rubric, query=None):
            return [CriterionReport(**c.model_dump(), verdict=Verdict.MET, reason="r")
                    for c in rubric]

    result = await RUBRIC.grade("t", autograder=AlwaysMet(ScriptedGenerate()))
    assert result.score == pytest.approx(12 / 15)
    assert result.raw_score == 12.0


def test_grade_sync_reuses_the_grader_across_event_loops():
    generate = ScriptedGenerate(route=verdicts_by_requirement(MET_UNMET_MET), delay=0.001)
    grader = PerCriterionGrader(generate, max_concurrency=1)
    first = RUBRIC.grade_sync("t", autograder=grader)
    second = RUBRIC.grade_sync("t", autograder=grader)
    assert first.score == second.score == pytest.approx(7 / 15)


# -- configuration ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"cannot_assess": "ignore"}, "unknown cannot_assess strategy", id="strategy"),
        pytest.param({"on_error": "silent"}, "on_error", id="on-error"),
        pytest.param({"max_concurrency": 0}, "max_concurrency", id="concurrency"),
        pytest.param({"max_retries": -1}, "max_retries", id="retries"),
        pytest.param({"partial_credit": 1.5}, "partial_credit", id="partial-credit"),
        pytest.param({"default_fallback_verdicts": {"postive": "MET"}}, "postive", id="fb-key"),
        pytest.param({"default_fallback_verdicts": {"positive": "YES"}}, "positive",
                     id="fb-value"),
    ],
)
def test_invalid_settings_are_rejected_at_construction(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        PerCriterionGrader(ScriptedGenerate(), **kwargs)


def test_scoring_settings_mirror_the_grader():
    penalty = LengthPenalty(free_budget=10, max_cap=20)
    grader = PerCriterionOneShotGrader(ScriptedGenerate(), normalize=False, cannot_assess="partial",
                                       partial_credit=0.25, length_penalty=penalty)
    assert grader.scoring_settings == ScoringSettings(
        normalize=False, cannot_assess="partial", partial_credit=0.25, length_penalty=penalty)


async def test_overridden_judge_with_a_missing_verdict_gives_no_score():
    class Partial(Autograder):
        async def judge(self, to_grade, rubric, query=None):
            return [CriterionReport(**c.model_dump(), verdict=None, error="skipped")
                    if c.requirement == "Beta" else
                    CriterionReport(**c.model_dump(), verdict=Verdict.MET) for c in rubric]

    result = await RUBRIC.grade("t", autograder=Partial(ScriptedGenerate()))
    assert result.score is None and result.raw_score is None
    assert result.error == "1 of 3 criteria have no verdict"


async def test_grading_error_keeps_the_parse_error_as_its_cause():
    from grading.parsing import ParseError

    generate = ScriptedGenerate(route=lambda p: "no json")
    with pytest.raises(GradingError) as caught:
        await RUBRIC.grade("t", autograder=PerCriterionGrader(generate, max_retries=0))
    assert isinstance(caught.value.__cause__, ParseError)
