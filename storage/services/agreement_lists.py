"""What the Agreement page reads of a counted report beyond its figures: the disagreement
list of one criterion, and the complete data a blind viewer's report and the trust report
are built from.

A counted report (``AgreementData.complete`` False) holds the judges' verdicts of the
reviewed responses only (issue 41: at 100,000 responses, 3 runs and a panel hold 3.2 million
verdicts with their reasons). The disagreement list of one criterion is found by the
database (``agreement_sides.disagreeing_query``: the responses where the chosen sources
gave both MET and UNMET), and only those responses' verdicts and reasons are read; the list
is then the one ``agreement.disagreements`` makes, item for item.
"""

from __future__ import annotations

from collections.abc import Sequence

from storage.engine import SessionFactory
from storage.services import agreement_sides
from storage.services.agreement import (
    AgreementReport,
    Disagreement,
    disagreements,
    gather_sources,
    listed_disagreements,
)
from storage.services.agreement_sources import AgreementData


def disagreement_list(sessions: SessionFactory, report: AgreementReport,
                      source_keys: Sequence[str], criterion_id: int) -> list[Disagreement]:
    """``agreement.disagreements`` of ``report``'s sources on one criterion, read from the
    database when the report holds only the reviewed responses' judge verdicts."""
    data = report.data
    if data.complete:
        return disagreements(data, source_keys, criterion_id)
    sides = [agreement_sides.side_of(data, key) for key in source_keys]
    if not sides or any(side is None for side in sides):
        return []
    within = agreement_sides.disagreeing_query(sides, criterion_id)
    found = gather_sources(sessions, data.rubric_version_id, data.dataset_id,
                           complete=False, within=within)
    return listed_disagreements(found, source_keys, criterion_id)


def complete_data(sessions: SessionFactory, data: AgreementData) -> AgreementData:
    """``data`` with every judge verdict (read again when the report was counted)."""
    if data.complete:
        return data
    return gather_sources(sessions, data.rubric_version_id, data.dataset_id)
