"""Wording trials run in a background thread of the app process, not inside a page's rerun.

A browser refresh or a closed tab does not stop a trial; its result is stored in the database
(``criterion_trials``) when it ends, and any page can read it back by id.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from dataclasses import dataclass

from grading.errors import RubricWorkbenchError
from storage.engine import SessionFactory
from storage.services import trials
from storage.services.reviewers import Actor

log = logging.getLogger(__name__)


@dataclass
class TrialJob:
    token: int
    criterion_id: int
    status: str = "running"  # running | done | failed
    trial_id: int | None = None
    error: str | None = None


_jobs: dict[int, TrialJob] = {}
_lock = threading.Lock()
_tokens = itertools.count(1)


def start_trial(sessions: SessionFactory, plan: trials.TrialPlan, *, actor: Actor,
                max_cost: float | None) -> TrialJob:
    """Start the trial in a daemon thread; poll the returned job's status."""
    job = TrialJob(token=next(_tokens), criterion_id=plan.criterion.id)
    with _lock:
        _jobs[job.token] = job

    def work() -> None:
        try:
            result = asyncio.run(trials.run_trial(sessions, plan, actor=actor,
                                                  max_cost=max_cost))
            job.trial_id, job.status = result.trial_id, "done"
        except RubricWorkbenchError as exc:
            job.error, job.status = str(exc), "failed"
        except Exception as exc:  # a bug: logged in full, shown briefly
            log.exception("wording trial for criterion %s failed", plan.criterion.id)
            job.error, job.status = f"unexpected error: {type(exc).__name__}", "failed"

    threading.Thread(target=work, name=f"trial-{job.token}", daemon=True).start()
    return job


def get_job(token: int) -> TrialJob | None:
    with _lock:
        return _jobs.get(token)
