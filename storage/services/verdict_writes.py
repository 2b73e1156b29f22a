"""The write pass of import-verdicts (storage/services/verdict_import.py): which checked rows
differ from their reviewer's current verdict, chained to it, and their INSERT."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import insert

from storage import models as m
from storage.repositories import verdicts as verdict_repo
from storage.services import consensus

if TYPE_CHECKING:
    from storage.services.verdict_import import _Row

_TABLE = m.HumanVerdictRow.__table__


@dataclass
class Written:
    verdicts: int = 0
    responses: set[int] = field(default_factory=set)
    per: Counter = field(default_factory=Counter)


def new_rows(session, rubric_version_id: int, criteria: list[int], batch: list[_Row],
              names: dict[str, str], written: Written) -> list[tuple]:
    """The rows of one batch that differ from their reviewer's current verdict (carried ones
    included), each chained to its stream's current verdict on this very criterion."""
    ids = sorted({r.response_id for r in batch})
    reviewed, _adj, _numbers, _v = consensus.gather(session, ids, rubric_version_id)
    current = {(h.response_id, h.criterion_id, h.reviewer_key): (h.verdict, h.option, h.note)
               for per_criterion in reviewed.values() for found in per_criterion.values()
               for h in found}
    changed = [r for r in batch if current.get((r.response_id, r.criterion_id, r.reviewer))
               != (r.verdict, r.option, r.note)]
    if not changed:
        return []
    latest = {(row.response_id, row.criterion_id, row.stream): (row.id, row.seq)
              for row, _prev in verdict_repo.current_rows(
                  session, sorted({r.response_id for r in changed}), criteria)}
    values = []
    for r in changed:
        before = latest.get((r.response_id, r.criterion_id, r.reviewer))
        values.append((r.response_id, r.criterion_id, r.reviewer,
                       before[1] + 1 if before else 1, r.verdict.value,
                       names.get(r.reviewer, r.reviewer), r.note,
                       before[0] if before else None, r.option))
        written.responses.add(r.response_id)
        written.per[r.reviewer] += 1
    written.verdicts += len(values)
    return values


def insert_rows(session, rubric_version_id: int, values: list[tuple], now) -> None:
    # Core's executemany on the table (the ORM's bulk path costs as much again per row).
    # The unique (response, criterion, stream, seq) key still catches a reviewer who saved
    # the same criterion meanwhile: the whole import then runs again.
    session.execute(insert(_TABLE), [
        {"response_id": response_id, "rubric_version_id": rubric_version_id,
         "criterion_id": criterion_id, "stream": key, "seq": seq, "verdict": verdict,
         "reviewer_key": key, "reviewer": name, "note": note, "replaces_id": replaces,
         "review_seconds": None, "created_at": now, "option": option}
        for response_id, criterion_id, key, seq, verdict, name, note, replaces, option
        in values])
