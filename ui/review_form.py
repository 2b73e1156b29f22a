"""Review: one response and the reviewer's own verdicts — by mouse or keyboard.

Keys (shown on the buttons): M / U / N give MET / UNMET / CANNOT ASSESS to the criterion in
focus and move the focus on; J / K move the focus; Ctrl+Enter saves and opens the next
response at its top; Alt+← / Alt+→ move through the queue. Letter keys are ignored while the
cursor is in a note, Ctrl+Enter is not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st
from streamlit.errors import StreamlitInvalidLayoutContextError

from storage.errors import InvalidInputError
from storage.services import reviews
from storage.services.review_queue import ResponseDetail
from storage.services.reviewers import Actor, PermissionDeniedError
from ui import response_view, review_version_view, runtime, safe_text
from ui import results_panels as panel_columns
from ui import results_readers as readers
from ui.verdict_view import md_escape, short_run_label
from ui.wording import plural

CHOICES = ["MET", "UNMET", "CANNOT_ASSESS"]
CHOICE_LABELS = {"MET": "MET", "UNMET": "UNMET", "CANNOT_ASSESS": "CANNOT ASSESS"}
SHORTCUTS = {"MET": "M", "UNMET": "U", "CANNOT_ASSESS": "N"}


def verdict_key(response_id: int, criterion_id: int, nonce: int) -> str:
    return f"review_v_{response_id}_{criterion_id}_{nonce}"


def note_key(response_id: int, criterion_id: int, nonce: int) -> str:
    return f"review_n_{response_id}_{criterion_id}_{nonce}"


# -- callbacks: session_state only -----------------------------------------------------------
def handle_key_verdict(response_id: int, criterion_ids: tuple[int, ...], value: str) -> None:
    s = st.session_state
    if not criterion_ids:
        return
    focus = min(max(0, s.review_focus), len(criterion_ids) - 1)
    s[verdict_key(response_id, criterion_ids[focus], s.review_form_nonce)] = value
    s.review_focus = min(focus + 1, len(criterion_ids) - 1)


def handle_focus(step: int, size: int) -> None:
    s = st.session_state
    s.review_focus = min(max(0, s.review_focus + step), max(0, size - 1))


def handle_accept_judges(response_id: int, agreed: tuple[tuple[int, str], ...]) -> None:
    """Fill the criteria the reviewer left open with the judges' shared verdict."""
    s = st.session_state
    for criterion_id, value in agreed:
        key = verdict_key(response_id, criterion_id, s.review_form_nonce)
        if not s.get(key):
            s[key] = value
    filled = plural(len(agreed), "criterion", "criteria")
    # shown next to the button (ui.review_form.render_keyboard), not under Save
    s.review_accept_flash = ("info", f"Filled {filled} where the judges agree; check "
                             "them and save." if agreed else
                             "The judges agree on no criterion you left open.")


def handle_save_request(advance: bool) -> None:
    st.session_state.review_pending = "next" if advance else "save"


# -- the write, run in the fragment body (never in a callback) --------------------------------
@dataclass(frozen=True)
class Due:
    """A save the form asked for: what to write, and where to go back to if it fails."""

    response_id: int
    wanted: dict[int, tuple[str, str]]  # criterion id -> (verdict, note)
    expected: dict[int, int | None]
    labels: dict[int, str]
    opened: float
    advance: bool
    position: int  # the queue position of the response saved
    nonce: int  # the form nonce the values were read under
    version_id: int | None = None  # the rubric version the form showed: saved on it


def process_pending(actor: Actor | None, detail: ResponseDetail, queue_size: int) -> None:
    """Act on the save the form asked for on ``detail``: "save" writes now; "save and next"
    moves on at once and leaves the write (``review_due``) to :func:`write_due`, called once
    the next response is drawn — the reviewer sees it without waiting for the database."""
    s = st.session_state
    pending, s.review_pending = s.review_pending, None
    if pending is None:
        return
    shown = s.review_shown
    if shown is None or shown[0] != detail.response.id:
        return
    _rid, expected, nonce, opened = shown
    if actor is None:
        s.review_flash = ("error", "Enter your name in the sidebar (“Your name”) before "
                                   "saving: every verdict records who made it.")
        return
    wanted: dict[int, tuple[str, str]] = {}
    for criterion in detail.version.criteria:
        choice = s.get(verdict_key(detail.response.id, criterion.id, nonce))
        note = str(s.get(note_key(detail.response.id, criterion.id, nonce)) or "").strip()
        if not choice:
            continue
        mine = detail.mine.get(criterion.id)
        if mine is not None and mine.verdict.value == choice and not note:
            continue
        wanted[criterion.id] = (choice, note)
    if not wanted:
        s.review_flash = ("info", "Nothing changed: give a verdict to a criterion to save it.")
        if pending == "next" and all(c.id in detail.mine for c in detail.version.criteria):
            _advance(queue_size)
        return
    due = Due(response_id=detail.response.id, wanted=wanted,
              expected={cid: expected.get(cid) for cid in wanted},
              labels={c.id: c.label for c in detail.version.criteria}, opened=opened,
              advance=pending == "next", position=s.review_position, nonce=nonce,
              version_id=detail.version.id)
    if not due.advance:
        write_due(actor, due)
        return
    s.review_due = due
    s.review_form_nonce += 1  # the next response's form starts clean
    _advance(queue_size)


