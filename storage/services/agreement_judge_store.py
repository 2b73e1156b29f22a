"""The judges' pattern count kept in the database (issue 41): counted once, read back by
every app process while the judges have not moved.

``agreement_judge_counts.judge_patterns`` reads every judge verdict (at 100,000 responses x
3 runs and a panel, ~7 s); the page kept it in its process only, so every new process paid
it. Here the rows are stored (``judge_pattern_sets``, the rows as one value of raw numbers:
storage.services.judge_rows_codec) with the judges' keys, alpha's voters and the judges'
stamp they were counted at. ``kept_patterns``
returns them when the stamp, keys and voters are the current ones (and no panel is
unsettled, as ``judge_patterns`` requires); otherwise it counts them now and replaces the
stored ones. The rows read back are the counted ones, in their order
(tests/storage/test_agreement_judge_store.py).

When the stamp moved only because grades landed (the same judges, runs and ready panels),
the stored rows are advanced instead (``agreement_judge_counts.advanced``): only the
responses that were open when they were counted (a judge had no grade for them, or a
transient failure; stored with the rows, ``open_ids`` / ``open_rows``) are counted again,
their stored part out and their rows now in. Anything else is counted whole.
"""

from __future__ import annotations

import json

from sqlalchemy import select

from storage import big_values
from storage import models as m
from storage.engine import SessionFactory
from storage.services import kept_rows
from storage.services.agreement_judge_counts import (
    JudgePatterns,
    OpenPart,
    advanced,
    judge_patterns,
    judge_sides,
    judge_stamp,
)
from storage.services.agreement_sources import data_stamp
from storage.services.judge_rows_codec import UnknownRows, decode, encode

# Part of the stored stamp: rows stored by code that counted them differently never match.
FORMAT = 2


def stamp_text(stamp: tuple) -> str:
    """The judges' stamp as stored: canonical JSON, with the rows' format."""
    return kept_rows.stamp_text(stamp, FORMAT)


def kept_patterns(sessions: SessionFactory, rubric_version_id: int,
                  dataset_id: int) -> JudgePatterns | None:
    """The judges' pattern rows now: the stored ones when counted at the current judges'
    stamp, keys and voters; else the stored ones advanced over the grades landed since
    (``advanced``) or counted whole (``judge_patterns``), and stored. None as
    ``judge_patterns`` (no judge, a panel unsettled, the judges moved while counting)."""
    stamp = judge_stamp(data_stamp(sessions, rubric_version_id, dataset_id))
    found = judge_sides(sessions, rubric_version_id, dataset_id)
    if found is None or not found[0]:
        return None
    keys, sides, voters = found
    stored = read_stored(sessions, rubric_version_id, dataset_id, stamp, keys, voters)
    if stored is not None:
        return stored
    earlier = read_earlier(sessions, rubric_version_id, dataset_id, keys, voters)
    counted = (None if earlier is None
               else advanced(sessions, earlier, keys, sides, voters, stamp))
    if counted is None:
        counted = judge_patterns(sessions, rubric_version_id, dataset_id)
    if counted is not None:
        store(sessions, counted)
    return counted


def read_stored(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                stamp: tuple, keys, voters) -> JudgePatterns | None:
    """The stored rows if they were counted at ``stamp`` for these keys and voters, with
    their open part when kept (what the judges' inputs made from them keep to advance:
    agreement_inputs.advanced)."""
    s = m.JudgePatternSetRow
    with sessions() as session:
        kept = session.execute(
            select(s.id, s.keys, s.voters, s.stamp)
            .where(s.rubric_version_id == rubric_version_id, s.dataset_id == dataset_id)
        ).one_or_none()
        if (kept is None or kept.stamp != stamp_text(stamp) or list(kept.keys) != list(keys)
                or list(kept.voters) != list(voters)):
            return None
        read = big_values.read_row(session, s, kept.id, (s.rows, s.open_ids, s.open_rows),
                                   (s.stamp == kept.stamp,))
    if read is None:  # replaced by another process since: read as not stored
        return None
    blob, open_ids, open_rows = read
    try:
        found = decode(bytes(blob), len(keys))
        part = (None if open_ids is None or open_rows is None else
                OpenPart(bytes(open_ids), decode(bytes(open_rows), len(keys))))
    except UnknownRows:
        return None
    return JudgePatterns(rubric_version_id, dataset_id, tuple(keys), tuple(voters), stamp,
                         found, part)


def read_earlier(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                 keys, voters) -> JudgePatterns | None:
    """The stored rows with their open part and the stamp they were counted at, for these
    keys and voters, in this format (None: none, or no open part kept)."""
    s = m.JudgePatternSetRow
    with sessions() as session:
        kept = session.execute(
            select(s.id, s.keys, s.voters, s.stamp)
            .where(s.rubric_version_id == rubric_version_id, s.dataset_id == dataset_id)
        ).one_or_none()
        if (kept is None or list(kept.keys) != list(keys)
                or list(kept.voters) != list(voters)):
            return None
        read = big_values.read_row(session, s, kept.id, (s.rows, s.open_ids, s.open_rows),
                                   (s.stamp == kept.stamp,))
    if read is None or read[1] is None or read[2] is None:
        return None
    blob, open_ids, open_rows = read
    try:
        stored = json.loads(kept.stamp)
        if stored.get("format") != FORMAT:
            return None
        runs, panel_ids = stored["stamp"]
        stamp = (tuple(tuple(run) for run in runs), tuple(panel_ids))
        if stamp_text(stamp) != kept.stamp:
            return None  # not written by this code as it writes stamps
        rows = decode(bytes(blob), len(keys))
        part = decode(bytes(open_rows), len(keys))
    except (UnknownRows, ValueError, KeyError, TypeError):
        return None
    return JudgePatterns(rubric_version_id, dataset_id, tuple(keys), tuple(voters), stamp,
                         rows, OpenPart(bytes(open_ids), part))


def store(sessions: SessionFactory, judges: JudgePatterns) -> bool:
    """Replace the set's stored rows with ``judges``'; False when another process stored
    its own at the same time (theirs stay: each is checked by its stamp before use), or the
    database stayed busy (SQLite locked): the page shows the rows counted now all the same,
    a cache write never fails a read."""
    s = m.JudgePatternSetRow
    try:
        rows = encode(judges.rows, len(judges.keys))
        part = (None if judges.open is None
                else encode(judges.open.rows, len(judges.keys)))
    except ValueError:
        return False  # not rows this code can keep: counted again by the next read
    return kept_rows.replace(
        sessions, s, {"rubric_version_id": judges.rubric_version_id,
                      "dataset_id": judges.dataset_id},
        {"keys": list(judges.keys), "voters": list(judges.voters),
         "stamp": stamp_text(judges.stamp), "rows": rows,
         "open_ids": None if part is None else judges.open.ids, "open_rows": part})
