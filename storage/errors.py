"""User-facing storage errors: each message says what happened and what to do."""

from __future__ import annotations

from dataclasses import dataclass

from grading.errors import RubricWorkbenchError


class StorageError(RubricWorkbenchError):
    """Base class of storage errors meant to be shown to a person."""


class NotFoundError(StorageError, LookupError):
    """A rubric, version, dataset, response, run or grade does not exist."""


class NameTakenError(StorageError, ValueError):
    """Another rubric or dataset already has this name."""


class ConfirmationRequiredError(StorageError):
    """A destructive action needs an explicit ``confirm=True``."""


class HumanVerdictsExistError(StorageError):
    """Deleting would remove verdicts people entered; archive instead, or say so explicitly."""


class StaleVerdictError(StorageError):
    """The verdict changed since the form was shown; reload and decide again."""

    def __init__(self, message: str, *, current_id: int | None):
        super().__init__(message)
        self.current_id = current_id


class DatabaseUnavailableError(StorageError):
    """The database could not take a write (server down or restarting, disk full, read-only);
    nothing was written."""


class InvalidStateError(StorageError, ValueError):
    """The operation does not fit the object's state (e.g. a finished run cannot start)."""


class GradeExistsError(StorageError):
    """This run already has a grade for this response."""


class RunCancelledError(InvalidStateError):
    """The run was cancelled: no grade of it is stored any more."""


@dataclass(frozen=True)
class Problem:
    """One problem with its location (``row 3``, ``line 7, column 'text'``)."""

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class ImportProblemsError(StorageError, ValueError):
    """An import was refused; ``problems`` lists every problem found, each with its location."""

    def __init__(self, problems: list[Problem], *, source: str | None = None):
        self.problems = list(problems)
        self.source = source
        prefix = f"{source}: " if source else ""
        shown = self.problems[:20]
        lines = "\n".join(f"  - {p}" for p in shown)
        more = len(self.problems) - len(shown)
        if more > 0:
            lines += f"\n  - ... and {more} more"
        noun = "problem" if len(self.problems) == 1 else "problems"
        super().__init__(
            f"{prefix}nothing was imported; {len(self.problems)} {noun} to fix:\n{lines}"
        )


class InvalidInputError(StorageError, ValueError):
    """A value a person entered is not acceptable (empty reviewer name, unknown verdict)."""