def write_due(actor: Actor | None, due: Due | None = None) -> None:
    """Write a pending save. After "save and next" the next response is already on screen:
    if the save is refused, go back to the response saved, with the message under its
    buttons and the reviewer's choices still in the form."""
    s = st.session_state
    if due is None:
        due, s.review_due = s.review_due, None  # taken before writing: written once
        if due is None:
            return
    if actor is None:
        return
    try:
        result = reviews.save_review(
            runtime.get_sessions(), actor=actor, response_id=due.response_id,
            verdicts=due.wanted, expected=due.expected,
            review_seconds=round(time.monotonic() - due.opened, 1),
            shown_version_id=due.version_id)
    except (InvalidInputError, PermissionDeniedError) as exc:
        s.review_flash = ("error", md_escape(str(exc)))
        if due.advance:
            _go_back(due, keep=due.wanted)
        return
    finally:
        readers.clear_after_review()
    if not due.advance:
        s.review_form_nonce += 1
    saved = [md_escape(due.labels[h.criterion_id]) for h in result.saved]
    review_version_view.remember(result.newer)
    if result.stale:
        s.review_flash = ("error", "Not saved because you changed them in another window "
                          "since you opened this response — the form now shows them:\n\n"
                          + "\n".join(f"- {md_escape(due.labels[cid])}: {md_escape(str(exc))}"
                                      for cid, exc in result.stale)
                          + (f"\n\nSaved: {', '.join(saved)}." if saved else ""))
        if due.advance:
            _go_back(due, keep={})  # the form shows what is saved now
        return
    message = (f"Saved {len(saved)} verdict{'s' if len(saved) != 1 else ''} "
               f"({', '.join(saved)}); effective scores are updated.")
    if due.advance:
        st.toast(message, icon=":material/check:")
    else:
        s.review_flash = ("success", message)


def _go_back(due: Due, keep: dict[int, tuple[str, str]]) -> None:
    s = st.session_state
    s.review_position, s.review_focus = due.position, 0
    s.review_form_nonce += 1
    for cid, (choice, note) in keep.items():
        s[verdict_key(due.response_id, cid, s.review_form_nonce)] = choice
        s[note_key(due.response_id, cid, s.review_form_nonce)] = note
    try:
        st.rerun(scope="fragment")
    except StreamlitInvalidLayoutContextError:  # the fragment ran inside a whole-page run
        st.rerun()


def _advance(queue_size: int) -> None:
    s = st.session_state
    s.review_position = min(s.review_position + 1, max(0, queue_size - 1))
    s.review_focus = 0


# -- drawing ---------------------------------------------------------------------------------
def render_flash(key: str = "review_flash") -> None:
    """The message of the last action, right under the buttons that caused it (the save
    buttons' in ``review_flash``, the keyboard row's in ``review_accept_flash``)."""
    flash = st.session_state[key]
    if flash:
        kind, message = flash
        getattr(st, kind)(message)
        st.session_state[key] = None


def scroll_to_top(response_id: int, nonce: int) -> None:
    """A newly opened response starts at its top, wherever the reviewer had scrolled.

    The script runs in the page's global scope, once per response: its names live in a
    function of their own (a top-level ``const`` made every script after the first fail
    with "already declared", so only the first response opened at its top)."""
    st.html(
        f"<script>/* {response_id}:{nonce} */(() => {{"
        "const main = window.parent.document.querySelector('[data-testid=\"stMain\"]')"
        " || document.querySelector('[data-testid=\"stMain\"]');"
        "if (main) main.scrollTo({top: 0}); window.scrollTo({top: 0});})();</script>",
        unsafe_allow_javascript=True)


def judges_agree(detail: ResponseDetail) -> tuple[tuple[int, str], ...]:
    """Criteria where every run that judged them gave the same verdict, without errors."""
    agreed = []
    for index, criterion in enumerate(detail.version.criteria):
        seen = set()
        for grade in detail.grades:
            row = grade.criteria[index] if grade is not None and grade.criteria else None
            if row is None or row.judge_verdict is None or row.judge_error:
                seen.add(None)
            else:
                seen.add(row.judge_verdict.value)
        if len(seen) == 1 and None not in seen:
            agreed.append((criterion.id, seen.pop()))
    return tuple(agreed)


