"""The Agreement report's judges-only inputs kept in the database (issue 41): made once per
judges' stamp, read back by every app process while the judges have not moved.

``kept_inputs`` returns the stored ``JudgeInputs`` (storage.services.agreement_inputs) when
they were made at the current judges' stamp for the current judges' keys, alpha's voters and
scored sources; otherwise it makes them from the judges' pattern count (itself kept,
agreement_judge_store) and replaces the stored ones. When the judges moved by grades
landing only (the same judges, runs and ready panels), the stored inputs are advanced
instead (``agreement_inputs.advanced``: the responses open when their count was made are
counted and read again), without the judges' count. As the other kept rows
(storage.services.kept_rows): derived, used only at their stamp, and a busy database never
fails the read.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import select

from storage import big_values
from storage import models as m
from storage.engine import SessionFactory
from storage.services import kept_rows, trust_share_codec
from storage.services.agreement_inputs import (
    JudgeInputs,
    advanced,
    decode,
    encode,
    make_inputs,
    scored_sources,
)
from storage.services.agreement_judge_counts import JudgePatterns, judge_sides, judge_stamp
from storage.services.agreement_sources import data_stamp

# Part of the stored stamp: inputs stored by code that made them differently never match.
FORMAT = 2


def stamp_text(stamp: tuple) -> str:
    return kept_rows.stamp_text(stamp, FORMAT)


def kept_inputs(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                patterns: Callable[[], JudgePatterns | None],
                stamp: tuple | None = None) -> JudgeInputs | None:
    """The set's judges-only inputs at the judges' ``stamp`` (default: read now): the
    stored ones when made at it for the current judges and sources; else made from
    ``patterns()`` (the judges' count, which must be at ``stamp``) and stored. None when
    there is no judges' count (no judge, a panel unsettled) or the judges moved while
    making them. A caller that passes the stamp it read checks the inputs' ``stamp``
    against the data it reads with them (``agreement_kept.build`` does): the stamp is not
    read a second time here (one query over the set's human verdicts, ~30 ms at 100,000
    responses on PostgreSQL)."""
    if stamp is None:
        stamp = judge_stamp(data_stamp(sessions, rubric_version_id, dataset_id))
    found = judge_sides(sessions, rubric_version_id, dataset_id)
    if found is None or not found[0]:
        return None
    keys, sides, voters = found
    sources = scored_sources(sessions, rubric_version_id, dataset_id)
    stored = read_stored(sessions, rubric_version_id, dataset_id, stamp, keys, voters,
                         sources)
    if stored is not None:
        return stored
    earlier = read_stored(sessions, rubric_version_id, dataset_id, None, keys, voters,
                          sources)
    moved = (None if earlier is None
             else advanced(sessions, earlier, keys, sides, voters, sources, stamp))
    del earlier  # (~16 MB at 100,000 responses) not held while the new ones are stored
    if moved is not None:
        store(sessions, moved)
        return moved
    judges = patterns()
    if judges is None or judges.stamp != stamp:
        return None
    made = make_inputs(sessions, judges)
    if made is not None and made.sources == sources:
        store(sessions, made)
    return made


def read_stored(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                stamp: tuple | None, keys, voters, sources) -> JudgeInputs | None:
    """The stored inputs if they were made at ``stamp`` for these judges and sources
    (``stamp`` None: at whichever stamp they were made, read from the stored one)."""
    s = m.AgreementInputsRow
    with sessions() as session:
        kept = session.execute(
            select(s.id, s.keys, s.voters, s.sources, s.stamp)
            .where(s.rubric_version_id == rubric_version_id, s.dataset_id == dataset_id)
        ).one_or_none()
        if stamp is None and kept is not None:
            stamp = _stamp_of(kept.stamp)
        if (kept is None or stamp is None or kept.stamp != stamp_text(stamp)
                or list(kept.keys) != list(keys)
                or list(kept.voters) != list(voters)
                or list(kept.sources) != list(sources)):
            return None
        found = big_values.read_row(session, s, kept.id, (s.figures, s.arrays),
                                    (s.stamp == kept.stamp,))
    if found is None:  # replaced by another process since: read as not stored
        return None
    figures, arrays = found
    try:
        return decode(figures, bytes(arrays), rubric_version_id=rubric_version_id,
                      dataset_id=dataset_id, keys=keys, voters=voters, stamp=stamp,
                      sources=sources)
    except trust_share_codec.UnknownShape:
        return None


def _stamp_of(text: str) -> tuple | None:
    """The judges' stamp stored as ``text`` by this code (None: another format)."""
    try:
        stored = json.loads(text)
        if stored.get("format") != FORMAT:
            return None
        runs, panel_ids = stored["stamp"]
        stamp = (tuple(tuple(run) for run in runs), tuple(panel_ids))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return stamp if stamp_text(stamp) == text else None


def store(sessions: SessionFactory, inputs: JudgeInputs) -> bool:
    """Replace the set's stored inputs with ``inputs``; False when another process stored
    its own meanwhile or the database stayed busy (kept_rows.replace)."""
    figures, arrays = encode(inputs)
    return kept_rows.replace(
        sessions, m.AgreementInputsRow,
        {"rubric_version_id": inputs.rubric_version_id, "dataset_id": inputs.dataset_id},
        {"keys": list(inputs.keys), "voters": list(inputs.voters),
         "sources": list(inputs.sources), "stamp": stamp_text(inputs.stamp),
         "figures": figures, "arrays": arrays})
