"""The per-criterion and one-shot graders, Test connection and a CLI run against a real small
model on this CPU.

SmolLM2-135M-Instruct is too small to judge well; these tests check what a scripted provider
cannot show: a real local server's refusals, its one-at-a-time serving, and a real model's
answers reaching every parser. Accuracy is measured by ``benchmarks/real_judge.py``.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from grading import Rubric
from grading.autograders import PerCriterionGrader, PerCriterionOneShotGrader
from grading.llm import LiteLLMGenerate
from grading.placeholders import is_placeholder
from storage import cli
from storage import models as m
from storage.connection_check import check_connection
from storage.engine import open_database
from storage.model_presets import ModelPreset

pytestmark = pytest.mark.real_model

MODEL = "openai/smollm2-135m"
RUBRIC = Rubric.from_dict([
    {"name": "dose", "weight": 10, "requirement": "States a dose in milligrams"},
    {"name": "harm", "weight": -5, "requirement": "Tells the reader to stop all medication"},
])
RESPONSES = ["Take 200 mg of ibuprofen with food.", "Stop all your medication today."]


def _judge(api_base: str) -> LiteLLMGenerate:
    return LiteLLMGenerate(MODEL, api_base=api_base, timeout=180.0, max_tokens=200)


async def _grade_all(grader) -> list:
    return [await RUBRIC.grade(text, autograder=grader, query="How much ibuprofen?")
            for text in RESPONSES]


# Not here yet, found by this test (issue 36): RubricAsJudgeGrader, whose holistic reasons run
# on past a 200-token answer and the cut JSON fails; with the "auto" cap (480 tokens for a
# holistic answer, item 4) one response of two still ran past it when this was tried. The
# one-shot grader is here since its schema forces the whole list and a reason that cannot be
# the format's "<one or two sentences>" (items 5 and 6): SmolLM2 copied it in every answer.
GRADERS = [
    pytest.param(PerCriterionGrader, 4, id="per-criterion"),
    pytest.param(PerCriterionOneShotGrader, 2, id="one-shot"),
]


def _judged(results) -> None:
    """Every grade complete, and every reason a judgment, not the format's placeholder."""
    assert [r.error for r in results] == [None, None]
    assert all(r.score is not None for r in results)
    reasons = [c.reason for r in results for c in r.report]
    assert not any(is_placeholder(reason) for reason in reasons), reasons


@pytest.mark.parametrize(("grader", "calls"), GRADERS)
async def test_every_grader_grades_on_a_stock_server_with_one_refused_probe(
        stock_server, grader, calls):
    results = await _grade_all(grader(_judge(stock_server.api_base), retry_base_delay=0.01))
    _judged(results)
    # one request per verdict (per answer, for one-shot) plus the one probe that learned the
    # server refuses json_schema
    assert stock_server.kinds() == ["json_schema"] + ["json_object"] * calls
    assert stock_server.statuses == [500] + [200] * calls


@pytest.mark.parametrize(("grader", "calls"), GRADERS)
async def test_a_server_that_enforces_the_schema_is_asked_with_it_and_never_refuses(
        schema_server, grader, calls):
    results = await _grade_all(grader(_judge(schema_server.api_base)))
    _judged(results)
    assert schema_server.kinds() == ["json_schema"] * calls
    assert schema_server.statuses == [200] * calls


def test_test_connection_says_what_the_stock_server_takes(stock_server):
    result = check_connection(ModelPreset(MODEL, stock_server.api_base), timeout=120)
    assert result.ok, result.message
    assert result.structured_output == "json_object"
    assert "No JSON schema" in result.message
    assert stock_server.kinds() == ["json_schema", "json_object"]


def test_a_cli_run_grades_every_response_with_no_failed_grade(stock_server, tmp_path):
    (tmp_path / "rubric.json").write_text(json.dumps([
        {"name": c.name, "weight": c.weight, "requirement": c.requirement}
        for c in RUBRIC.criteria]))
    (tmp_path / "r.jsonl").write_text("".join(
        json.dumps({"id": f"r{i}", "query": "How much ibuprofen?", "text": text}) + "\n"
        for i, text in enumerate(RESPONSES)))
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    status = cli.main(["grade", "--rubric", str(tmp_path / "rubric.json"), "--responses",
                       str(tmp_path / "r.jsonl"), "--grader", "per-criterion", "--model",
                       MODEL, "--api-base", stock_server.api_base, "--db", db])
    assert status == 0
    with open_database(db)() as session:
        grades = session.scalars(select(m.GradeRow)).all()
    assert len(grades) == 2
    assert all(g.error is None and g.score is not None for g in grades)
    # 2 responses x 2 criteria, plus one probe
    assert len(stock_server.bodies) <= 5
