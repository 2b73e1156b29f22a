"""The same ``rubric-workbench grade`` command on the same files resumes the same runs.

A dataset imported by the CLI is tagged with a fingerprint of the file's content and the column
mapping; a run is the same run when it has the same dataset, rubric version, grader, model and
settings. A run left "running" by a process that died on this machine is taken over at once
(its process id is in the worker id); one from another machine after its lease.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from storage import models as m
from storage.dto import RunInfo
from storage.engine import SessionFactory
from storage.run_settings import RunSettings
from storage.services import runs as run_service
from storage.services.reviewers import command_line_actor

TAG = "content sha256:"


def fingerprint_file(path: Path, mapping: dict[str, Any]) -> str:
    """``fingerprint`` of a file's content, read in chunks (memory stays flat)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    digest.update(json.dumps(mapping, sort_keys=True).encode())
    return digest.hexdigest()


def find_dataset(sessions: SessionFactory, print_: str) -> int | None:
    """The dataset a previous ``grade`` imported from the same content, if any."""
    with sessions() as session:
        return session.scalar(
            select(m.DatasetRow.id).where(m.DatasetRow.description.contains(f"{TAG}{print_}"),
                                          m.DatasetRow.archived.is_(False))
            .order_by(m.DatasetRow.id.desc()).limit(1))


def find_run(sessions: SessionFactory, *, dataset_id: int, version_id: int, grader: str,
             model: str, settings: RunSettings) -> RunInfo | None:
    """The most recent run of exactly this grading, if any."""
    for run in sorted(run_service.list_runs(sessions, dataset_id=dataset_id,
                                            rubric_version_id=version_id),
                      key=lambda r: r.id, reverse=True):
        if run.grader == grader and run.model == model and run.settings == settings:
            return run
    return None


def process_gone(worker_id: str | None) -> bool:
    """Was this worker id (``host:pid:...``) a process of this machine that has ended?"""
    return _dead_here(worker_id)


def _dead_here(worker_id: str | None) -> bool:
    """Was this run claimed by a process of this machine that no longer exists?"""
    if not worker_id:
        return False
    host, _, rest = worker_id.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def prepare(sessions: SessionFactory, run: RunInfo) -> str:
    """Make ``run`` claimable again if it can be: "done", "ready" or "busy" (a live worker)."""
    if run.status == "done":
        return "done"
    if run.status in ("failed", "cancelled"):
        run_service.requeue_run(sessions, run.id, actor=command_line_actor())
        return "ready"
    if run.status == "running" and _dead_here(run.claimed_by):
        with sessions.begin() as session:  # only if nobody took it meanwhile
            session.execute(update(m.RunRow)
                            .where(m.RunRow.id == run.id, m.RunRow.status == "running",
                                   m.RunRow.claimed_by == run.claimed_by)
                            .values(status="queued", claimed_by=None))
        return "ready"
    return "ready" if run.status == "queued" else "busy"
