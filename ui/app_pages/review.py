"""Review: correct the judges' verdicts, disagreements and failures first."""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.errors import InvalidInputError, StaleVerdictError
from storage.services import reviews
from storage.services.results import ResultSet
from storage.services.review_queue import QueueItem, ResponseDetail
from ui import response_view, runtime, safe_text
from ui import results_readers as readers
from ui.verdict_view import md_escape, short_run_label

CHOICES = ["", "MET", "UNMET", "CANNOT_ASSESS"]
CHOICE_LABELS = {"": "—", "MET": "MET", "UNMET": "UNMET", "CANNOT_ASSESS": "CANNOT ASSESS"}


def handle_move(step: int, size: int) -> None:
    s = st.session_state
    s.review_position = min(max(0, s.review_position + step), max(0, size - 1))


def handle_refresh_queue() -> None:
    st.session_state.review_queue_nonce += 1
    st.session_state.review_position = 0


def handle_set_change() -> None:
    st.session_state.review_position = 0


def pick_set(db: str) -> ResultSet | None:
    sets = readers.get_result_sets(db)
    if not sets:
        st.info("Nothing to review yet — go to Grade and run a judge over a dataset first.")
        st.page_link("app_pages/grade.py", label="Go to Grade", icon=":material/play_circle:")
        return None
    by_key = {(s.dataset_id, s.rubric_version_id): s for s in sets}
    if st.session_state.review_set not in by_key:
        st.session_state.review_set = next(iter(by_key))
    key = st.selectbox("Review", list(by_key),
                       format_func=lambda k: safe_text.text(by_key[k].label), key="review_set",
                       on_change=handle_set_change)
    return by_key[key]


def _position_of_requested(queue: list[QueueItem]) -> None:
    """Results' "review this response" asks for one response: go to it."""
    s = st.session_state
    wanted = s.review_response_id
    if wanted is None:
        return
    s.review_response_id = None
    for index, item in enumerate(queue):
        if item.response_id == wanted:
            s.review_position = index
            return
    st.warning("That response is not in this queue (it may be fully reviewed: switch off "
               "“Only responses still to review”).")


def item_caption(item: QueueItem, detail: ResponseDetail, blind: bool) -> str:
    flags = [] if blind else [  # in blind mode even "they disagree" is a hint
        label for label, on in (("judges disagree", item.disagree),
                                ("judge failed or fell back", item.failed)) if on]
    reviewed = (f"{len(detail.humans)}/{len(detail.version.criteria)} criteria reviewed")
    return " · ".join([item.external_id or f"#{item.response_id}", *flags, reviewed])


def current_item(queue: list[QueueItem]) -> QueueItem:
    s = st.session_state
    s.review_position = min(max(0, s.review_position), len(queue) - 1)
    return queue[s.review_position]


def render_nav(queue: list[QueueItem], item: QueueItem, detail: ResponseDetail) -> None:
    s = st.session_state
    prev, middle, history, nxt = st.columns([2, 5, 2, 2], vertical_alignment="center")
    prev.button("Previous", icon=":material/chevron_left:", key="review_prev",
                on_click=handle_move, args=(-1, len(queue)),
                disabled=s.review_position == 0, width="stretch", shortcut="Alt+Left")
    middle.markdown(f"**{s.review_position + 1} of {len(queue)}** · "
                    f"{md_escape(item_caption(item, detail, s.review_blind))}")
    with history:
        response_view.render_history(detail)
    nxt.button("Next", icon=":material/chevron_right:", icon_position="right",
               key="review_next", on_click=handle_move, args=(1, len(queue)),
               disabled=s.review_position >= len(queue) - 1, width="stretch",
               shortcut="Alt+Right")




def handle_save(detail: ResponseDetail, expected: dict[int, int | None],
                choices: dict[int, tuple[str, str]], advance: bool, queue_size: int) -> None:
    """Append one verdict per changed criterion; stale criteria are reported, not written."""
    s = st.session_state
    labels = {c.id: c.label for c in detail.version.criteria}
    if not s.reviewer_name.strip():
        s.review_flash = ("error", "Enter your name in the sidebar (“Your name”) before "
                                   "saving: every verdict records who made it.")
        return
    saved: list[str] = []
    stale: list[str] = []
    sessions = runtime.get_sessions()
    try:
        for criterion_id, (choice, note) in choices.items():
            current = detail.humans.get(criterion_id)
            if not choice:
                continue
            if current is not None and current.verdict.value == choice and not note.strip():
                continue
            try:
                reviews.set_human_verdict(
                    sessions, response_id=detail.response.id, criterion_id=criterion_id,
                    verdict=choice, reviewer=s.reviewer_name, note=note.strip(),
                    expected_current_id=expected.get(criterion_id))
                saved.append(md_escape(labels[criterion_id]))
            except StaleVerdictError as exc:
                stale.append(f"{md_escape(labels[criterion_id])}: {md_escape(str(exc))}")
    except InvalidInputError as exc:
        s.review_flash = ("error", md_escape(str(exc)))
        return
    finally:
        readers.clear_after_verdict()
        s.review_form_nonce += 1
    if stale:
        s.review_flash = ("error", "Not saved because someone else changed them since you "
                          "opened this response — the form now shows their verdicts:\n\n"
                          + "\n".join(f"- {line}" for line in stale)
                          + (f"\n\nSaved: {', '.join(saved)}." if saved else ""))
        return
    if not saved:
        s.review_flash = ("info", "Nothing changed: pick a verdict for a criterion to save it.")
        return
    s.review_flash = ("success", f"Saved {len(saved)} verdict{'s' if len(saved) != 1 else ''} "
                      f"({', '.join(saved)}); effective scores are updated.")
    if advance:
        handle_move(1, queue_size)


