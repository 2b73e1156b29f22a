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

A new process after a saved verdict finds rows stored at the stamp before: when the stamps
differ by appended human verdicts only (``appended_since``: compared part by part, the
stored stamp being canonical JSON), ``read_stored`` re-reads only the responses those
verdicts are on and splices them into the stored rows (``agreement_people.advanced``: the
rows a whole read gives, in the same order), as ``agreement_kept.advance`` patches the
running process's report; anything else (a deletion, a grade, a response added, a criterion
edited, a verdict written while reading) reads whole.
"""

from __future__ import annotations

import hashlib
import json

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage import big_values
from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.id_chunks import id_chunks
from storage.repositories import rubrics as rubric_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import kept_rows, trust_share_codec
from storage.services.agreement_people import (
    PeopleRows,
    advanced,
    decode,
    encode,
    read_touched,
)

# Part of the stored stamp: rows stored by code that made them differently never match.
FORMAT = 3  # 3: the runs' choices without their reasons (session 47)


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
                stamp: tuple, landed: tuple | None = None) -> PeopleRows | None:
    """The stored rows if they were made at ``stamp``; or, when they were made at a stamp
    that ``stamp`` follows by appended human verdicts only (``appended_since``), those rows
    with only the responses of these verdicts read again (``agreement_people.advanced``:
    the rows a whole read gives), stored at ``stamp`` if nothing moved while reading.
    ``landed``: (judges' stamp was, judges' stamp now, responses): grades landed between
    those judges' stamps on those responses only (the judges' inputs advanced over them,
    ``agreement_inputs.advanced``); rows stored at the first are advanced over them too
    (the reviewed ones among them read again)."""
    s = m.AgreementPeopleRow
    with sessions() as session:
        kept = session.execute(
            select(s.id, s.stamp)
            .where(s.rubric_version_id == rubric_version_id, s.dataset_id == dataset_id)
        ).one_or_none()
        if kept is None:
            return None
        touched = (None if kept.stamp == stamp_text(stamp) else
                   appended_since(session, dataset_id, kept.stamp, stamp, landed,
                                  rubric_version_id))
        if kept.stamp != stamp_text(stamp) and touched is None:
            return None
        # 10 MB at 100,000 responses: copied once (storage.big_values: SQLite's blob I/O,
        # PostgreSQL's binary format)
        found = big_values.read_row(session, s, kept.id, (s.figures, s.arrays),
                                    (s.stamp == kept.stamp,))
    if found is None:  # replaced by another process since: read as not stored
        return None
    figures, arrays = found
    del found
    try:
        rows = decode(figures, bytes(arrays))
    except trust_share_codec.UnknownShape:
        return None
    # the stored value (~10 MB at 100,000 responses) is not held while the rows are
    # advanced and stored again
    del figures, arrays
    if touched is None:
        return rows
    with sessions() as session:
        fresh = read_touched(session, rubric_version_id, dataset_id, list(rows.runs), touched)
    try:
        rows = advanced(rows, fresh, touched)
    except ValueError:
        return None
    # lazily: agreement_sources reads agreement_people, which this module's callers import
    from storage.services.agreement_sources import data_stamp

    if people_stamp(sessions, rubric_version_id, dataset_id,
                    data_stamp(sessions, rubric_version_id, dataset_id)) != stamp:
        return None  # a write while reading: read whole (and stored by whoever is current)
    store(sessions, rubric_version_id, dataset_id, stamp, rows)
    return rows


# More appended verdicts than this: read whole (their responses are read by id lists,
# kept far below the drivers' parameter limits; not measured against a whole read).
MOST_APPENDED = 2000
_IDS_A_STATEMENT = 2_000  # response ids bound in one IN (): SQLite's limit is 32,766


def appended_since(session: Session, dataset_id: int, stored: str, stamp: tuple,
                   landed: tuple | None = None,
                   rubric_version_id: int | None = None) -> list[int] | None:
    """The responses of the human verdicts appended since the ``stored`` stamp (as stored)
    when ``stamp`` differs from it by these alone: the same format, judges' marks, ready
    panels, responses and criteria digest, and the dataset's verdicts grown by exactly the
    rows newer than the stored newest one (verdicts are append-only: after a deletion, or a
    verdict that committed late under an older id, the count and those rows differ). None
    otherwise. With ``landed`` (judges' stamp was, now, responses: see ``read_stored``) the
    judges' marks may have moved from the first to the second (no verdict appended then is
    fine), and the reviewed ones of those responses are touched too."""
    try:
        before = json.loads(stored)
        (runs, (count, newest), panels), responses, digest = before["stamp"]
    except (ValueError, TypeError, KeyError):
        return None
    now = json.loads(stamp_text(stamp))
    (runs_now, (count_now, newest_now), panels_now), responses_now, digest_now = now["stamp"]
    if (before.get("format") != now["format"] or panels != panels_now
            or responses != responses_now or digest != digest_now):
        return None
    graded: set[int] = set()
    if runs != runs_now:
        if landed is None or rubric_version_id is None:
            return None
        was, is_now, ids = landed
        if ([runs, panels] != _as_stored(was) or [runs_now, panels_now] != _as_stored(is_now)):
            return None  # not the grades the judges' inputs followed
        ev = m.EffectiveVerdictRow
        landed = sorted(set(ids))
        graded = {rid for chunk in id_chunks(landed, _IDS_A_STATEMENT)
                  for rid in session.scalars(select(ev.response_id).distinct().where(
                      ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id,
                      ev.response_id.in_(chunk)))}
        if (count, newest) == (count_now, newest_now):
            return sorted(graded) if len(graded) <= MOST_APPENDED else None
    if not (isinstance(count, int) and isinstance(newest, int)
            and count < count_now and newest < newest_now):
        return None
    hv = m.HumanVerdictRow
    appended = session.execute(
        select(hv.id, hv.response_id)
        .join(m.ResponseRow, m.ResponseRow.id == hv.response_id)
        .where(m.ResponseRow.dataset_id == dataset_id, hv.id > newest,
               hv.id <= newest_now)).all()
    if len(appended) != count_now - count:
        return None
    touched = graded | {rid for _vid, rid in appended}
    return sorted(touched) if len(touched) <= MOST_APPENDED else None


def _as_stored(judges_stamp: tuple) -> list:
    """A judges' stamp (runs, ready panels) as it reads back from a stored stamp."""
    return json.loads(json.dumps(list(judges_stamp)))


def store(sessions: SessionFactory, rubric_version_id: int, dataset_id: int, stamp: tuple,
          rows: PeopleRows) -> bool:
    """Replace the set's stored rows with ``rows`` made at ``stamp``; False when another
    process stored its own meanwhile or the database stayed busy (kept_rows.replace)."""
    figures, arrays = encode(rows)
    return kept_rows.replace(
        sessions, m.AgreementPeopleRow,
        {"rubric_version_id": rubric_version_id, "dataset_id": dataset_id},
        {"stamp": stamp_text(stamp), "figures": figures, "arrays": arrays})
