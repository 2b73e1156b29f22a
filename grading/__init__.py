"""Rubric Workbench's grading library: weighted rubrics judged by LLMs.

API-compatible with the ``rubric`` package: ``from grading import Rubric``.
Importing this package never imports litellm and never touches the network.
"""

from grading.aggregation import Aggregate, aggregate_verdicts, holistic_to_scores, score_verdicts
from grading.errors import (
    ConfigurationError,
    GradingError,
    ProviderError,
    RubricValidationError,
    RubricWorkbenchError,
    TransientProviderError,
)
from grading.length_penalty import compute_length_penalty
from grading.rubric import Rubric
from grading.text import normalize_to_grade_input, parse_thinking_output, word_count
from grading.types import (
    CannotAssessStrategy,
    CountFn,
    Criterion,
    CriterionReport,
    DefaultFallbackVerdicts,
    EvaluationReport,
    GenerateResult,
    LengthPenalty,
    PenaltyType,
    ScoringSettings,
    ThinkingOutputDict,
    ToGradeInput,
    TokenUsage,
    Verdict,
)

__all__ = [
    "Aggregate",
    "CannotAssessStrategy",
    "ConfigurationError",
    "CountFn",
    "Criterion",
    "CriterionReport",
    "DefaultFallbackVerdicts",
    "EvaluationReport",
    "GenerateResult",
    "GradingError",
    "LengthPenalty",
    "PenaltyType",
    "ProviderError",
    "Rubric",
    "RubricValidationError",
    "RubricWorkbenchError",
    "ScoringSettings",
    "ThinkingOutputDict",
    "ToGradeInput",
    "TokenUsage",
    "TransientProviderError",
    "Verdict",
    "aggregate_verdicts",
    "compute_length_penalty",
    "holistic_to_scores",
    "normalize_to_grade_input",
    "parse_thinking_output",
    "score_verdicts",
    "word_count",
]
