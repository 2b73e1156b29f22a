"""Review pairs, for adjudicators: the comparison's disputed (pair, criterion) — reviewers
disagree and nobody decided — each with every reviewer's answer and the judge's, in the
comparison's own terms (A and B named), and a form to decide it."""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import pair_results, pair_reviews
from storage.services.comparisons import ComparisonInfo
from storage.services.pair_results import DisputedPreference
from storage.services.reviewers import Actor, Role
from ui import runtime, safe_text
from ui.boundary import plain

SIDES = ("A", "B", "TIE", "CANNOT_ASSESS")


def _side(side: str | None, c: ComparisonInfo) -> str:
    return {"A": f"A ({c.a_label})", "B": f"B ({c.b_label})", "TIE": "tie",
            "CANNOT_ASSESS": "cannot assess", None: "no preference"}[side]


def handle_decide(actor: Actor, item: DisputedPreference, side: str | None, note: str) -> None:
    """The adjudicator pressed Decide: one write, its outcome shown once."""
    if side is None:
        st.session_state.pairs_flash = ("warning", "Choose a side before deciding.")
        return
    try:
        pair_reviews.adjudicate_pair(
            runtime.get_sessions(), actor=actor, pair_id=item.pair_id,
            criterion=item.criterion_id if item.criterion_id is not None else None,
            side=side, note=note, expected_current_id=None)
        st.session_state.pairs_flash = (
            "success", plain(f"Decided {item.criterion} of pair {item.match_key}."))
    except RubricWorkbenchError as exc:
        st.session_state.pairs_flash = ("error", plain(f"Not saved: {exc}"))


def render_queue(actor: Actor | None, comparison: ComparisonInfo) -> None:
    if actor is None or not actor.can(Role.ADJUDICATOR):
        return
    queue = pair_results.pair_adjudication_queue(runtime.get_sessions(), actor=actor,
                                                 comparison_id=comparison.id)
    with st.expander(f"Waiting for adjudication ({len(queue)})", expanded=False):
        if not queue:
            st.caption("No disputed pair: the reviewers agree wherever two or more answered.")
        for item in queue:
            with st.form(key=f"pairs_adj_{item.pair_id}_{item.position}", border=True):
                st.markdown(f"**{plain(item.match_key)}** · {plain(item.criterion)}")
                lines = [f"{r.reviewer}: {_side(r.side, comparison)}"
                         + (f" — {r.note}" if r.note else "") for r in item.reviews]
                lines.append(f"Judge: {_side(item.judge, comparison)}")
                st.text(safe_text.text("\n".join(lines)))
                side = st.radio("Decision", SIDES, index=None, horizontal=True,
                                format_func=lambda s: _side(s, comparison),
                                key=f"pairs_adj_side_{item.pair_id}_{item.position}")
                note = st.text_input("Note (optional)",
                                     key=f"pairs_adj_note_{item.pair_id}_{item.position}")
                if st.form_submit_button("Decide"):
                    handle_decide(actor, item, side, note)
                    st.rerun()
