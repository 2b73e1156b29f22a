"""Every Python example of the rubric package's documentation (seed 000) runs on grading with
only ``rubric`` replaced by ``grading`` in the imports.

The default generate_fn (litellm) is pointed at the local fake provider through the
environment. The documentation's own stand-ins — a Hugging Face tokenizer and a model client
— are given whitespace/scripted equivalents in the namespace, as a reader would. Blocks that
are signatures, not code, are listed and must stay the only ones that do not compile.
"""

from __future__ import annotations

import asyncio
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest
from pydantic import BaseModel

import grading
from grading.autograders import PerCriterionGrader, RubricAsJudgeGrader

# The seeds live in ../shared/seeds next to the checkout (or a worktree folder above it).
SEED = next((p / "shared" / "seeds" / "000_59c6fc2cafcd4ffe.txt"
             for p in Path(__file__).resolve().parents
             if (p / "shared" / "seeds" / "000_59c6fc2cafcd4ffe.txt").exists()),
            Path("/nonexistent"))
COPY = Path(__file__).parent / "seed_000_examples.md"  # the blocks, verbatim, for CI
BLOCKS = re.findall(r"```python\n(.*?)```", COPY.read_text(), re.S)
# Signature listings ("def __init__(...", "async def __call__(...) -> str") and a call with a
# literal "..." argument: documentation, not runnable code.
NOT_CODE = {5, 6, 22}


def to_grading(code: str) -> str:
    return re.sub(r"\b(from|import) rubric\b", r"\1 grading", code)


class _Tokenizer:
    def encode(self, text: str, add_special_tokens: bool = True) -> list[str]:
        return text.split()


@pytest.fixture
def seed_namespace(tmp_path, monkeypatch, fake_provider):
    monkeypatch.setenv("RUBRIC_WORKBENCH_MODEL", "openai/judge")
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_BASE", fake_provider.api_base)
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rubric.yaml").write_text(
        "- weight: 10\n  requirement: States the answer\n"
        "- weight: 5\n  requirement: Explains why\n"
        "- weight: -3\n  requirement: Makes an arithmetic error\n")
    transformers = types.ModuleType("transformers")
    transformers.AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda name: _Tokenizer())
    monkeypatch.setitem(sys.modules, "transformers", transformers)

    async def your_llm_fn(system_prompt: str, user_prompt: str) -> str:
        return '{"criterion_status": "MET", "explanation": "ok"}'

    namespace: dict[str, Any] = {
        **{name: getattr(grading, name) for name in grading.__all__},
        "BaseModel": BaseModel, "Literal": Literal, "TypedDict": TypedDict, "Any": Any,
        "asyncio": asyncio, "PerCriterionGrader": PerCriterionGrader,
        "RubricAsJudgeGrader": RubricAsJudgeGrader,
        "rubric": grading.Rubric.from_file("rubric.yaml"),
        "response": "The answer is 42 because 6 x 7 = 42.", "text": "The answer is 42.",
        "long_reasoning": "step " * 50, "final_answer": "42",
        "tokenizer": _Tokenizer(), "your_llm_fn": your_llm_fn,
        "grader": PerCriterionGrader(),
        "criteria": grading.Rubric.from_file("rubric.yaml").rubric, "verdict": "MET",
        "llm_score": 80.0, "total_positive_weight": 15.0,
    }
    return namespace


def test_the_seed_has_the_examples_we_expect():
    assert len(BLOCKS) == 27
    if SEED.exists():  # next to the seeds (not in a fresh clone): the copy is still verbatim
        assert re.findall(r"```python\n(.*?)```", SEED.read_text(), re.S) == BLOCKS
    for index in NOT_CODE:
        with pytest.raises(SyntaxError):
            compile(textwrap.indent(BLOCKS[index], "    "), "<seed>", "exec")


@pytest.mark.parametrize("index", [i for i in range(len(BLOCKS)) if i not in NOT_CODE])
async def test_seed_example_runs_with_only_the_import_changed(index, seed_namespace):
    code = to_grading(BLOCKS[index])
    wrapped = "async def __example__():\n" + textwrap.indent(code, "    ") + (
        "\n    return locals()\n")
    exec(compile(wrapped, f"<seed 000 example {index}>", "exec"), seed_namespace)
    values = await seed_namespace["__example__"]()
    result = values.get("result")
    if result is not None:
        assert isinstance(result, grading.EvaluationReport) and result.score is not None
    if "compute_rewards_batch" in values:
        scores = await values["compute_rewards_batch"](["a", "b"], [seed_namespace["rubric"]] * 2)
        assert len(scores) == 2 and all(s is not None for s in scores)
