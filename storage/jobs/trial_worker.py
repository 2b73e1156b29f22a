"""Wording trials run in a background thread of the app process, not inside a page's rerun.

The trial's row is written before the thread starts, and its progress is saved as it goes
(storage.services.trial_progress): a browser refresh, a closed tab or a second browser reads
it from the database by id. A trial whose app was stopped reads as interrupted; ``retry``
takes it over in this process and judges only what it had not judged yet (the provider's
answers it already paid for come from the cache).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

from grading.errors import RubricWorkbenchError
from storage.engine import SessionFactory
from storage.jobs.worker import new_worker_id
from storage.services import trial_progress, trials
from storage.services.reviewers import Actor

log = logging.getLogger(__name__)


def start_trial(sessions: SessionFactory, plan: trials.TrialPlan, *, actor: Actor,
                max_cost: float | None) -> int:
    """Begin the trial (refused before anything is written when it cannot run) and judge it
    in a daemon thread; returns its id for trial_progress.trial_status."""
    worker = new_worker_id()
    trial_id = trials.begin_trial(sessions, plan, actor=actor, max_cost=max_cost,
                                  worker=worker)
    _spawn(sessions, plan, actor=actor, max_cost=max_cost, trial_id=trial_id, worker=worker)
    return trial_id


def retry_trial(sessions: SessionFactory, trial_id: int, *, actor: Actor) -> int:
    """Try an interrupted (or failed) trial again, in this process, with its cost cap."""
    plan = trials.retry_plan(sessions, trial_id)
    worker = new_worker_id()
    done, max_cost, spent = trial_progress.claim_retry(sessions, trial_id, actor=actor,
                                                       worker=worker)
    _spawn(sessions, plan, actor=actor, max_cost=max_cost, trial_id=trial_id, worker=worker,
           done=done, spent_before=spent if done else 0.0)
    return trial_id


def _spawn(sessions: SessionFactory, plan: trials.TrialPlan, *, actor: Actor,
           max_cost: float | None, trial_id: int, worker: str,
           done: Sequence[dict[str, Any]] = (), spent_before: float | None = 0.0) -> None:
    def work() -> None:
        try:
            asyncio.run(trials.run_trial(sessions, plan, actor=actor, max_cost=max_cost,
                                         trial_id=trial_id, worker=worker, done=done,
                                         spent_before=spent_before))
        except RubricWorkbenchError:
            pass  # stored on the trial as its note; the page shows it
        except Exception:  # a bug: logged in full; the trial says "unexpected error"
            log.exception("wording trial %s failed", trial_id)

    threading.Thread(target=work, name=f"trial-{trial_id}", daemon=True).start()
