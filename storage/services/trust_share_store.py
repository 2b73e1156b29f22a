"""The trust report's judges' share kept in the database (issue 41): made once, read back by
every app process while the judges have not moved.

``trust_judges.judges_part`` reads every judge verdict and bootstraps every length slope over
every response (~8 s CPU at 100,000 responses x 3 runs and a panel); the page kept it in its
process only, so every new process paid it. Here it is stored (``trust_share_sets``: its
figures as JSON, its arrays as raw bytes, storage.services.trust_share_codec) with the
judges' keys and the judges' stamp it was made at, as the judges' pattern count is
(agreement_judge_store). ``kept_share`` returns the stored one only when the stamp it was
made at is the current one and the one the caller's report was built at, for the same
judges, and it fits the report (the same criteria and responses); otherwise it makes the
share now and stores it in place of the old one. A database busy with another writer
(SQLite) does not fail the read: the share made now is used, stored by a later read.
"""

from __future__ import annotations

from sqlalchemy import select

from storage import big_values
from storage import models as m
from storage.engine import SessionFactory
from storage.services import kept_rows, trust_report, trust_share_codec
from storage.services.agreement import AgreementReport
from storage.services.agreement_judge_counts import judge_stamp
from storage.services.agreement_sources import data_stamp
from storage.services.trust_judges import TrustJudges, trust_judge_keys

# Part of the stored stamp: a share stored by code that made it differently never matches.
FORMAT = 1


def stamp_text(stamp: tuple) -> str:
    """The judges' stamp as stored: canonical JSON, with the share's format."""
    return kept_rows.stamp_text(stamp, FORMAT)


def current_stamp(sessions: SessionFactory, rubric_version_id: int, dataset_id: int) -> tuple:
    """The judges' part of the set's data stamp now (a grade landing, a run's status, a
    panel filled moves it; people's verdicts do not)."""
    return judge_stamp(data_stamp(sessions, rubric_version_id, dataset_id))


def kept_share(sessions: SessionFactory, report: AgreementReport,
               stamp: tuple, built_at: tuple | None = None) -> TrustJudges:
    """The judges' share of ``report`` (the full report, built after the judges' ``stamp``
    was read): the stored one when made at ``stamp``, still the current one, for these
    judges and fitting the report; else made now (``judges_part``) and stored if the
    judges did not move meanwhile. ``built_at``: the judges' stamp the report's data was
    read at, when the caller knows it (a kept report: ``agreement_kept`` reads the stamp
    before and after it reads): when it is ``stamp``, the share stored at ``stamp`` is the
    report's whether or not the judges moved since, and the current stamp is not read (a
    count over the set's human verdicts: ~30 ms at 100,000 responses on PostgreSQL)."""
    data = report.data
    where = (data.rubric_version_id, data.dataset_id)
    keys = list(trust_judge_keys(report))

    def fitting() -> TrustJudges | None:
        stored = read_stored(sessions, *where, stamp, keys)
        return stored if stored is not None and stored.fits(report) else None

    if built_at is not None and built_at == stamp:
        stored = fitting()
        if stored is not None:
            return stored
    return kept_rows.kept(stamp, lambda: current_stamp(sessions, *where), fitting,
                          lambda: trust_report.judges_part(sessions, report),
                          lambda made: store(sessions, made, stamp, keys))


def read_stored(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                stamp: tuple, keys) -> TrustJudges | None:
    """The stored share if it was made at ``stamp`` for these judges' ``keys`` (None also
    when stored in a shape this code does not know)."""
    s = m.TrustShareRow
    with sessions() as session:
        kept = session.execute(
            select(s.id, s.keys, s.stamp)
            .where(s.rubric_version_id == rubric_version_id, s.dataset_id == dataset_id)
        ).one_or_none()
        if kept is None or kept.stamp != stamp_text(stamp) or list(kept.keys) != list(keys):
            return None
        found = big_values.read_row(session, s, kept.id, (s.figures, s.arrays),
                                    (s.stamp == kept.stamp,))
    if found is None:  # replaced by another process since: read as not stored
        return None
    figures, arrays = found
    try:
        share = trust_share_codec.decode_share(figures, bytes(arrays))
    except trust_share_codec.UnknownShape:
        return None
    if (share.rubric_version_id, share.dataset_id) != (rubric_version_id, dataset_id):
        return None
    return share


def store(sessions: SessionFactory, share: TrustJudges, stamp: tuple, keys) -> bool:
    """Replace the set's stored share with ``share``; False when another process stored
    its own at the same time (theirs stays: each is checked by its stamp before use) or the
    database stayed busy (SQLite locked): a cache write never fails a read."""
    s = m.TrustShareRow
    figures, arrays = trust_share_codec.encode(share)
    return kept_rows.replace(
        sessions, s, {"rubric_version_id": share.rubric_version_id,
                      "dataset_id": share.dataset_id},
        {"keys": list(keys), "stamp": stamp_text(stamp), "figures": figures,
         "arrays": arrays})
