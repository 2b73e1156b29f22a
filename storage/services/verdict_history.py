"""Who changed what from what to what, when and why: a response's human verdicts in saving
order, carried-over verdicts included under the criterion they apply to."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.orm import Session

from storage.convert import human_verdict_info
from storage.dto import HumanVerdictInfo
from storage.engine import SessionFactory
from storage.repositories import verdicts as repo


def verdict_history(
    sessions: SessionFactory, response_id: int, *, rubric_version_id: int | None = None,
    criterion_id: int | None = None, stream: str | None = None,
) -> list[HumanVerdictInfo]:
    """Who changed what from what to what, when and why; in saving order per criterion.

    With a rubric version, the verdicts carried into it from earlier versions are included,
    under the criterion of that version they apply to (``rubric_version_id`` of each entry
    still says which version it was given on).
    """
    with sessions() as session:
        return history_in(session, response_id, rubric_version_id=rubric_version_id,
                          criterion_id=criterion_id, stream=stream)


def history_in(
    session: Session, response_id: int, *, rubric_version_id: int | None = None,
    criterion_id: int | None = None, stream: str | None = None,
) -> list[HumanVerdictInfo]:
    """verdict_history inside the caller's session."""
    criteria: list[int] | None = None
    sources: dict[int, tuple[int, int]] = {}
    if rubric_version_id is not None:
        sources = repo.carry_sources(session, rubric_version_id)
        criteria = [c for c, (target, _n) in sources.items()
                    if criterion_id is None or target == criterion_id]
    elif criterion_id is not None:
        criteria = [criterion_id]
    found = [human_verdict_info(row, prev) for row, prev in repo.history(
        session, response_id, criterion_ids=criteria, stream=stream)]
    if sources:
        found = [replace(h, criterion_id=sources[h.criterion_id][0]) for h in found]
        found.sort(key=lambda h: (h.criterion_id, h.id))
    return found
