"""Review: the adjudication queue — disputed criteria with every reviewer's verdict and note,
resolved by an adjudicator's verdict (which then enters the effective scores)."""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import review_queue, reviews
from storage.services.results import ResultSet
from storage.services.review_queue import DisputeItem
from storage.services.reviewers import Actor, Role
from ui import response_view, runtime
from ui import results_readers as readers
from ui.review_form import CHOICE_LABELS, CHOICES
from ui.verdict_view import md_escape

PAGE = 20


def _key(item: DisputeItem) -> str:
    return f"{item.response_id}_{item.criterion_id}"


def handle_adjudicate(item: DisputeItem) -> None:
    st.session_state.review_adjudicate = _key(item)


def render_adjudication(db: str, chosen: ResultSet, actor: Actor | None) -> None:
    if actor is None or not actor.can(Role.ADJUDICATOR):
        st.info("Adjudication needs an adjudicator: ask an admin for the role.")
        return
    items = readers.get_adjudication_queue(
        db, chosen.dataset_id, chosen.rubric_version_id, readers.run_stamp(db, chosen.run_ids))
    disputed = [i for i in items if i.decision.disputed]
    noun = "criterion" if len(disputed) == 1 else "criteria"
    st.caption(f"{len(disputed)} disputed {noun} in this set. Until you decide, the "
               "judge's verdict stands for them; your verdict applies at once to every run.")
    render_pending(actor, items)
    if not disputed:
        st.success("Nothing to adjudicate: every reviewed criterion has one verdict.")
        return
    for item in disputed[:PAGE]:
        render_dispute(db, chosen, item)
    if len(disputed) > PAGE:
        st.caption(f"{len(disputed) - PAGE} more after these; they move up as you decide.")


def render_dispute(db: str, chosen: ResultSet, item: DisputeItem) -> None:
    key = _key(item)
    with st.container(border=True):
        st.markdown(f"**{md_escape(item.external_id or f'#{item.response_id}')}** · "
                    f"{md_escape(item.criterion_label)} · "
                    f"{response_view.decision_caption(item.decision)}")
        response_view.render_reviews(item.decision)
        with st.expander("Response"):
            detail = readers.get_response_detail(
                db, item.response_id, chosen.rubric_version_id, chosen.run_ids,
                readers.run_stamp(db, chosen.run_ids), None, True)
            response_view.render_response_text(detail)
        left, right = st.columns([3, 2], vertical_alignment="bottom")
        with left:
            st.radio("Adjudicated verdict", CHOICES, horizontal=True, index=None,
                     format_func=CHOICE_LABELS.get, key=f"review_adj_v_{key}")
            st.text_input("Why (shown to the reviewers)", key=f"review_adj_n_{key}")
        right.button("Decide", key=f"review_adj_go_{key}", type="primary",
                     on_click=handle_adjudicate, args=(item,))
        if st.session_state.review_adjudicate_flash and \
                st.session_state.review_adjudicate_flash[0] == key:
            _, kind, message = st.session_state.review_adjudicate_flash
            getattr(st, kind)(message)
            st.session_state.review_adjudicate_flash = None


def render_pending(actor: Actor, items: list[DisputeItem]) -> None:
    """Write the adjudication asked for by the last "Decide" (in the body, not a callback)."""
    s = st.session_state
    key, s.review_adjudicate = s.review_adjudicate, None
    if key is None:
        return
    item = next((i for i in items if _key(i) == key), None)
    choice = s.get(f"review_adj_v_{key}")
    if item is None:  # decided in another window (or the reviewers now agree) meanwhile
        st.warning(md_escape(decided_meanwhile(key)))
        return
    if not choice:
        s.review_adjudicate_flash = (key, "error", "Pick a verdict first.")
        return
    current = item.decision.adjudication
    try:
        reviews.adjudicate(
            runtime.get_sessions(), actor=actor, response_id=item.response_id,
            criterion_id=item.criterion_id, verdict=choice,
            note=str(s.get(f"review_adj_n_{key}") or "").strip(),
            expected_current_id=current.id if current else None)
    except RubricWorkbenchError as exc:
        s.review_adjudicate_flash = (key, "error", md_escape(str(exc)))
        return
    readers.clear_after_verdict()
    st.toast(md_escape(f"Decided {item.criterion_label}: {CHOICE_LABELS[choice]}."),
             icon=":material/gavel:")
    st.rerun()


def decided_meanwhile(key: str) -> str:
    """Why a Decide found its dispute gone, naming the response, the criterion and who
    decided it."""
    response_id = int(key.split("_")[0])
    chosen = st.session_state.review_set
    found = next((i for i in review_queue.adjudication_queue(
        runtime.get_sessions(), dataset_id=chosen[0], rubric_version_id=chosen[1],
        include_resolved=True) if _key(i) == key), None) if chosen else None
    if found is None or found.decision.adjudication is None:
        return ("Not saved: that criterion is no longer disputed (the reviewers now agree). "
                "Nothing was written.")
    decided = found.decision.adjudication
    return (f"Not saved: {found.external_id or f'#{response_id}'} · {found.criterion_label} "
            f"was decided meanwhile by {decided.reviewer} "
            f"({CHOICE_LABELS[decided.verdict.value]}). Nothing was written.")
