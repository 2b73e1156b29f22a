"""User-facing errors of the grading library.

Every class here carries a message meant to be shown to a person as it is. Bugs are not
wrapped in these; they propagate as ordinary exceptions.
"""

from __future__ import annotations


class RubricWorkbenchError(Exception):
    """Base class of every error whose message is written for the user."""


class RubricValidationError(RubricWorkbenchError, ValueError):
    """A rubric (dict, JSON, YAML or file) is invalid.

    ``problems`` lists every problem found, each naming where it is (criterion index and
    name, field, line) so that a user can fix them all in one go.
    """

    def __init__(self, problems: list[str] | str, *, source: str | None = None):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        self.source = source
        prefix = f"{source}: " if source else ""
        if len(self.problems) == 1:
            message = prefix + self.problems[0]
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            message = f"{prefix}{len(self.problems)} problems in the rubric:\n{lines}"
        super().__init__(message)


class ConfigurationError(RubricWorkbenchError, ValueError):
    """A grader or model setting is missing or invalid."""


class ProviderError(RubricWorkbenchError):
    """The model provider refused or failed a request, in a way retrying will not fix."""


class FatalProviderError(ProviderError):
    """No call with this model and these settings can work (missing or rejected key, unknown
    provider): a batch should stop at once rather than fail every item the same way."""


class TransientProviderError(RubricWorkbenchError):
    """A provider failure worth retrying (429, 5xx, timeout, lost connection)."""

    def __init__(self, message: str, *, retry_after: float | None = None,
                 status_code: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status_code = status_code


class GradingError(RubricWorkbenchError, ValueError):
    """Grading failed after every retry and no fallback verdicts were configured.

    Subclasses ``ValueError`` because the ``rubric`` package raises ``ValueError`` here.
    """
