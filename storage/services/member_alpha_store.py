"""A panel's members' alpha kept in the database (issue 41): computed once, read back by
every app process while the members' grades have not moved.

``panel_agreement.member_agreement`` reads every member's verdict keys (~1.5 s at 100,000
responses x 3 members); the page kept it in its process only (``panel_readers.
get_member_agreement``, by ``panel_results.member_stamp``), so every new process paid it.
Here the figures are stored per panel (``member_alpha_kept``, JSON through
trust_share_codec: every float read back bit for bit) with the members' stamp they were
computed at. ``kept_member_agreement`` returns them only when that stamp is the caller's and
still the current one; otherwise it computes them now and stores them in place of the old
ones, unless the members moved meanwhile. A database busy with another writer (SQLite)
does not fail the read: the figures computed now are shown, stored by a later read.
"""

from __future__ import annotations

from sqlalchemy import select

from storage import models as m
from storage.engine import SessionFactory
from storage.services import kept_rows, panel_agreement, panel_results, trust_share_codec
from storage.services.panel_agreement import MemberAgreement

# Part of the stored stamp: figures stored by code that computed them differently never match.
FORMAT = 1


def stamp_text(stamp: tuple) -> str:
    """The members' stamp as stored: canonical JSON, with the figures' format."""
    return kept_rows.stamp_text(stamp, FORMAT)


def current_stamp(sessions: SessionFactory, panel_id: int) -> tuple:
    """The panel's members' stamp now (``panel_results.member_stamp``)."""
    return panel_results.current_member_stamp(sessions, (panel_id,))


def kept_member_agreement(sessions: SessionFactory, panel_id: int,
                          stamp: tuple) -> list[MemberAgreement]:
    """The members' alpha per criterion (``panel_agreement.member_agreement``): the stored
    figures when computed at ``stamp`` (the members' stamp the caller read) and that is the
    current one; else computed now and stored if the members did not move meanwhile."""
    return kept_rows.kept(stamp, lambda: current_stamp(sessions, panel_id),
                          lambda: read_stored(sessions, panel_id, stamp),
                          lambda: panel_agreement.member_agreement(sessions, panel_id),
                          lambda found: store(sessions, panel_id, stamp, found))


def read_stored(sessions: SessionFactory, panel_id: int,
                stamp: tuple) -> list[MemberAgreement] | None:
    """The stored figures if computed at ``stamp`` (None also when stored in a shape this
    code does not know)."""
    k = m.MemberAlphaRow
    with sessions() as session:
        kept = session.execute(select(k.stamp, k.figures).where(k.panel_id == panel_id)
                               ).one_or_none()
    if kept is None or kept.stamp != stamp_text(stamp):
        return None
    try:
        found = trust_share_codec.decode(kept.figures)
    except trust_share_codec.UnknownShape:
        return None
    if not isinstance(found, list) or not all(isinstance(a, MemberAgreement) for a in found):
        return None
    return found


def store(sessions: SessionFactory, panel_id: int, stamp: tuple,
          found: list[MemberAgreement]) -> bool:
    """Replace the panel's stored figures; False when another process stored its own at the
    same time or the database stayed busy (SQLite locked): a cache write never fails a
    read."""
    k = m.MemberAlphaRow
    figures, _arrays = trust_share_codec.encode(list(found))
    return kept_rows.replace(sessions, k, {"panel_id": panel_id},
                             {"stamp": stamp_text(stamp), "figures": figures})
