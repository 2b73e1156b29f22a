"""Review: correct the judges' verdicts, disagreements and failures first; several reviewers
per response, blind to each other; disputes go to an adjudicator.

What the user does lives in its own module: the set, its queue and progress
(ui/review_queue_view.py), one response's verdicts (ui/review_form.py), the adjudication queue
(ui/review_adjudication.py); the history popover is ui/response_view.py's.
"""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services.results import ResultSet
from storage.services.reviewers import Role
from ui import results_readers as readers
from ui import review_adjudication, review_form, review_layout, review_queue_view, runtime
from ui.auth import current_actor, unnamed_key
from ui.verdict_view import md_escape


@st.fragment
def render_workspace(db: str, chosen: ResultSet) -> None:
    """The queue position, one response and its form: a save or a key press re-runs only
    this, never the whole page."""
    s = st.session_state
    if s.review_mode != "Review" or s.review_set != (chosen.dataset_id,
                                                       chosen.rubric_version_id):
        st.rerun()  # "what next" opened the adjudication queue or another set: the whole page
    actor = current_actor()
    # The identity the tab shows, which may lag who acts now by a rename made in another
    # tab until the next whole-page run: the form is that identity's, and its saves carry it
    # (the service refuses them once it is not who acts).
    viewer = review_form.shown_identity() if actor else None
    if s.review_actor != viewer:
        if s.review_actor not in (None, unnamed_key()):
            # Another person took over (local mode's name switch): their own form, never the
            # previous person's choices, and nothing of theirs left to save under the new name.
            # (Typing a first name keeps the form: the same person, named now.)
            review_form.refuse_pending(actor)
            s.review_form_nonce += 1
            s.review_shown = s.review_submitted = s.review_due = s.review_restore = None
        s.review_actor = viewer
    queue = readers.get_review_queue(
        db, chosen.dataset_id, chosen.rubric_version_id, chosen.run_ids,
        s.review_unreviewed_only, s.review_queue_nonce, actor.key if actor else None)
    review_queue_view.position_of_requested(queue)
    if not queue:
        st.success("Everything in your queue is reviewed. Switch off “Only responses still "
                   "to review” to revisit verdicts.")
        review_queue_view.render_queue_done(db, chosen, actor, counts=False)
        return

    def detail_of(response_id: int):
        return readers.get_response_detail(
            db, response_id, chosen.rubric_version_id, chosen.run_ids,
            readers.detail_stamp(db, response_id, chosen.run_ids), viewer)

    shown = s.review_shown
    # A "save and next" whose run was cut short (a whole-page rerun) is written first.
    review_form.write_due(actor)
    if s.review_submitted is not None:
        # The save is checked against what the form showed (its detail still cached).
        if shown is None:
            review_form.take_submitted()
        else:
            review_form.process_submission(actor, detail_of(shown[0]), len(queue))
    item = review_queue_view.current_item(queue)
    detail = detail_of(item.response_id)
    if s.review_scrolled != item.response_id:
        s.review_scrolled = item.response_id
        review_form.scroll_to_top(item.response_id, s.review_form_nonce)
    review_queue_view.render_nav(queue, item, detail)
    review_form.render_item(actor, detail)
    if s.review_queue_done == (chosen.dataset_id, chosen.rubric_version_id):
        # under the buttons, where the reviewer who pressed "save and next" is looking
        review_queue_view.render_queue_done(db, chosen, actor)
    # "Save and next": the next response is on screen; now the write (on a refusal it comes
    # back to the response saved).
    review_form.write_due(actor)
    # Read the next response ahead (after drawing this one), so "save and next" finds it
    # cached: a save here does not change the next response's detail stamp.
    following = s.review_position + 1
    if following < len(queue):
        detail_of(queue.id_at(following))


ABOUT = ("Correct the judges by hand. The human verdict replaces the judge's in every run of "
         "this response under this rubric version (and later versions with the same "
         "requirement text); with several reviewers it applies once they agree or an "
         "adjudicator decides.")

review_layout.tighten()  # the response and its first criterion on the first screen
db = runtime.database_key()
runtime.ensure_worker()  # after a restart, interrupted runs resume when results are opened
title, pick, switch = st.container(key="review_head").columns(
    [2, 6, 3], vertical_alignment="bottom")
title.title("Review", anchor=False)
try:
    chosen = review_queue_view.pick_set(db, pick, help=ABOUT)
    if chosen is not None:
        actor = current_actor()
        modes = ["Review", "Adjudicate"] if actor is None or actor.can(Role.ADJUDICATOR) \
            else ["Review"]
        if st.session_state.review_mode not in modes:
            st.session_state.review_mode = "Review"
        mode = switch.segmented_control("Mode", modes, key="review_mode",
                                        label_visibility="collapsed")
        if mode == "Adjudicate":
            review_queue_view.render_set_panel(db, chosen, actor)
            review_adjudication.render_adjudication(db, chosen, actor)
        else:
            with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
                st.toggle("Only responses still to review", key="review_unreviewed_only",
                          on_change=review_queue_view.handle_refresh_queue, width="content")
                st.toggle("Blind mode", key="review_blind", width="content",
                          help="Hide the judges' verdicts and scores until you have answered.")
                st.button("Refresh queue", on_click=review_queue_view.handle_refresh_queue,
                          key="review_refresh", help="Re-sort the queue by what is still to "
                                                     "review.", width="content")
                with st.container(width="stretch"):
                    review_queue_view.render_set_panel(db, chosen, actor)
            render_workspace(db, chosen)
except RubricWorkbenchError as exc:
    st.error(md_escape(str(exc)))
