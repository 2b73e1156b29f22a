"""Review: the adjudication queue — disputed criteria with every reviewer's verdict and note,
resolved by an adjudicator's verdict (which then enters the effective scores)."""

from __future__ import annotations

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import adjudication_check, review_queue, reviews
from storage.services.results import ResultSet
from storage.services.review_queue import DisputeItem
from storage.services.reviewers import Actor, Role
from ui import response_view, review_layout, runtime, safe_text
from ui import results_readers as readers
from ui.review_form import CHOICE_LABELS, CHOICES, form_answers
from ui.verdict_view import choice_badge, choice_words, md_escape

PAGE = 20


def _key(item: DisputeItem) -> str:
    return f"{item.response_id}_{item.criterion_id}"


def _ids(key: str) -> tuple[int, int]:
    """(response, criterion) of a card's key."""
    response_id, criterion_id = key.split("_")
    return int(response_id), int(criterion_id)


def handle_adjudicate(item: DisputeItem) -> None:
    """Which card's Decide, and the adjudication that card showed (a decision made
    elsewhere since is not overwritten unseen)."""
    shown = item.decision.adjudication
    st.session_state.review_adjudicate = (
        _key(item), shown.id if shown else None,
        adjudication_check.shown_reviews(item.decision.reviews))


def render_adjudication(db: str, chosen: ResultSet, actor: Actor | None) -> None:
    if actor is None or not actor.can(Role.ADJUDICATOR):
        st.info("Adjudication needs an adjudicator: ask an admin for the role.")
        return
    # Only the first page of disputes and the cards kept in place, never the whole queue.
    kept = tuple(_ids(key) for key in shown_keys(chosen))
    page = readers.get_adjudication_page(
        db, chosen.dataset_id, chosen.rubric_version_id, readers.run_stamp(db, chosen.run_ids),
        PAGE + len(kept), kept)
    items = list(page.items)
    noun = "criterion" if page.disputed == 1 else "criteria"
    st.caption(f"{page.disputed} disputed {noun} in this set. Until you decide, the "
               "judge's verdict stands for them; your verdict applies at once to every run.")
    render_pending(actor, [i for i in items if i.decision.disputed
                           or _key(i) in shown_keys(chosen)])
    shown = cards_in_place(chosen, items)
    if not page.disputed:
        st.success("Nothing to adjudicate: every reviewed criterion has one verdict.")
    by_key = {_key(i): i for i in items}
    for key in shown:
        render_dispute(db, chosen, by_key[key])
    more = page.disputed - sum(1 for key in shown if by_key[key].decision.disputed)
    if more:
        st.caption(f"{more} more after these; they move up as you decide.")


def shown_keys(chosen: ResultSet) -> tuple[str, ...]:
    kept = st.session_state.review_adj_order
    here = (chosen.dataset_id, chosen.rubric_version_id)
    return kept[1] if kept and kept[0] == here else ()


def cards_in_place(chosen: ResultSet, items: list[DisputeItem]) -> tuple[str, ...]:
    """The cards to draw, in the order they were first drawn: a card decided stays where it
    was (showing its decision) until the page is left, so the next card does not jump
    under the mouse; new disputes come after them."""
    present = {_key(i) for i in items}
    kept = [k for k in shown_keys(chosen) if k in present]
    fresh = [_key(i) for i in items if i.decision.disputed and _key(i) not in kept]
    shown = tuple(kept + fresh[:max(0, PAGE - sum(
        1 for i in items if i.decision.disputed and _key(i) in kept))])
    st.session_state.review_adj_order = ((chosen.dataset_id, chosen.rubric_version_id), shown)
    return shown


