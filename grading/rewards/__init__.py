"""Rubric rewards for RL frameworks.

``grading.rewards.core.RubricReward`` is framework-free; ``grading.rewards.verifiers``
(verifiers 0.4 ``verifiers.v1``), ``grading.rewards.verifiers_legacy`` (``vf.Rubric(funcs=...)``,
verifiers 0.3) and ``grading.rewards.openenv`` (``openenv.core.rubrics``) adapt it. Importing
this package imports none of those frameworks; each adapter imports its own when imported.
"""

from grading.rewards.core import (
    JudgeFailedError,
    RewardResult,
    RubricReward,
    openai_generate_fn,
)

__all__ = ["JudgeFailedError", "RewardResult", "RubricReward", "openai_generate_fn"]
