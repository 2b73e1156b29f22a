"""Grading jobs: a queue of runs in the database, workers that execute them, the provider
cache, adaptive per-endpoint concurrency, progress and estimates.

The names exported here are the API the app and the CLI use; keep them stable.
"""

from storage.jobs.estimate import RunEstimate, estimate_for, estimate_run, total_estimate
from storage.jobs.progress import RunProgress, run_progress
from storage.jobs.runner import RunResult, execute_run
from storage.jobs.worker import (
    Worker,
    WorkerHandle,
    start_in_process_worker,
    stop_in_process_workers,
)

__all__ = [
    "RunEstimate",
    "RunProgress",
    "RunResult",
    "Worker",
    "WorkerHandle",
    "estimate_for",
    "estimate_run",
    "execute_run",
    "run_progress",
    "start_in_process_worker",
    "stop_in_process_workers",
    "total_estimate",
]
