"""Review: which set, how many reviewers it needs, each reviewer's queue and progress."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import review_sets
from storage.services.results import ResultSet
from storage.services.review_queue import QueueItem, ResponseDetail, ReviewQueue
from storage.services.reviewers import Actor, Role
from ui import response_view, runtime, safe_text
from ui import results_readers as readers
from ui.verdict_view import md_escape

COVERAGE_POLL_SECONDS = 5.0  # the review set's counts follow saves made since


def handle_move(step: int, size: int) -> None:
    s = st.session_state
    s.review_queue_done = None
    s.review_position = min(max(0, s.review_position + step), max(0, size - 1))


def handle_refresh_queue() -> None:
    st.session_state.review_queue_nonce += 1
    st.session_state.review_position = 0
    st.session_state.review_queue_done = None


def handle_set_change() -> None:
    st.session_state.review_position = 0
    st.session_state.review_queue_done = None


def handle_open_set(key: tuple[int, int]) -> None:
    handle_set_change()
    st.session_state.review_set = key


def handle_adjudicate_mode() -> None:
    st.session_state.review_queue_done = None
    st.session_state.review_mode = "Adjudicate"


def pick_set(db: str, where=st, *, help: str | None = None) -> ResultSet | None:
    """The review set, chosen in ``where`` (a column of the page's first row)."""
    sets = readers.get_result_sets(db)
    if not sets:
        st.info("Nothing to review yet — go to Grade and run a judge over a dataset first.")
        st.page_link("app_pages/grade.py", label="Go to Grade", icon=":material/play_circle:")
        return None
    by_key = {(s.dataset_id, s.rubric_version_id): s for s in sets}
    if st.session_state.review_set not in by_key:
        st.session_state.review_set = next(iter(by_key))
    key = where.selectbox("Review set", list(by_key),
                          format_func=lambda k: safe_text.text(by_key[k].label),
                          key="review_set", on_change=handle_set_change, help=help)
    return by_key[key]


@st.fragment(run_every=COVERAGE_POLL_SECONDS)
def render_set_panel(db: str, chosen: ResultSet, actor: Actor | None) -> None:
    """Reviewers per response, the random sample, the set's coverage and each one's progress.
    A fragment of its own that polls: a save re-runs only the review form (its fragment), and
    other reviewers save too, so the counts follow without redrawing the page."""
    coverage = readers.get_review_coverage(db, chosen.dataset_id, chosen.rubric_version_id,
                                           readers.run_stamp(db, chosen.run_ids))
    settings = coverage.settings
    need = settings.reviewers_per_response
    summary = (f"{need} reviewer{'s' if need != 1 else ''} per response · "
               f"{coverage.complete} of {coverage.response_count} responses have them")
    with st.expander(f"Review set: {summary}", icon=":material/group:"):
        spread = " · ".join(f"{count} reviewer{'s' if count != 1 else ''}: {n}"
                            for count, n in coverage.by_reviewers.items())
        st.caption(f"Coverage (responses by number of complete reviews): {spread or '—'}")
        if coverage.reviewers:
            st.dataframe(
                [{"Reviewer": p.reviewer, "Responses done": p.responses_done,
                  "Started": p.responses_started} for p in coverage.reviewers],
                hide_index=True, width="stretch")
        admin = actor is not None and actor.can(Role.ADMIN)
        with st.form("review_set_form", border=False):
            per = st.number_input("Reviewers per response", min_value=1,
                                  max_value=review_sets.MAX_REVIEWERS_PER_RESPONSE,
                                  value=need, step=1, disabled=not admin,
                                  help="Each response stays in the queues until this many "
                                       "people have reviewed every criterion.")
            sample = st.number_input(
                "Random sample (responses)", min_value=0, value=settings.sample_size, step=10,
                disabled=not admin,
                help="Responses drawn at random (the same for every reviewer) and put ahead "
                     "of the rest, so agreement is not measured on hard cases only.")
            submitted = st.form_submit_button("Save settings", disabled=not admin)
        if settings.carried_from is not None:
            st.caption(f"Carried from v{settings.carried_from} of this rubric: nobody has set "
                       "them on this version yet. Saving here sets them for this version.")
        st.caption("New versions of this rubric (edited, imported or adopted from a wording "
                   "trial) keep these settings until they are changed there.")
        if not admin:
            st.caption("Only an admin changes these settings.")
        if submitted and actor is not None:
            try:
                review_sets.update_settings(
                    runtime.get_sessions(), actor=actor, dataset_id=chosen.dataset_id,
                    rubric_version_id=chosen.rubric_version_id,
                    reviewers_per_response=int(per), sample_size=int(sample))
            except RubricWorkbenchError as exc:
                st.error(md_escape(str(exc)))
            else:
                readers.clear_after_verdict()
                handle_refresh_queue()
                # again from the top, so the summary above and the queue show the new settings
                st.session_state.review_set_flash = "Saved: the queues now follow these settings."
                st.rerun()
        if st.session_state.review_set_flash:
            st.success(st.session_state.review_set_flash)
            st.session_state.review_set_flash = None


def position_of_requested(queue: ReviewQueue) -> None:
    """Results' "review this response" asks for one response: go to it."""
    s = st.session_state
    wanted = s.review_response_id
    if wanted is None:
        return
    s.review_response_id = None
    found = queue.position_of(wanted)
    if found is not None:
        s.review_position = found
        return
    st.warning("That response is not in this queue (you may have reviewed it already: "
               "switch off “Only responses still to review”).")


def current_item(queue: Sequence[QueueItem]) -> QueueItem:
    s = st.session_state
    s.review_position = min(max(0, s.review_position), len(queue) - 1)
    return queue[s.review_position]


def item_caption(item: QueueItem, detail: ResponseDetail, blind: bool) -> str:
    flags = [] if blind else [  # in blind mode even "they disagree" is a hint
        label for label, on in (("judges disagree", item.disagree),
                                ("judge failed or fell back", item.failed)) if on]
    if item.in_sample:
        flags.append("random sample")
    mine = len(detail.mine)
    total = len(detail.version.criteria)
    reviewed = f"{mine}/{total} {'criterion' if total == 1 else 'criteria'} reviewed"
    others = f"{item.reviewers} complete review{'s' if item.reviewers != 1 else ''}"
    return " · ".join([item.external_id or f"#{item.response_id}", *flags, reviewed, others])


def render_nav(queue: Sequence[QueueItem], item: QueueItem, detail: ResponseDetail) -> None:
    """Previous, where in the queue, the history, Next: one row, each button as wide as its
    label (never cut at 1280 px)."""
    s = st.session_state
    with st.container(horizontal=True, vertical_alignment="center", gap="small",
                      key="review_nav"):
        st.button("Previous", icon=":material/chevron_left:", key="review_prev",
                  on_click=handle_move, args=(-1, len(queue)),
                  disabled=s.review_position == 0, width="content", shortcut="Alt+Left")
        st.markdown(f"**{s.review_position + 1} of {len(queue)}** · "
                    f"{md_escape(item_caption(item, detail, s.review_blind))}",
                    width="stretch")
        response_view.render_history(detail, width="content")
        st.button("Next", icon=":material/chevron_right:", icon_position="right",
                  key="review_next", on_click=handle_move, args=(1, len(queue)),
                  disabled=s.review_position >= len(queue) - 1, width="content",
                  shortcut="Alt+Right")


def render_queue_done(db: str, chosen: ResultSet, actor: Actor | None, *,
                      counts: bool = True) -> None:
    """After "save and next" on the last response (or with nothing left to review): the
    queue is done; what comes next. ``counts``: say how much of the set is reviewed."""
    coverage = readers.get_review_coverage(db, chosen.dataset_id, chosen.rubric_version_id,
                                           readers.run_stamp(db, chosen.run_ids))
    mine = next((p for p in coverage.reviewers if actor and p.reviewer_key == actor.key), None)
    done, total = (mine.responses_done if mine else 0), coverage.response_count
    left = total - done
    with st.container(border=True, key="review_queue_done_box"):
        if counts:
            st.success(f"End of the queue: you have answered every criterion of {done} of "
                       f"{total} response{'s' if total != 1 else ''} in this set."
                       + (f" {left} still {'needs' if left == 1 else 'need'} your verdicts: "
                          "“Refresh queue” puts them first." if left > 0 else ""),
                       icon=":material/task_alt:")
        st.markdown("**What next**")
        row = st.container(horizontal=True)
        if actor is not None and actor.can(Role.ADJUDICATOR):
            disputed = readers.get_adjudication_page(
                db, chosen.dataset_id, chosen.rubric_version_id,
                readers.run_stamp(db, chosen.run_ids), 0).disputed
            row.button(f"Adjudication queue ({disputed} disputed)", key="review_done_adjudicate",
                       icon=":material/gavel:", on_click=handle_adjudicate_mode)
        sets = readers.get_result_sets(db)
        keys = [(r.dataset_id, r.rubric_version_id) for r in sets]
        here = (chosen.dataset_id, chosen.rubric_version_id)
        if here in keys and len(keys) > 1:
            following = sets[(keys.index(here) + 1) % len(keys)]
            row.button(f"Next review set: {safe_text.text(following.label)}",
                       key="review_done_next_set", icon=":material/skip_next:",
                       on_click=handle_open_set,
                       args=((following.dataset_id, following.rubric_version_id),))
        row.page_link("app_pages/agreement.py", label="Agreement: judges against people",
                      icon=":material/handshake:")
