"""Review pairs: people give their own preference on a comparison's pairs, criterion by
criterion, with A / B / T / N keys. Sides are randomised per reviewer (the same on a reload);
source names, the judge's preferences and other people's stay hidden until the reviewer has
answered every criterion of the pair."""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import pair_agreement, pair_results, pair_reviews
from storage.services.pair_agreement import CriterionPreferenceAgreement
from storage.services.pair_reviews import PairForReview
from storage.services.reviewers import Actor
from ui import compare_readers, pair_adjudication, pair_review_view, runtime
from ui.auth import current_actor
from ui.boundary import page_boundary, plain
from ui.components import verdict_form
from ui.pair_review_view import KEYS_PART, SAVE_PART

st.title("Review pairs")
st.caption("Which response better satisfies each criterion? A is the response on the left, "
           "B the one on the right; T is a tie, N cannot assess. Keys: A / B / T / N answer "
           "the criterion in focus, J / K move, Ctrl+Enter saves.")


@st.cache_data(ttl=600, max_entries=20, show_spinner=False)
def get_agreement(db: str, comparison_id: int, actor: Actor,
                  stamp: tuple[int, int]) -> list[CriterionPreferenceAgreement]:
    """Agreement as of ``stamp`` (the people's preferences saved so far) for this viewer."""
    return pair_agreement.preference_agreement(runtime.sessions_for(db), actor=actor,
                                               comparison_id=comparison_id)


# -- callbacks: session_state only --------------------------------------------------------------
def handle_submit(part_key: str) -> None:
    raw = verdict_form.submitted(part_key)
    if raw is not None:
        st.session_state.pairs_submitted = raw


def handle_move(step: int, count: int) -> None:
    s = st.session_state
    s.pairs_index = max(0, min(count - 1, s.pairs_index + step))


# -- the write, in the page body ------------------------------------------------------------------
def take_submitted() -> object:
    s = st.session_state
    raw, s.pairs_submitted = s.pairs_submitted, None
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        if raw["id"] in s.pairs_taken:
            # The browser sent it again before it heard it was taken (a busy machine): the
            # rerun this causes says again what came of it, rather than wiping the message.
            answered = s.pairs_answered
            if answered is not None and answered[0] == raw["id"] and not s.pairs_flash:
                s.pairs_flash = answered[1]
            return None
        s.pairs_taken = (*s.pairs_taken[-19:], raw["id"])
        s.pairs_done = raw["id"]
    return raw


def process_submission(shown: PairForReview) -> bool:
    """Save what the form sent; True when something was written."""
    s = st.session_state
    raw = take_submitted()
    if raw is None:
        return False
    try:
        return _save(shown, raw)
    finally:  # what came of it, said again if the browser sends the same save again
        s.pairs_answered = (raw.get("id") if isinstance(raw, dict) else None, s.pairs_flash)


def _save(shown: PairForReview, raw: object) -> bool:
    s = st.session_state
    key = pair_review_view.form_key(shown.pair_id, s.pairs_nonce)
    drawn = s.pairs_form_as
    # What the form showed as the reviewer's current answers when it was drawn (another tab
    # may have saved since): a save over a newer answer is refused, never silently kept.
    seen = drawn[2] if drawn and drawn[0] == key else shown.mine_ids
    try:
        sent = verdict_form.parse_submission(raw, key, pair_review_view.form_criteria(shown))
        if not sent.answers:
            s.pairs_flash = ("warning", "Nothing to save: answer a criterion first.")
            return False
        refs = {c.position: c.criterion_id for c in shown.criteria}
        pair_reviews.save_pair_review(
            runtime.get_sessions(), actor=current_actor(), pair_id=shown.pair_id,
            preferences={refs[n]: answer for n, answer in sent.answers.items()},
            shown_swapped=shown.swapped,
            expected={refs[n]: seen.get(n) for n in sent.answers},
            shown_as=drawn[1] if drawn and drawn[0] == key else None)
    except (verdict_form.InvalidSubmissionError, RubricWorkbenchError) as exc:
        s.pairs_flash = ("error", plain(f"Not saved: {exc}"))
        s.pairs_nonce += 1
        return False
    s.pairs_flash = ("success", f"Saved {len(sent.answers)} preference"
                                f"{'s' if len(sent.answers) != 1 else ''}.")
    s.pairs_nonce += 1
    return True


