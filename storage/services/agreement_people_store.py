"""People's side of the Agreement report kept in the database (issue 41): made once per
stamp, read back by every app process while no verdict was written, no grade landed and the
dataset and the version's criteria stayed as they were.

The stamp (``people_stamp``) is the report's whole data stamp (``data_stamp``: the runs'
marks, the ready panels, and the number and newest id of the dataset's human verdicts: every
people's write appends a verdict, adjudications and carried verdicts included, and ids are
never reused; a verdict is deleted only with its rubric or dataset, which lowers the number),
with what moves people's side without a verdict: the dataset's responses (their number and
newest id: the labels) and the version's criteria and the criteria they carry from (an
unfrozen version's criteria replaced). As the other kept rows (storage.services.kept_rows):
derived, used only at their stamp, and a busy database never fails the read.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import func, select

from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.repositories import rubrics as rubric_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import kept_rows, trust_share_codec
from storage.services.agreement_people import PeopleRows, decode, encode

# Part of the stored stamp: rows stored by code that made them differently never match.
FORMAT = 2


def people_stamp(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                 data_stamp: tuple) -> tuple:
    """``data_stamp`` (read by the caller) with the dataset's responses (number, newest id)
    and a digest of the version's criteria and carry sources."""
    with sessions() as session:
        count, newest = session.execute(
            select(func.count(), func.max(m.ResponseRow.id))
            .where(m.ResponseRow.dataset_id == dataset_id)).one()
        version = rubric_repo.get_version(session, rubric_version_id)
        criteria = [repr(criterion_info(c)) for c in version.criteria]
        carried = sorted(verdict_repo.carry_sources(session, rubric_version_id).items())
    digest = hashlib.sha256(repr((criteria, carried)).encode()).hexdigest()
    return (data_stamp, (count or 0, newest or 0), digest)


def stamp_text(stamp: tuple) -> str:
    return kept_rows.stamp_text(stamp, FORMAT)


def read_stored(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                stamp: tuple) -> PeopleRows | None:
    """The stored rows if they were made at ``stamp``."""
    s = m.AgreementPeopleRow
    with sessions() as session:
        kept = session.execute(
            select(s.id, s.stamp)
            .where(s.rubric_version_id == rubric_version_id, s.dataset_id == dataset_id)
        ).one_or_none()
        if kept is None or kept.stamp != stamp_text(stamp):
            return None
        figures, arrays = session.execute(
            select(s.figures, s.arrays).where(s.id == kept.id)).one()
    try:
        return decode(figures, bytes(arrays))
    except trust_share_codec.UnknownShape:
        return None


def store(sessions: SessionFactory, rubric_version_id: int, dataset_id: int, stamp: tuple,
          rows: PeopleRows) -> bool:
    """Replace the set's stored rows with ``rows`` made at ``stamp``; False when another
    process stored its own meanwhile or the database stayed busy (kept_rows.replace)."""
    figures, arrays = encode(rows)
    return kept_rows.replace(
        sessions, m.AgreementPeopleRow,
        {"rubric_version_id": rubric_version_id, "dataset_id": dataset_id},
        {"stamp": stamp_text(stamp), "figures": figures, "arrays": arrays})
