"""Appending one human verdict to a stream: the one write path that the Review page,
adjudication and the CSV import share (the caller then refreshes the effective verdicts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy.orm import Session

from grading.types import Verdict
from storage import models as m
from storage.choices import stored_choice
from storage.convert import criterion_info, human_verdict_info
from storage.dto import HumanVerdictInfo
from storage.errors import NotFoundError, StaleVerdictError
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import verdicts as repo


class _Unchecked:
    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Final = _Unchecked()


def stale_error(current: m.HumanVerdictRow | None) -> StaleVerdictError:
    if current is None:
        return StaleVerdictError("the verdict changed while you were reviewing; reload",
                                 current_id=None)
    return StaleVerdictError(
        f"{current.reviewer} changed this verdict to {current.option or current.verdict} at "
        f"{current.created_at:%Y-%m-%d %H:%M} UTC while you were reviewing; reload to see "
        "it and decide again",
        current_id=current.id,
    )


@dataclass
class ReadAhead:
    """What ``append_verdict`` reads for each criterion, read once for several criteria of
    one response and stream (one query each instead of one per criterion)."""

    response_id: int
    stream: str
    criteria: dict[int, tuple[m.CriterionRow, bool]]
    current: dict[int, m.HumanVerdictRow]


def read_ahead(session: Session, response_id: int, criterion_ids: Sequence[int],
               stream: str) -> ReadAhead:
    dataset_repo.require_response(session, response_id)
    return ReadAhead(response_id, stream,
                     rubric_repo.criteria_with_frozen(session, criterion_ids),
                     repo.latest_of(session, response_id, criterion_ids, stream))


def append_verdict(
    session: Session, response_id: int, criterion_id: int, verdict: Verdict | str,
    who: tuple[str, str], note: str, expected_current_id: int | _Unchecked | None,
    *, stream: str | None = None, review_seconds: float | None = None,
    ahead: ReadAhead | None = None,
) -> HumanVerdictInfo:
    """Add one human verdict inside the caller's transaction: the one write path that the
    Review page, adjudication and the CSV import share. ``who`` is (key, name); the stream
    is the reviewer's own unless given (adjudication). The caller then refreshes the
    effective verdicts of what it wrote (``effective_upkeep.refresh_verdicts``), once, after
    its last append. ``verdict``: MET / UNMET /
    CANNOT_ASSESS, or an option label on a multi-choice criterion (``storage.choices``)."""
    key, name = who
    stream = key if stream is None else stream
    if ahead is not None and (ahead.response_id, ahead.stream) != (response_id, stream):
        raise ValueError("read_ahead was made for another response or stream")
    found = (ahead.criteria.get(criterion_id) if ahead is not None
             else rubric_repo.criterion_with_frozen(session, criterion_id))
    if found is None:
        raise NotFoundError(f"criterion {criterion_id} does not exist")
    criterion, frozen = found
    chosen, option = stored_choice(criterion_info(criterion), verdict)
    if ahead is None:
        dataset_repo.require_response(session, response_id)
        current = repo.latest(session, response_id, criterion_id, stream)
    else:
        current = ahead.current.get(criterion_id)
    checked = not isinstance(expected_current_id, _Unchecked)
    if checked and (current.id if current else None) != expected_current_id:
        raise stale_error(current)
    if not frozen:
        rubric_repo.freeze(session, criterion.version_id)
        if ahead is not None:  # frozen now: the other criteria of the version need not ask
            ahead.criteria = {cid: (row, frozen or row.version_id == criterion.version_id)
                              for cid, (row, frozen) in ahead.criteria.items()}
    row = repo.append(
        session, response_id=response_id, rubric_version_id=criterion.version_id,
        criterion_id=criterion_id, stream=stream, verdict=chosen.value, reviewer_key=key,
        reviewer=name, note=note, previous=current, review_seconds=review_seconds,
        option=option,
    )
    return human_verdict_info(row, current)