def render_pair(shown: PairForReview) -> None:
    s = st.session_state
    key = pair_review_view.form_key(shown.pair_id, s.pairs_nonce)
    actor = current_actor()
    if not (s.pairs_form_as and s.pairs_form_as[0] == key):  # drawn first: what it shows
        s.pairs_form_as = (key, actor.key if actor else "", dict(shown.mine_ids))
    form = verdict_form.form_data(key, pair_review_view.form_criteria(shown),
                                  done=s.pairs_done, blind=True,
                                  saving_as=actor.label if actor else None,
                                  answer_label="Which is better?", accept_judges=False)
    pair_review_view.render_sides(shown)
    verdict_form.mount("keys", form, key=KEYS_PART, on_submit=handle_submit, args=(KEYS_PART,))
    for index in range(len(shown.criteria)):
        pair_review_view.render_criterion(shown, index, form)
    verdict_form.mount("save", form, key=SAVE_PART, on_submit=handle_submit, args=(SAVE_PART,))
    if shown.revealed is not None:
        pair_review_view.render_result(pair_results.pair_result(
            runtime.get_sessions(), actor=actor, pair_id=shown.pair_id))


with page_boundary(compare_readers.clear):
    s = st.session_state
    db = runtime.database_key()
    existing = [c for c in compare_readers.get_comparisons(db) if c.pair_count]
    if not existing:
        st.info("No comparison to review yet: start one on the Compare page.")
        st.stop()
    ids = [c.id for c in existing]
    if s.pairs_comparison not in ids:
        s.pairs_comparison = ids[0]
    # Source names are hidden on this page: a comparison is named by its number and rubric.
    chosen = st.selectbox("Comparison", ids, key="pairs_comparison",
                          format_func=lambda i: f"Comparison #{i}")
    sessions = runtime.get_sessions()
    pair_adjudication.render_queue(current_actor(), next(c for c in existing if c.id == chosen))
    pair_ids = pair_reviews.reviewable_pairs(sessions, chosen)
    if not pair_ids:
        st.info("This comparison has no pair to review (nothing was matched).")
        st.stop()
    s.pairs_index = max(0, min(len(pair_ids) - 1, s.pairs_index))
    back, where, forward = st.columns([1, 3, 1], vertical_alignment="center")
    back.button("Previous", key="pairs_prev", on_click=handle_move, args=(-1, len(pair_ids)),
                disabled=s.pairs_index == 0, width="stretch")
    where.markdown(f"Pair {s.pairs_index + 1} of {len(pair_ids)}")
    forward.button("Next", key="pairs_next", on_click=handle_move, args=(1, len(pair_ids)),
                   disabled=s.pairs_index >= len(pair_ids) - 1, width="stretch")
    actor = current_actor()
    shown = pair_reviews.pair_for_review(sessions, actor=actor, pair_id=pair_ids[s.pairs_index])
    if process_submission(shown):
        shown = pair_reviews.pair_for_review(sessions, actor=actor, pair_id=shown.pair_id)
    flash = s.pairs_flash
    if flash:
        getattr(st, flash[0])(flash[1])
        s.pairs_flash = None
    render_pair(shown)
    if st.toggle("Agreement on preferences", key="pairs_show_agreement",
                 help="The judge against the people, and the people among themselves, per "
                      "criterion, on the pairs you may see (the ones you answered, unless "
                      "you adjudicate)"):
        pair_review_view.render_agreement(get_agreement(
            db, chosen, actor, pair_reviews.review_stamp(sessions, chosen)))
