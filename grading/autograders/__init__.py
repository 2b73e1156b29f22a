"""Autograders: PerCriterionGrader, PerCriterionOneShotGrader, RubricAsJudgeGrader."""

from grading.autograders.base import Autograder, Judgment
from grading.autograders.one_shot import PerCriterionOneShotGrader
from grading.autograders.per_criterion import PerCriterionGrader
from grading.autograders.rubric_as_judge import RubricAsJudgeGrader
from grading.autograders.schemas import OneShotOutput, PerCriterionOutput, RubricAsJudgeOutput

__all__ = [
    "Autograder",
    "Judgment",
    "OneShotOutput",
    "PerCriterionGrader",
    "PerCriterionOneShotGrader",
    "PerCriterionOutput",
    "RubricAsJudgeGrader",
    "RubricAsJudgeOutput",
]
