"""Autograders: PerCriterionGrader, PerCriterionOneShotGrader, RubricAsJudgeGrader."""

from grading.autograders.base import Autograder, Judgment
from grading.autograders.one_shot import PerCriterionOneShotGrader
from grading.autograders.per_criterion import PerCriterionGrader
from grading.autograders.rubric_as_judge import RubricAsJudgeGrader

__all__ = [
    "Autograder",
    "Judgment",
    "PerCriterionGrader",
    "PerCriterionOneShotGrader",
    "RubricAsJudgeGrader",
]
