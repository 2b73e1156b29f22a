"""Review: one response and the reviewer's own verdicts — by mouse or keyboard.

The verdicts are a browser component (ui/components/verdict_form.py): keys change the form in
the browser at once and one save sends it whole, so no key waits for a Streamlit rerun. Keys
(shown on the buttons): M / U / N give MET / UNMET / CANNOT ASSESS to the criterion in focus
and move the focus on (1-9 its options on a multi-choice criterion, saved as the label);
J / K move the focus; Shift+A accepts the judges where they agree; Ctrl+Enter saves and
opens the next response at its top; Alt+← / Alt+→ move through the queue.
Letter keys are ignored while the cursor is in a note, Ctrl+Enter is not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st
from streamlit.errors import StreamlitInvalidLayoutContextError

from storage.errors import InvalidInputError, StorageError
from storage.services import reviews
from storage.services.review_queue import ResponseDetail
from storage.services.reviewers import (
    Actor,
    IdentityChangedError,
    PermissionDeniedError,
    require_shown,
)
from ui import response_view, review_layout, review_version_view, runtime, safe_text
from ui import results_panels as panel_columns
from ui import results_readers as readers
from ui.auth import unnamed_key
from ui.components import verdict_form
from ui.verdict_view import choice_text, md_escape

CHOICES = [answer.value for answer in verdict_form.VERDICT_ANSWERS]
CHOICE_LABELS = {answer.value: answer.label for answer in verdict_form.VERDICT_ANSWERS}
KEYS_PART, SAVE_PART = "review_vf_keys", "review_vf_save"


def criterion_part(index: int) -> str:
    return f"review_vf_c_{index}"


# -- callbacks: session_state only -----------------------------------------------------------
def handle_submit(part_key: str) -> None:
    """The form's one save, as the browser sent it; the fragment body acts on it."""
    raw = verdict_form.submitted(part_key)
    if raw is None:
        return
    s = st.session_state
    s.review_submitted = raw
    # The name the submitted form was drawn for (and showed beside its buttons), read before
    # this run's sidebar follows a name changed elsewhere: the save carries it.
    drawn = s.review_form_as
    s.review_pending_as = (drawn[1] if drawn and isinstance(raw, dict)
                           and raw.get("form") == drawn[0] else shown_identity())


def form_criteria(detail: ResponseDetail, blind: bool) -> list[verdict_form.FormCriterion]:
    """The form as it starts: kept choices after a refused "save and next", else the
    reviewer's saved verdicts."""
    s = st.session_state
    restore = s.review_restore
    kept = restore[2] if restore and restore[:2] == (detail.response.id,
                                                     s.review_form_nonce) else {}
    agreed = {} if blind else dict(judges_agree(detail))
    criteria = []
    for criterion in detail.version.criteria:
        mine = detail.mine.get(criterion.id)
        answers = form_answers(criterion)
        initial, note = kept.get(criterion.id, (choice_text(mine.choice) if mine else None, ""))
        given = agreed.get(criterion.id)
        values = {a.value for a in answers}
        criteria.append(verdict_form.FormCriterion(
            id=criterion.id, label=safe_text.text(criterion.label), answers=answers,
            initial=initial if initial in values else None, note=note,
            agreed=given if given in values else None))
    return criteria


def form_answers(criterion) -> tuple[verdict_form.Answer, ...]:
    """M / U / N on a binary criterion; the options by number keys on a multi-choice one."""
    if criterion.options is None:
        return verdict_form.VERDICT_ANSWERS
    return verdict_form.option_answers(criterion.options)


def shown_identity() -> str:
    """The identity this tab shows: the sidebar's, drawn by the last whole-page run (the
    Review fragment's reruns do not redraw it, and another tab may have renamed since)."""
    return st.session_state.reviewer_name or unnamed_key()


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
    shown_as: str | None = None  # the identity the page showed: the save is refused if stale
    version_id: int | None = None  # the rubric version the form showed: saved on it


def take_submitted() -> object:
    """The form's save, taken once (the browser sends it again until told it was taken, and
    ``done`` tells it so, whatever comes of the save)."""
    s = st.session_state
    raw, s.review_submitted = s.review_submitted, None
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        if raw["id"] in s.review_form_taken:
            # The browser sent it again before it heard it was taken (a busy machine): the
            # rerun this causes says again what came of it, rather than wiping the message.
            answered = s.review_answered
            if answered is not None and answered[0] == raw["id"] and not s.review_flash:
                s.review_flash = answered[1]
            return None
        s.review_form_taken = (*s.review_form_taken[-19:], raw["id"])
        s.review_form_done = raw["id"]
    return raw