def render_dispute(db: str, chosen: ResultSet, item: DisputeItem) -> None:
    """One card: the requirement, every reviewer's verdict and note, every judge's verdict
    and reason, the response folded, and the adjudicator's controls."""
    key = _key(item)
    detail = readers.get_response_detail(
        db, item.response_id, chosen.rubric_version_id, chosen.run_ids,
        readers.run_stamp(db, chosen.run_ids), None, True)
    index, criterion = next(((n, c) for n, c in enumerate(detail.version.criteria)
                             if c.id == item.criterion_id), (None, None))
    with st.container(border=True, key=f"review_adj_{key}"):
        st.markdown(f"**{md_escape(item.external_id or f'#{item.response_id}')}** · "
                    f"{md_escape(item.criterion_label)} · "
                    f"{response_view.decision_caption(item.decision)}")
        if criterion is not None:
            st.caption(f"Requirement: {md_escape(criterion.requirement)}")
        people, judges = st.columns(2, gap="medium")
        with people:
            st.markdown(":small[**Reviewers**]")
            render_reviewers(item)
        with judges:
            st.markdown(":small[**Judges**]")
            for run, grade in zip(detail.runs, detail.grades, strict=False):
                row = grade.criteria[index] if grade is not None and index is not None \
                    else None
                review_layout.render_judge_line(row, run)
        with st.expander("Response"):
            response_view.render_response_text(detail)
        verdict, why, go = st.columns([4, 4, 2], vertical_alignment="bottom")
        answers = form_answers(criterion) if criterion is not None else ()
        labels = {a.value: a.label for a in answers} or CHOICE_LABELS
        verdict.radio("Adjudicated option" if criterion is not None and criterion.options
                      else "Adjudicated verdict", list(labels) or CHOICES, horizontal=True,
                      index=None, format_func=labels.get, key=f"review_adj_v_{key}")
        why.text_input("Why (shown to the reviewers)", key=f"review_adj_n_{key}")
        go.button("Decide again" if item.decision.adjudication else "Decide",
                  key=f"review_adj_go_{key}", type="primary", width="stretch",
                  on_click=handle_adjudicate, args=(item,))
        if st.session_state.review_adjudicate_flash and \
                st.session_state.review_adjudicate_flash[0] == key:
            _, kind, message = st.session_state.review_adjudicate_flash
            getattr(st, kind)(message)
            st.session_state.review_adjudicate_flash = None


def render_reviewers(item: DisputeItem) -> None:
    """Each reviewer's verdict and note; the adjudication, once there is one."""
    decided = item.decision.adjudication
    # one line, decided or not: deciding a card does not move the cards under it
    if decided is None:
        st.markdown(":small[Not decided yet: the judge's verdict stands.]")
    else:
        note = f" — “{safe_text.md(decided.note)}”" if decided.note else ""
        st.markdown(f"{choice_badge(decided.choice)} :small[decided by "
                    f"{md_escape(decided.reviewer)}, {decided.created_at:%Y-%m-%d %H:%M} UTC"
                    f"{note}]")
    for h in item.decision.reviews:
        with st.container(gap=None):
            st.markdown(f"{choice_badge(h.choice)} :small[{md_escape(h.reviewer)}: "
                        f"{md_escape(choice_words(h.choice))} · "
                        f"{h.created_at:%Y-%m-%d %H:%M} UTC]")
            if h.note:
                st.caption(safe_text.md_lines(h.note))


def render_pending(actor: Actor, items: list[DisputeItem]) -> None:
    """Write the adjudication asked for by the last "Decide" (in the body, not a callback)."""
    s = st.session_state
    asked, s.review_adjudicate = s.review_adjudicate, None
    if asked is None:
        return
    key, shown_id, shown_reviews = asked
    item = next((i for i in items if _key(i) == key), None)
    choice = s.get(f"review_adj_v_{key}")
    now = item.decision.adjudication if item is not None else None
    if item is None or (now.id if now else None) != shown_id:
        # decided in another window (or the reviewers now agree) meanwhile
        st.warning(md_escape(decided_meanwhile(key)))
        return
    if not choice:
        s.review_adjudicate_flash = (key, "error", "Pick a verdict first.")
        return
    try:
        reviews.adjudicate(
            runtime.get_sessions(), actor=actor, response_id=item.response_id,
            criterion_id=item.criterion_id, verdict=choice,
            note=str(s.get(f"review_adj_n_{key}") or "").strip(),
            expected_current_id=shown_id, expected_reviews=shown_reviews)
    except RubricWorkbenchError as exc:
        s.review_adjudicate_flash = (key, "error", md_escape(str(exc)))
        return
    readers.clear_after_verdict()
    st.toast(md_escape(f"Decided {item.criterion_label}: {CHOICE_LABELS.get(choice, choice)}."),
             icon=":material/gavel:")
    st.rerun()


def decided_meanwhile(key: str) -> str:
    """Why a Decide found its dispute gone, naming the response, the criterion and who
    decided it."""
    response_id = _ids(key)[0]
    chosen = st.session_state.review_set
    found = next(iter(review_queue.adjudication_page(
        runtime.get_sessions(), dataset_id=chosen[0], rubric_version_id=chosen[1],
        limit=0, keys=[_ids(key)]).items), None) if chosen else None
    if found is None or found.decision.adjudication is None:
        return ("Not saved: that criterion is no longer disputed (the reviewers now agree). "
                "Nothing was written.")
    decided = found.decision.adjudication
    return (f"Not saved: {found.external_id or f'#{response_id}'} · {found.criterion_label} "
            f"was decided meanwhile by {decided.reviewer} "
            f"({choice_words(decided.choice)}). Nothing was written.")
