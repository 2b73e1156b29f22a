"""What one execution of a grading run reports when it ends."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunResult:
    run_id: int
    status: str
    graded: int
    failed: int
    provider_calls: int
    cache_hits: int
    rate_limited: int
    error: str | None = None
    passes: int = 0
