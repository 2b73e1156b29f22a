"""The Rubric: an ordered list of criteria, its loaders and writers, and ``grade``."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from grading import rubric_io, scoring, verifiers_rubric
from grading.errors import RubricValidationError
from grading.types import CannotAssessStrategy, Criterion, EvaluationReport, ToGradeInput, Verdict

if TYPE_CHECKING:
    from grading.autograders.base import Autograder
    from grading.pairwise import PairReport, PairwiseGrader


class RubricFileNotFoundError(RubricValidationError, FileNotFoundError):
    """The rubric file does not exist (a FileNotFoundError, as ``rubric`` raises)."""


class Rubric:
    """A list of weighted criteria. Build it directly or with ``from_dict/json/yaml/file``."""

    def __init__(self, rubric: Sequence[Criterion]):
        criteria = list(rubric)
        problems = []
        seen: dict[str, int] = {}
        for index, criterion in enumerate(criteria, start=1):
            if not isinstance(criterion, Criterion):
                problems.append(
                    f"criterion {index}: must be a Criterion, got {type(criterion).__name__}"
                )
                continue
            if criterion.name is not None:
                if criterion.name in seen:
                    problems.append(
                        f"criterion {index} ('{criterion.name}'): name is already used by "
                        f"criterion {seen[criterion.name]}"
                    )
                seen.setdefault(criterion.name, index)
        if not criteria:
            problems.append("the rubric has no criteria")
        if problems:
            raise RubricValidationError(problems)
        self.rubric: list[Criterion] = criteria
        # Where a loaded file had fields the rubric does not use (also warned about).
        self.ignored_fields: list[str] = []
        # The name a loaded file gives the rubric (``name:`` / ``title:``), if any.
        self.declared_name: str | None = None

    @property
    def criteria(self) -> list[Criterion]:
        return self.rubric

    def __iter__(self) -> Iterator[Criterion]:
        return iter(self.rubric)

    def __len__(self) -> int:
        return len(self.rubric)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rubric) and self.rubric == other.rubric

    def __repr__(self) -> str:
        return f"Rubric({self.rubric!r})"

    # -- loading ---------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> Rubric:
        criteria, ignored = rubric_io.read_criteria(data, source=source)
        rubric_io.warn_ignored(ignored, source, stacklevel=3)
        rubric = cls(criteria)
        rubric.ignored_fields = ignored
        rubric.declared_name = rubric_io.declared_name(data)
        return rubric

    @classmethod
    def from_json(cls, json_string: str, *, source: str | None = None) -> Rubric:
        return cls._parsed(rubric_io.load_json_text, json_string, source)

    @classmethod
    def from_yaml(cls, yaml_string: str, *, source: str | None = None) -> Rubric:
        return cls._parsed(rubric_io.load_yaml_text, yaml_string, source)

    @classmethod
    def _parsed(cls, load: Callable[[str], Any], text: str, source: str | None) -> Rubric:
        try:
            data = load(text)
        except RubricValidationError as exc:  # the loader does not know the file's name
            raise RubricValidationError(exc.problems, source=source) from None
        return cls.from_dict(data, source=source)

    @classmethod
    def from_text(cls, text: str, *, filename: str | None = None) -> Rubric:
        """Parse JSON or YAML text, choosing the format from ``filename`` or the content."""
        if rubric_io.detect_format(text, filename) == "json":
            return cls.from_json(text, source=filename)
        return cls.from_yaml(text, source=filename)

    @classmethod
    def from_file(cls, source: str | os.PathLike[str] | IO[Any]) -> Rubric:
        """Load from a path or an open file (text or binary); the format comes from the
        extension, else from the content."""
        if isinstance(source, str | os.PathLike):
            name = os.fspath(source)
            try:
                with open(name, "rb") as handle:
                    content: Any = handle.read()
            except FileNotFoundError:
                raise RubricFileNotFoundError(
                    "cannot read the rubric file: no such file", source=name
                ) from None
            except OSError as exc:
                raise RubricValidationError(
                    f"cannot read the rubric file: {exc.strerror}", source=name
                ) from None
        else:
            name = getattr(source, "name", None)
            name = name if isinstance(name, str) else None
            content = source.read()
        if isinstance(content, bytes):
            try:
                content = content.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise RubricValidationError(
                    f"the file is not UTF-8 text (byte {exc.start}); save it as UTF-8",
                    source=name,
                ) from None
        return cls.from_text(content, filename=name)

    # -- writing ---------------------------------------------------------------------------
    def to_dict(self) -> list[dict[str, Any]] | dict[str, Any]:
        return rubric_io.criteria_to_data(self.rubric)

    def to_json(self) -> str:
        return rubric_io.dump_json(self.to_dict())

    def to_yaml(self) -> str:
        return rubric_io.dump_yaml(self.to_dict())

    def to_verifiers(self) -> dict[str, Any]:
        """verifiers 0.4's rubric file data (``json.dump`` it); see grading.verifiers_rubric."""
        return verifiers_rubric.to_verifiers(self.rubric)

    # -- scoring ---------------------------------------------------------------------------
    def compute_score(
        self,
        verdicts: Sequence[Verdict | str],
        normalize: bool = True,
        cannot_assess_strategy: CannotAssessStrategy = "skip",
        partial_credit: float = 0.5,
    ) -> float | None:
        """autorubric's ``Rubric.compute_score``: one verdict per criterion (MET / UNMET /
        CANNOT_ASSESS, or an option label on a multi-choice criterion) -> the score, through
        the one aggregation function. None when nothing is left to score."""
        return scoring.compute_score(self.rubric, verdicts, normalize=normalize,
                                     cannot_assess=cannot_assess_strategy,
                                     partial_credit=partial_credit).score

    # -- grading ---------------------------------------------------------------------------
    async def grade(
        self,
        to_grade: ToGradeInput,
        autograder: Autograder | None = None,
        query: str | None = None,
        reference_submission: str | None = None,
        *,
        grader: Autograder | None = None,
        **kwargs: Any,
    ) -> EvaluationReport:
        """Grade one response with ``autograder`` (default: a PerCriterionGrader).

        ``grader`` is autorubric's name for ``autograder``; ``reference_submission`` a
        reference answer shown to the judge. Other keyword arguments are accepted, as
        ``rubric``'s ``grade`` accepts them, but never silently: each one warns."""
        chosen = _one_grader(autograder, grader)
        if kwargs:
            warnings.warn(
                f"Rubric.grade() ignores the keyword argument(s) {', '.join(sorted(kwargs))}; "
                "it uses autograder (or grader), query and reference_submission",
                UnusedArgumentWarning, stacklevel=2)
        if chosen is None:
            from grading.autograders import PerCriterionGrader

            chosen = PerCriterionGrader()
        if reference_submission is None:  # a user's grade() written for rubric keeps working
            return await chosen.grade(to_grade=to_grade, rubric=self.rubric, query=query)
        return await chosen.grade(to_grade=to_grade, rubric=self.rubric, query=query,
                                  reference_submission=reference_submission)

    def grade_sync(
        self,
        to_grade: ToGradeInput,
        autograder: Autograder | None = None,
        query: str | None = None,
        reference_submission: str | None = None,
        *,
        grader: Autograder | None = None,
    ) -> EvaluationReport:
        """``grade`` for scripts without an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.grade(to_grade, autograder=autograder, query=query,
                                          reference_submission=reference_submission,
                                          grader=grader))
        raise RuntimeError(
            "grade_sync() was called inside a running event loop; use 'await rubric.grade(...)'"
        )


    # -- comparing -------------------------------------------------------------------------
    async def compare(self, a: ToGradeInput, b: ToGradeInput, grader: PairwiseGrader | None = None,
                      query: str | None = None) -> PairReport:
        """Compare response ``b`` with response ``a`` (default: a PairwiseGrader, per
        criterion, both orders); see grading.pairwise."""
        if grader is None:
            from grading.pairwise import PairwiseGrader

            grader = PairwiseGrader()
        return await grader.compare(a, b, self.rubric, query)

    def compare_sync(self, a: ToGradeInput, b: ToGradeInput,
                     grader: PairwiseGrader | None = None,
                     query: str | None = None) -> PairReport:
        """``compare`` for scripts without an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.compare(a, b, grader=grader, query=query))
        raise RuntimeError(
            "compare_sync() was called inside a running event loop; use "
            "'await rubric.compare(...)'")


class UnusedArgumentWarning(UserWarning):
    """A keyword argument was given that this library does not use."""


def _one_grader(autograder: Autograder | None, grader: Autograder | None) -> Autograder | None:
    if autograder is not None and grader is not None and autograder is not grader:
        raise TypeError("give the grader once: autograder= and grader= name the same thing")
    return autograder if autograder is not None else grader
