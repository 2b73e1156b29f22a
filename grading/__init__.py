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
from grading.graders import LLMConfig
from grading.length_penalty import compute_length_penalty
from grading.options import CriterionOption, MultiChoiceVerdict, ScaleType
from grading.rubric import Rubric
from grading.schemas import (
    CriterionEvaluation,
    OneShotOutput,
    PerCriterionOutput,
    RubricAsJudgeOutput,
)
from grading.text import (
    DroppedTextWarning,
    normalize_to_grade_input,
    parse_thinking_output,
    word_count,
)
from grading.types import (
    AutograderFn,
    CannotAssessStrategy,
    CountFn,
    Criterion,
    CriterionReport,
    CriterionVerdict,
    DefaultFallbackVerdicts,
    EvaluationReport,
    GenerateFn,
    GenerateResult,
    LengthPenalty,
    OneShotGenerateFn,
    PenaltyType,
    PerCriterionGenerateFn,
    RubricAsJudgeGenerateFn,
    ScoringSettings,
    ThinkingOutputDict,
    ToGradeInput,
    TokenUsage,
    Verdict,
)
from grading.utils import (
    default_generate_fn,
    default_oneshot_generate_fn,
    default_per_criterion_generate_fn,
    default_rubric_as_judge_generate_fn,
)

__all__ = [
    "Aggregate",
    "AutograderFn",
    "CannotAssessStrategy",
    "ConfigurationError",
    "CountFn",
    "Criterion",
    "CriterionEvaluation",
    "CriterionOption",
    "CriterionReport",
    "CriterionVerdict",
    "DefaultFallbackVerdicts",
    "DroppedTextWarning",
    "EvaluationReport",
    "GenerateFn",
    "GenerateResult",
    "GradingError",
    "LLMConfig",
    "LengthPenalty",
    "MultiChoiceVerdict",
    "OneShotGenerateFn",
    "OneShotOutput",
    "PenaltyType",
    "PerCriterionGenerateFn",
    "PerCriterionOutput",
    "ProviderError",
    "Rubric",
    "RubricAsJudgeGenerateFn",
    "RubricAsJudgeOutput",
    "RubricValidationError",
    "RubricWorkbenchError",
    "ScaleType",
    "ScoringSettings",
    "ThinkingOutputDict",
    "ToGradeInput",
    "TokenUsage",
    "TransientProviderError",
    "Verdict",
    "aggregate_verdicts",
    "compute_length_penalty",
    "default_generate_fn",
    "default_oneshot_generate_fn",
    "default_per_criterion_generate_fn",
    "default_rubric_as_judge_generate_fn",
    "holistic_to_scores",
    "normalize_to_grade_input",
    "parse_thinking_output",
    "score_verdicts",
    "word_count",
]