def process_submission(actor: Actor | None, detail: ResponseDetail, queue_size: int) -> None:
    """Act on the form's save (``review_submitted``) on ``detail``: "save" writes now; "save
    and next" moves on at once and leaves the write (``review_due``) to :func:`write_due`,
    called once the next response is drawn — the reviewer sees it without waiting for the
    database."""
    s = st.session_state
    raw = take_submitted()
    shown_as, s.review_pending_as = s.review_pending_as or shown_identity(), None
    if raw is None:
        return
    shown = s.review_shown
    if shown is None or shown[0] != detail.response.id:
        return
    s.review_queue_done = None
    _rid, expected, nonce, opened = shown
    try:
        submission = verdict_form.parse_submission(
            raw, verdict_form.form_key(detail.response.id, nonce),
            form_criteria(detail, blind=True))
    except verdict_form.InvalidSubmissionError as exc:
        s.review_flash = ("error", md_escape(str(exc)))
        return
    # "Save and next" on the last response saves and ends the queue (nothing to move to).
    ends_queue = submission.advance and s.review_position >= queue_size - 1
    if actor is None:
        s.review_flash = ("error", "Enter your name in the sidebar (“Your name”) before "
                                   "saving: every verdict records who made it.")
        return
    wanted: dict[int, tuple[str, str]] = {}
    for cid, (choice, note) in submission.answers.items():
        mine = detail.mine.get(cid)
        if mine is not None and choice_text(mine.choice) == choice and not note:
            continue
        wanted[cid] = (choice, note)
    if not wanted:
        s.review_flash = ("info", "Nothing changed: give a verdict to a criterion to save it.")
        if submission.advance and all(c.id in detail.mine for c in detail.version.criteria):
            if ends_queue:
                s.review_flash = None
                _end_queue(detail)
            _advance(queue_size)
        return
    due = Due(response_id=detail.response.id, wanted=wanted,
              expected={cid: expected.get(cid) for cid in wanted},
              labels={c.id: c.label for c in detail.version.criteria}, opened=opened,
              advance=submission.advance and not ends_queue, position=s.review_position,
              nonce=nonce, shown_as=shown_as, version_id=detail.version.id)
    if not due.advance:
        if write_due(actor, due) and ends_queue:
            _end_queue(detail)
        return
    s.review_due = due
    s.review_form_nonce += 1  # the next response's form starts clean
    _advance(queue_size)


def _end_queue(detail: ResponseDetail) -> None:
    """Say the queue is done (ui.review_queue_view.render_queue_done), with counts read after
    the save: the fragment runs again."""
    s = st.session_state
    s.review_queue_done = (detail.response.dataset_id, detail.version.id)
    try:
        st.rerun(scope="fragment")
    except StreamlitInvalidLayoutContextError:  # the fragment ran inside a whole-page run
        st.rerun()


def write_due(actor: Actor | None, due: Due | None = None) -> bool:
    """Write a pending save; whether every verdict was saved. After "save and next" the
    next response is already on screen: if the save is refused, go back to the response
    saved, with the message under its buttons and the reviewer's choices still in the form."""
    s = st.session_state
    if due is None:
        due, s.review_due = s.review_due, None  # taken before writing: written once
        if due is None:
            return False
    if actor is None:
        return False
    try:
        result = reviews.save_review(
            runtime.get_sessions(), actor=actor, response_id=due.response_id,
            verdicts=due.wanted, expected=due.expected,
            review_seconds=round(time.monotonic() - due.opened, 1), shown_as=due.shown_as,
            shown_version_id=due.version_id)
    except IdentityChangedError as exc:
        # Renamed in another tab: never recorded under the other name. The whole page runs
        # again so the sidebar shows who acts now (with its notice) and the form is theirs.
        s.review_flash = ("error", md_escape(str(exc)))
        s.review_position = due.position
        st.rerun()
    except (InvalidInputError, PermissionDeniedError, StorageError) as exc:
        # StorageError: the database could not take it (a PostgreSQL restart that outlasted
        # the retries, a full disk, too busy): one sentence, the choices kept in the form.
        s.review_flash = ("error", md_escape(str(exc)))
        if due.advance:
            _go_back(due, keep=due.wanted)
        return False
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
        return False
    message = (f"Saved {len(saved)} verdict{'s' if len(saved) != 1 else ''} "
               f"({', '.join(saved)}); effective scores are updated.")
    if due.advance:
        st.toast(message, icon=":material/check:")
    else:
        s.review_flash = ("success", message)
    return True


