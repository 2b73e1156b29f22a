"""What goes into and comes out of one judge call, apart from the grader's state: the texts a
judge may quote, the string ``rubric``'s graders hand to ``judge()``, what a ``generate_fn`` may
return, and checks of a user's function or subclass (which keywords it takes, which methods it
replaces)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from grading.types import Criterion, GenerateResult, ToGradeInput


def criterion_label(index: int, criterion: Criterion) -> str:
    """``criterion 3 ('clarity')`` — 1-based, with the name when there is one."""
    return f"criterion {index}" + (f" ('{criterion.name}')" if criterion.name else "")


def takes_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` can be called with the keyword ``name`` (or any keyword)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD
               or (p.name == name and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
               for p in parameters)


def overrides(grader: object, method: str) -> bool:
    """Whether ``method`` comes from a subclass outside this library (a user's grader)."""
    for klass in type(grader).__mro__:
        if method in vars(klass):
            return not klass.__module__.startswith("grading.")
    return False


def quotable_texts(to_grade: ToGradeInput, query: str | None = None) -> tuple[str, ...]:
    """The untrusted texts a judge may quote in its answer: objects repeated from them are
    not taken for its answer (``grading.answer_json.choose_answer_object``)."""
    texts = [to_grade] if isinstance(to_grade, str) else [
        value for value in (to_grade.get("thinking"), to_grade.get("output"))
        if isinstance(value, str)]
    if isinstance(query, str):
        texts.append(query)
    return tuple(texts)


def rubric_judge_text(to_grade: ToGradeInput) -> str:
    """The string ``rubric``'s ``Autograder.grade`` hands to ``judge()``."""
    if isinstance(to_grade, str):
        return to_grade
    parts = []
    if to_grade.get("thinking"):
        parts.append(f"<thinking>{to_grade['thinking']}</thinking>")
    if to_grade.get("output"):
        parts.append(f"<output>{to_grade['output']}</output>")
    return "\n".join(parts)


def as_generate_result(result: Any) -> GenerateResult:
    """Accept what a ``generate_fn`` may return: text, a GenerateResult, or (``rubric`` 2.x)
    a validated output model such as ``PerCriterionOutput``."""
    if isinstance(result, GenerateResult):
        return result
    if isinstance(result, str):
        return GenerateResult(text=result)
    if isinstance(result, BaseModel):
        return GenerateResult(text=result.model_dump_json())
    raise TypeError(
        "generate_fn must return a str or a GenerateResult (or a rubric 2.x output model "
        f"such as PerCriterionOutput), got {type(result).__name__}"
    )
