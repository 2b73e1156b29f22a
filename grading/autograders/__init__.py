"""Autograders: PerCriterionGrader, PerCriterionOneShotGrader, RubricAsJudgeGrader."""
