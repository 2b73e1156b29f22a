"""The verifiers judge plug-in id ``workbench_rubric_judge`` (verifiers imports plug-ins by a
top-level module name); the judge itself lives in ``grading.rewards.verifiers``."""

from grading.rewards.verifiers import WorkbenchRubricJudge, WorkbenchRubricJudgeConfig

__all__ = ["WorkbenchRubricJudge", "WorkbenchRubricJudgeConfig"]
