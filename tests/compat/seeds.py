"""Helpers shared by the tests that run the seed documents' examples (000 and 002)."""

from __future__ import annotations

import asyncio
import re
import sys
import types
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel

import grading
from grading.autograders import PerCriterionGrader, RubricAsJudgeGrader


def seed_file(name: str) -> Path:
    """A seed document in ../shared/seeds next to the checkout (or a worktree folder above
    it); a path that does not exist in a fresh clone (the tests then use their copy)."""
    return next((p / "shared" / "seeds" / name for p in Path(__file__).resolve().parents
                 if (p / "shared" / "seeds" / name).exists()), Path("/nonexistent"))


def to_grading(code: str) -> str:
    return re.sub(r"\b(from|import) rubric\b", r"\1 grading", code)


class _Tokenizer:
    def encode(self, text: str, add_special_tokens: bool = True) -> list[str]:
        return text.split()


def seed_namespace(tmp_path, monkeypatch, fake_provider) -> dict[str, Any]:
    """What a reader of the seed documents has around an example (see the tests' docstrings)."""
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