def render_keyboard(detail: ResponseDetail) -> None:
    ids = tuple(c.id for c in detail.version.criteria)
    rid = detail.response.id
    blind = st.session_state.review_blind
    with st.container(horizontal=True, vertical_alignment="center"):
        for value in CHOICES:
            st.button(CHOICE_LABELS[value], key=f"review_key_{value}", shortcut=SHORTCUTS[value],
                      on_click=handle_key_verdict, args=(rid, ids, value),
                      help=f"{CHOICE_LABELS[value]} for the criterion in focus, then the next")
        st.button("Next criterion", key="review_focus_next", shortcut="J",
                  icon=":material/arrow_downward:", on_click=handle_focus, args=(1, len(ids)))
        st.button("Previous criterion", key="review_focus_prev", shortcut="K",
                  icon=":material/arrow_upward:", on_click=handle_focus, args=(-1, len(ids)))
        st.button("Accept the judges where they agree", key="review_accept",
                  shortcut="Shift+A", on_click=handle_accept_judges,
                  args=(rid, () if blind else judges_agree(detail)), disabled=blind,
                  help="Off in blind mode (it would show the judges)." if blind else
                  "Fills the criteria you left open with the verdict every judge gave.")
    render_flash("review_accept_flash")


def render_criterion(detail: ResponseDetail, index: int, hide_judges: bool,
                     focused: bool) -> None:
    s = st.session_state
    criterion = detail.version.criteria[index]
    rid, nonce = detail.response.id, s.review_form_nonce
    decision = detail.humans.get(criterion.id)
    mine = detail.mine.get(criterion.id)
    disagree = criterion.id in detail.disagree_criteria and not hide_judges
    with st.container(border=True):
        heading = response_view.criterion_heading(criterion, disagree)
        if focused:
            heading += " · :blue-badge[in focus: M / U / N]"
        st.markdown(heading)
        st.text(safe_text.text(criterion.requirement))
        judges, people = st.columns([3, 2])
        with judges:
            if hide_judges:
                st.caption("Judges hidden until you answer (blind mode).")
            else:
                columns = st.columns(max(1, len(detail.runs)))
                for column, run, grade in zip(columns, detail.runs, detail.grades,
                                              strict=False):
                    with column:
                        row = grade.criteria[index] if grade is not None else None
                        response_view.render_judge_cell(
                            row, holistic=run.grader == "rubric_as_judge",
                            label=short_run_label(run))
                panel_columns.render_criterion_verdicts(
                    runtime.database_key(), detail.response.dataset_id, detail.version.id,
                    rid, criterion.id, shown_runs={run.id for run in detail.runs})
        with people:
            key = verdict_key(rid, criterion.id, nonce)
            s.setdefault(key, mine.verdict.value if mine else None)
            st.radio("Your verdict", CHOICES, horizontal=True, key=key,
                     format_func=CHOICE_LABELS.get)
            st.text_input("Note (optional)", key=note_key(rid, criterion.id, nonce),
                          placeholder="why")
            if mine is not None:
                st.caption(f"Yours: {mine.verdict.value} · "
                           f"{mine.created_at:%Y-%m-%d %H:%M} UTC")
                if mine.note:
                    st.text(safe_text.text(mine.note))
            if criterion.id in detail.hidden:
                st.caption("Other reviewers' verdicts are hidden until you save yours.")
            elif decision is not None:
                others = [h for h in decision.reviews
                          if mine is None or h.reviewer_key != mine.reviewer_key]
                if others or decision.adjudication is not None:
                    response_view.render_human_cell(decision)
                else:
                    st.markdown(response_view.decision_caption(decision))


def render_item(actor: Actor | None, detail: ResponseDetail) -> None:
    s = st.session_state
    criteria = detail.version.criteria
    blind = s.review_blind
    answered = all(c.id in detail.mine for c in criteria)
    if detail.others_hidden or (blind and not answered):
        st.caption("Scores appear once you have answered every criterion (the judges in "
                   "blind mode, and other reviewers' verdicts, stay hidden until then).")
    else:  # panels' scores with the judges': hidden exactly where theirs are
        response_view.render_scores(detail, panel_columns.response_scores(
            runtime.database_key(), detail.response.dataset_id, detail.version.id,
            detail.response.id))
    response_view.render_response_text(detail)
    shown = s.review_shown
    if shown is None or shown[0] != detail.response.id or shown[2] != s.review_form_nonce:
        opened = shown[3] if shown and shown[0] == detail.response.id else time.monotonic()
        expected = {c.id: (detail.mine[c.id].id if c.id in detail.mine else None)
                    for c in criteria}
        s.review_shown = (detail.response.id, expected, s.review_form_nonce, opened)
    st.markdown("**Your verdicts**")
    st.caption("Only the criteria you give a verdict are saved; the others keep the "
               "judges' verdicts.")
    render_keyboard(detail)
    focus = min(max(0, s.review_focus), max(0, len(criteria) - 1))
    for index, criterion in enumerate(criteria):
        hide = blind and criterion.id not in detail.mine
        render_criterion(detail, index, hide, focused=index == focus)
    with st.container(horizontal=True):
        st.button("Save", type="primary", key="review_save", on_click=handle_save_request,
                  args=(False,))
        st.button("Save and next", key="review_save_next", shortcut="Ctrl+Enter",
                  on_click=handle_save_request, args=(True,),
                  help="Saves your verdicts and opens the next response at its top")
    if actor is None:
        st.caption("Enter your name in the sidebar to save verdicts.")
    render_flash()
    review_version_view.render_notice()

