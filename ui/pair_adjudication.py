"""Review pairs, for adjudicators: the comparison's disputed (pair, criterion) — reviewers
disagree and nobody decided — each with every reviewer's answer and the judge's, in the
comparison's own terms (A and B named), and a form to decide it.

A decision carries what its card showed (no adjudication, and each reviewer's current
answer): the service refuses it when that changed meanwhile — another tab or adjudicator
decided, a reviewer answered again — so nothing is overwritten unseen."""

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


def _key(pair_id: int, position: int) -> str:
    return f"{pair_id}_{position}"


def handle_decide_click(item: DisputedPreference) -> None:
    """Decide was pressed: remember which card and what it showed (written in the body)."""
    st.session_state.pairs_adjudicate = (
        item.pair_id, item.position, tuple((r.reviewer_key, r.id) for r in item.reviews))


def _gone(actor: Actor, pair_id: int, position: int, c: ComparisonInfo) -> str:
    """Why a Decide found its card no longer waiting: who decided it, or that the
    reviewers now agree."""
    result = pair_results.pair_result(runtime.get_sessions(), actor=actor, pair_id=pair_id)
    decision = result.decisions.get(position)
    name = result.report.preferences[position].criterion.name or "the pair"
    if decision is not None and decision.adjudication is not None:
        a = decision.adjudication
        return (f"Not saved: {name} was decided meanwhile by {a.reviewer} "
                f"({_side(a.side, c)}). Nothing was written; the queue below is current.")
    return ("Not saved: that criterion is no longer disputed (the reviewers' answers "
            "changed meanwhile). Nothing was written; the queue below is current.")


def process_decision(actor: Actor, queue: list[DisputedPreference],
                     comparison: ComparisonInfo) -> bool:
    """Write the decision asked for by the last Decide; True when one was written."""
    s = st.session_state
    asked, s.pairs_adjudicate = s.pairs_adjudicate, None
    if asked is None:
        return False
    pair_id, position, seen = asked
    key = _key(pair_id, position)
    item = next((i for i in queue if (i.pair_id, i.position) == (pair_id, position)), None)
    if item is None:
        s.pairs_flash = ("warning", plain(_gone(actor, pair_id, position, comparison)))
        return False
    side = s.get(f"pairs_adj_side_{key}")
    if side is None:
        s.pairs_flash = ("warning", "Choose a side before deciding.")
        return False
    try:
        pair_reviews.adjudicate_pair(
            runtime.get_sessions(), actor=actor, pair_id=pair_id, criterion=item.criterion_id,
            side=side, note=str(s.get(f"pairs_adj_note_{key}") or ""),
            expected_current_id=None, expected_reviews=dict(seen))
    except RubricWorkbenchError as exc:
        s.pairs_flash = ("error", plain(f"Not saved: {exc}"))
        return False
    s.pairs_flash = ("success", plain(f"Decided {item.criterion} of pair {item.match_key}."))
    return True


def render_queue(actor: Actor | None, comparison: ComparisonInfo) -> None:
    if actor is None or not actor.can(Role.ADJUDICATOR):
        return
    sessions = runtime.get_sessions()
    queue = pair_results.pair_adjudication_queue(sessions, actor=actor,
                                                 comparison_id=comparison.id)
    if process_decision(actor, queue, comparison):
        queue = pair_results.pair_adjudication_queue(sessions, actor=actor,
                                                     comparison_id=comparison.id)
    with st.expander(f"Waiting for adjudication ({len(queue)})", expanded=False):
        if not queue:
            st.caption("No disputed pair: the reviewers agree wherever two or more answered.")
        for item in queue:
            key = _key(item.pair_id, item.position)
            with st.form(key=f"pairs_adj_{key}", border=True):
                st.markdown(f"**{plain(item.match_key)}** · {plain(item.criterion)}")
                lines = [f"{r.reviewer}: {_side(r.side, comparison)}"
                         + (f" — {r.note}" if r.note else "") for r in item.reviews]
                lines.append(f"Judge: {_side(item.judge, comparison)}")
                st.text(safe_text.text("\n".join(lines)))
                st.radio("Decision", SIDES, index=None, horizontal=True,
                         format_func=lambda s: _side(s, comparison),
                         key=f"pairs_adj_side_{key}")
                st.text_input("Note (optional)", key=f"pairs_adj_note_{key}")
                st.form_submit_button("Decide", on_click=handle_decide_click, args=(item,))
