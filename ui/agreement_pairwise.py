"""The Agreement page's pairwise section: every comparison people reviewed pairs of (the
Review pairs page), with the judge against the people per criterion — kappa over A / TIE /
B, n, its 95 % interval, and "can't tell yet" while the pairs are few."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.services import pair_agreement
from storage.services.reviewers import Role
from ui import compare_panels, compare_readers, pair_agreement_view
from ui.auth import current_actor
from ui.runtime import sessions_for


@st.cache_data(ttl=5, max_entries=20, show_spinner=False)
def get_reviewed(db: str) -> dict[int, tuple[int, int]]:
    return pair_agreement.reviewed_comparisons(sessions_for(db))


def pairwise_rows(db: str) -> tuple[list[dict], bool]:
    """The section's rows (empty: nothing to show this viewer) and whether the viewer may see
    the sources' names."""
    actor = current_actor()
    if actor is None or not actor.can(Role.REVIEWER):
        return [], False
    reviewed = get_reviewed(db)
    if not reviewed:
        return [], False
    known = {c.id: c for c in compare_readers.get_comparisons(db)}
    # Review pairs keeps the sources hidden from reviewers; so does this list.
    named = actor.can(Role.ADJUDICATOR)
    rows = []
    for cid, stamp in reviewed.items():
        c = known.get(cid)
        if c is None:
            continue
        label = f"#{cid} · {c.b_label} vs {c.a_label}" if named else f"Comparison #{cid}"
        for row in pair_agreement_view.agreement_rows(compare_readers.get_pair_agreement(
                db, cid, actor, stamp, c.done_count), with_people=True):
            rows.append({"comparison": label, **row})
    rows.extend(_panel_rows(db, actor, reviewed, named))
    return rows, named


def render_pairwise(db: str, found: tuple[list[dict], bool] | None = None) -> None:
    rows, named = found if found is not None else pairwise_rows(db)
    if not rows:
        return
    st.subheader("Pairwise comparisons: judge vs people")
    st.caption("Comparisons whose pairs people reviewed, and panels of those comparisons' "
               "judges: per criterion, how often the judge's (or the panel's) preference (A, "
               "tie or B) matches the people's where they agreed or an adjudicator decided — "
               "Cohen's kappa with n and its 95% interval. The Compare page shows each "
               "comparison's and panel's result with people's preferences."
               + ("" if named else " Your figures cover the pairs you answered whole."))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def _panel_rows(db: str, actor, reviewed: dict[int, tuple[int, int]],
                named: bool) -> list[dict]:
    """The panels of pairwise judges whose comparisons people reviewed: the panel against
    the people per criterion, as on the Compare page."""
    rows = []
    for panel in compare_readers.get_pair_panels(db):
        saves = tuple(reviewed.get(c.id, (0, 0)) for c in panel.members)
        if not any(count for count, _newest in saves):
            continue
        label = (f"Panel P{panel.id} · {panel.b_label} vs {panel.a_label}" if named
                 else f"Panel P{panel.id}")
        _people, agreement = compare_readers.get_panel_people(
            db, panel.id, actor, (compare_panels.progress(panel), saves))
        rows.extend({"comparison": label, **row}
                    for row in pair_agreement_view.agreement_rows(agreement, with_people=True))
    return rows