def refuse_pending(actor: Actor | None) -> None:
    """Another person acts now (this run's sidebar followed a rename made elsewhere): a save
    still asked for under the name shown before is refused, and the page says why."""
    s = st.session_state
    due = s.review_due
    submitted = s.review_submitted is not None
    shown_as = s.review_pending_as if submitted else (
        due.shown_as if due is not None else None)
    if submitted:
        take_submitted()  # taken (never saved): the browser's form hears so, once
    if actor is None or shown_as is None:
        return
    try:
        require_shown(actor, shown_as)
    except IdentityChangedError as exc:
        s.review_flash = ("error", md_escape(str(exc)))
        if due is not None:
            s.review_position = due.position


def _go_back(due: Due, keep: dict[int, tuple[str, str]]) -> None:
    s = st.session_state
    s.review_position = due.position
    s.review_form_nonce += 1
    s.review_restore = (due.response_id, s.review_form_nonce, dict(keep))
    try:
        st.rerun(scope="fragment")
    except StreamlitInvalidLayoutContextError:  # the fragment ran inside a whole-page run
        st.rerun()


def _advance(queue_size: int) -> None:
    s = st.session_state
    s.review_position = min(s.review_position + 1, max(0, queue_size - 1))


# -- drawing ---------------------------------------------------------------------------------
def render_flash(key: str = "review_flash") -> None:
    """The message of the last save, right under the buttons that caused it."""
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
    """Criteria where every run that judged them gave the same verdict (or option label),
    without errors."""
    agreed = []
    for index, criterion in enumerate(detail.version.criteria):
        seen = set()
        for grade in detail.grades:
            row = grade.criteria[index] if grade is not None and grade.criteria else None
            if row is None or row.judge_choice is None or row.judge_error:
                seen.add(None)
            else:
                seen.add(choice_text(row.judge_choice))
        if len(seen) == 1 and None not in seen:
            agreed.append((criterion.id, seen.pop()))
    return tuple(agreed)


def render_keyboard(form: dict) -> None:
    """What is in focus and the key buttons (M / U / N, J / K, Shift+A), in the browser."""
    verdict_form.mount("keys", form, key=KEYS_PART, on_submit=handle_submit, args=(KEYS_PART,))


def render_item(actor: Actor | None, detail: ResponseDetail) -> None:
    """The response beside its criteria (ui/review_layout.py): the reviewer's controls, each
    criterion's judges as a compact row of the criterion x judge matrix, the scores in one
    line under the response."""
    s = st.session_state
    criteria = detail.version.criteria
    blind = s.review_blind
    answered = all(c.id in detail.mine for c in criteria)
    shown = s.review_shown
    if shown is None or shown[0] != detail.response.id or shown[2] != s.review_form_nonce:
        opened = shown[3] if shown and shown[0] == detail.response.id else time.monotonic()
        expected = {c.id: (detail.mine[c.id].id if c.id in detail.mine else None)
                    for c in criteria}
        s.review_shown = (detail.response.id, expected, s.review_form_nonce, opened)
    key = verdict_form.form_key(detail.response.id, s.review_form_nonce)
    # The form saves under the name it was drawn for, and shows it beside its buttons.
    s.review_form_as = (key, shown_identity())
    form = verdict_form.form_data(key, form_criteria(detail, blind), done=s.review_form_done,
                                  blind=blind, saving_as=s.review_form_as[1])
    response_column, criteria_column = review_layout.body()
    with response_column:
        response_view.render_response_text(detail)
        if detail.others_hidden or (blind and not answered):
            st.caption("Scores appear once you have answered every criterion (the judges in "
                       "blind mode, and other reviewers' verdicts, stay hidden until then).")
        else:  # panels' scores with the judges': hidden exactly where theirs are
            review_layout.render_scores(detail, panel_columns.response_scores(
                runtime.database_key(), detail.response.dataset_id, detail.version.id,
                detail.response.id))
    with criteria_column:
        render_keyboard(form)
        for index, criterion in enumerate(criteria):
            hide = blind and criterion.id not in detail.mine
            review_layout.render_criterion(detail, index, hide, form, criterion_part(index))
        verdict_form.mount("save", form, key=SAVE_PART, on_submit=handle_submit,
                           args=(SAVE_PART,))
        if actor is None:
            st.caption("Enter your name in the sidebar to save verdicts.")
        if s.review_flash:  # what came of the save taken last: said again if it is resent
            s.review_answered = (s.review_form_done, s.review_flash)
        render_flash()
        review_version_view.render_notice()