def render_flash() -> None:
    flash = st.session_state.review_flash
    if flash:
        kind, message = flash
        getattr(st, kind)(message)
        st.session_state.review_flash = None


def render_item(detail: ResponseDetail, queue_size: int) -> None:
    s = st.session_state
    blind = s.review_blind
    humans = detail.humans
    fully = all(c.id in humans for c in detail.version.criteria)
    if blind and not fully:
        st.caption("Blind mode: the judges' verdicts and scores appear once you have "
                   "answered.")
    else:
        response_view.render_scores(detail)
    response_view.render_response_text(detail)

    previous = s.review_shown
    shown = {c.id: (humans[c.id].id if c.id in humans else None)
             for c in detail.version.criteria}
    expected = previous[1] if previous and previous[0] == detail.response.id else shown
    nonce = s.review_form_nonce
    choices: dict[int, tuple[str, str]] = {}
    with st.form(f"review_form_{detail.response.id}_{nonce}", border=False):
        st.markdown("**Your verdicts**")
        st.caption("Leave “—” where you have not decided; only the criteria you set are "
                   "saved." if blind else
                   "Leave “—” where you agree with the judges or have not decided; only "
                   "the criteria you set are saved.")
        for index, criterion in enumerate(detail.version.criteria):
            human = humans.get(criterion.id)
            hide = blind and human is None
            disagree = criterion.id in detail.disagree_criteria and not hide
            with st.container(border=True):
                st.markdown(response_view.criterion_heading(criterion, disagree))
                st.text(safe_text.text(criterion.requirement))
                judges, mine = st.columns([3, 2])
                with judges:
                    if hide:
                        st.caption("Judges hidden until you answer (blind mode).")
                    else:
                        columns = st.columns(max(1, len(detail.runs)))
                        for column, run, grade in zip(columns, detail.runs, detail.grades,
                                                      strict=False):
                            with column:
                                st.caption(md_escape(short_run_label(run)))
                                row = grade.criteria[index] if grade is not None else None
                                response_view.render_judge_cell(
                                    row, holistic=run.grader == "rubric_as_judge")
                with mine:
                    current = human.verdict.value if human else ""
                    choice = st.radio(
                        "Verdict", CHOICES, index=CHOICES.index(current), horizontal=True,
                        format_func=CHOICE_LABELS.get,
                        key=f"review_v_{detail.response.id}_{criterion.id}_{nonce}")
                    note = st.text_input(
                        "Note (optional)", key=f"review_n_{detail.response.id}_"
                        f"{criterion.id}_{nonce}", placeholder="why")
                    if human is not None:
                        st.caption(f"Current: {human.verdict.value} by "
                                   f"{md_escape(human.reviewer)}")
                choices[criterion.id] = (choice or "", note)
        save, save_next, _ = st.columns([1, 1, 3])
        submitted = save.form_submit_button("Save", type="primary", width="stretch")
        submitted_next = save_next.form_submit_button("Save and next", width="stretch")
    s.review_shown = (detail.response.id, shown)
    if submitted or submitted_next:
        handle_save(detail, expected, choices, submitted_next, queue_size)
        st.rerun()


st.title("Review")
st.caption("Correct the judges by hand. Your verdict replaces the judge's in every run of "
           "this response under this rubric version; the score is recomputed at once.")
db = runtime.database_key()
runtime.ensure_worker()  # after a restart, interrupted runs resume when results are opened
try:
    chosen = pick_set(db)
    if chosen is not None:
        c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="center")
        c1.toggle("Only responses still to review", key="review_unreviewed_only",
                  on_change=handle_refresh_queue)
        c2.toggle("Blind mode", key="review_blind",
                  help="Hide the judges' verdicts and scores until you have answered.")
        c3.button("Refresh queue", on_click=handle_refresh_queue, key="review_refresh",
                  help="Re-sort the queue by what is still to review.")
        queue = readers.get_review_queue(
            db, chosen.dataset_id, chosen.rubric_version_id, chosen.run_ids,
            st.session_state.review_unreviewed_only, st.session_state.review_queue_nonce)
        _position_of_requested(queue)
        render_flash()
        if not queue:
            st.success("Everything in this set is reviewed. Switch off “Only responses "
                       "still to review” to revisit verdicts.")
        else:
            item = current_item(queue)
            detail = readers.get_response_detail(
                db, item.response_id, chosen.rubric_version_id, chosen.run_ids,
                readers.run_stamp(db, chosen.run_ids))
            render_nav(queue, item, detail)
            render_item(detail, len(queue))
except RubricWorkbenchError as exc:
    st.error(md_escape(str(exc)))
