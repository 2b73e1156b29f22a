"""What the Agreement page reads of a counted report beyond its figures: the disagreement
list of one criterion, and the complete data a blind viewer's report and the trust report
are built from.

A counted report (``AgreementData.complete`` False) holds the judges' verdicts of the
reviewed responses only (issue 41: at 100,000 responses, 3 runs and a panel hold 3.2 million
verdicts with their reasons). The disagreement list of one criterion is found by the
database (``agreement_sides.disagreeing_query``: the responses where the chosen sources
gave both MET and UNMET), and only those responses' verdicts and reasons are read; the list
is then the one ``agreement.disagreements`` makes, item for item. The judges' share of it
(``agreement_listing``: nothing people write changes it) may be passed in, kept by the
judges' stamp: a saved verdict then lists from the report's verdicts, reading only the
judges' reasons of the items it lists on responses people answered.
"""

from __future__ import annotations

from collections.abc import Sequence

from storage.engine import SessionFactory
from storage.services import agreement_listing, agreement_sides
from storage.services.agreement import (
    AgreementReport,
    Disagreement,
    disagreements,
    gather_sources,
    listed_disagreements,
)
from storage.services.agreement_listing import JudgeListing
from storage.services.agreement_sources import AgreementData


def disagreement_list(sessions: SessionFactory, report: AgreementReport,
                      source_keys: Sequence[str], criterion_id: int,
                      judges: JudgeListing | None = None,
                      first: int | None = None) -> list[Disagreement]:
    """``agreement.disagreements`` of ``report``'s sources on one criterion, read from the
    database when the report holds only the reviewed responses' judge verdicts. ``judges``:
    ``judge_listing`` of these sources' judges on this criterion with the same ``first``,
    kept by the caller (read here when None). ``first``: the list's first so many items
    only (by response), the others not read."""
    data = report.data
    if data.complete:
        return disagreements(data, source_keys, criterion_id)[:first]
    if judges is None:
        judges = judge_listing(sessions, data, source_keys, criterion_id, first)
    if judges is not None:
        listed = listed_disagreements(agreement_listing.listed_data(data, judges, source_keys),
                                      source_keys, criterion_id)[:first]
        return agreement_listing.with_judge_reasons(sessions, data, judges, listed)
    return gathered_list(sessions, report, source_keys, criterion_id)[:first]


def judge_listing(sessions: SessionFactory, data: AgreementData, source_keys: Sequence[str],
                  criterion_id: int, first: int | None = None) -> JudgeListing | None:
    """The judges' share of ``disagreement_list`` (None: it is read through the gather)."""
    return agreement_listing.judge_listing(
        sessions, data, agreement_listing.judge_keys(source_keys), criterion_id, first)


def gathered_list(sessions: SessionFactory, report: AgreementReport,
                  source_keys: Sequence[str], criterion_id: int) -> list[Disagreement]:
    """``disagreement_list`` through a gather of every source (the responses where the
    sources' stored verdicts disagree): what it read before the judges' share was kept,
    and still reads when a panel's stored decisions are not all the ones read."""
    data = report.data
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
