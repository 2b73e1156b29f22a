"""A scripted ``generate_fn`` for grader tests: records every call, replays answers."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grading.types import GenerateResult

Answer = str | GenerateResult | BaseException


@dataclass(frozen=True)
class Call:
    system_prompt: str
    user_prompt: str
    response_format: dict[str, Any] | None


class ScriptedGenerate:
    """Answers from ``route(user_prompt)`` if given, else from the queue, in call order.

    An answer that is an exception is raised; ``delay`` makes each call take that long so that
    concurrency can be observed.
    """

    def __init__(self, *answers: Answer, route: Callable[[str], Answer] | None = None,
                 delay: float = 0.0):
        self.queue: deque[Answer] = deque(answers)
        self.route = route
        self.delay = delay
        self.calls: list[Call] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def __call__(self, system_prompt: str, user_prompt: str, *,
                       response_format: dict[str, Any] | None = None) -> str | GenerateResult:
        self.calls.append(Call(system_prompt, user_prompt, response_format))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.route is not None:
                answer = self.route(user_prompt)
            elif self.queue:
                answer = self.queue.popleft()
            else:
                raise AssertionError(f"no scripted answer left for call {len(self.calls)}")
            if isinstance(answer, BaseException):
                raise answer
            return answer
        finally:
            self.in_flight -= 1


def verdicts_by_requirement(verdicts: dict[str, str]) -> Callable[[str], str]:
    """Route a per-criterion prompt to a JSON verdict chosen by the requirement it contains."""

    def route(user_prompt: str) -> str:
        for requirement, verdict in verdicts.items():
            if f"\n{requirement}\n</criterion>" in user_prompt:
                return f'{{"verdict": "{verdict}", "reason": "because {requirement}"}}'
        raise AssertionError("prompt names no known requirement")

    return route
