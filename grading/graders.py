"""autorubric's names for a judge: ``LLMConfig`` and ``CriterionGrader``, so that code written
for autorubric runs with only its imports changed (``from grading.graders import
CriterionGrader``). A CriterionGrader is a PerCriterionGrader calling the configured model
through litellm; ensembles of judges (autorubric's ``judges=``) are grading's panels
(``grading.panels``), not this class.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from grading.autograders import PerCriterionGrader
from grading.llm import LiteLLMGenerate


class LLMConfig(BaseModel):
    """The model a judge calls (autorubric's ``LLMConfig``; the settings it shares with
    grading). A setting grading does not have is refused, never silently ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float = 60.0
    api_key: str | None = None
    api_base: str | None = None
    max_parallel_requests: int | None = None

    def generate_fn(self) -> LiteLLMGenerate:
        extra: dict[str, Any] = {}
        if self.max_tokens is not None:
            extra["max_tokens"] = self.max_tokens
        return LiteLLMGenerate(self.model, api_base=self.api_base, api_key=self.api_key,
                               timeout=self.timeout, temperature=self.temperature, **extra)


class CriterionGrader(PerCriterionGrader):
    """autorubric's ``CriterionGrader(llm_config=...)``: one judge call per criterion."""

    def __init__(self, llm_config: LLMConfig | None = None, **settings: Any):
        if llm_config is not None:
            if "generate_fn" in settings:
                raise TypeError("give llm_config or generate_fn, not both")
            settings["generate_fn"] = llm_config.generate_fn()
            if llm_config.max_parallel_requests is not None:
                settings.setdefault("max_concurrency", llm_config.max_parallel_requests)
        super().__init__(**settings)
        self.llm_config = llm_config


__all__ = ["CriterionGrader", "LLMConfig"]
