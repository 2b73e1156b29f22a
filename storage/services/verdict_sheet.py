"""The verdict sheet: every response x criterion x reviewer as CSV, to fill in a spreadsheet
and bring back with the import (storage/services/verdict_import.py)."""

from __future__ import annotations

import io

from sqlalchemy import select

from storage import csv_cells
from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.export_names import response_key
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.services import agreement_sources
from storage.services.blindness import EVERYTHING, Sight, may_see

COLUMNS = ("response_id", "criterion", "verdict", "reviewer", "note")


def export_verdict_sheet_csv(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int, *,
    sight: Sight = EVERYTHING,
) -> str:
    """One row per response x criterion x reviewer with that reviewer's current verdict (one
    blank row where nobody answered), in the import's columns plus the requirement text,
    ready to fill in and import. A blind viewer (storage/services/blindness.py) gets a blank
    row where they have not answered, whoever else did."""
    with sessions() as session:
        criteria = [criterion_info(c) for c in
                    rubric_repo.get_version(session, rubric_version_id).criteria]
        dataset_repo.get_dataset(session, dataset_id)
        responses = session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id)
            .where(m.ResponseRow.dataset_id == dataset_id).order_by(m.ResponseRow.id)).all()
        current: dict[tuple[int, int], list] = {}
        # through the module: a test's recomputed() switch replaces the module's reader
        for h in agreement_sources.reviewer_verdicts(session, rubric_version_id, dataset_id):
            current.setdefault((h.response_id, h.criterion_id), []).append(h)
    # a key's reviewers in their keys' order (as the sheet listed them before its verdicts
    # were read from effective_verdicts, which yields them in the order they were saved)
    current = {key: sorted(found, key=lambda h: h.reviewer_key)
               for key, found in current.items() if may_see(sight, found)}
    out = io.StringIO()
    writer = csv_cells.writer(out, lineterminator="\n")
    writer.writerow([*COLUMNS, "requirement"])
    for rid, external in responses:
        for criterion in criteria:
            for human in current.get((rid, criterion.id)) or [None]:
                writer.writerow([
                    response_key(rid, external), criterion.label,
                    str(human.choice) if human else "", human.reviewer_key if human else "",
                    human.note if human else "", criterion.requirement,
                ])
    return out.getvalue()
