"""The Review pairs page's pieces: the pair side by side (sides as randomised for the
reviewer), each criterion's A / B / T / N form (the Review page's browser component, so keys
land on the criterion in focus), and what is revealed once the reviewer has answered."""

from __future__ import annotations

import streamlit as st

from storage.services.pair_agreement import CriterionPreferenceAgreement
from storage.services.pair_results import PairPeopleResult
from storage.services.pair_reviews import PairForReview
from ui import safe_text
from ui.components import verdict_form

KEYS_PART, SAVE_PART = "pairs_vf_keys", "pairs_vf_save"
# Answers as the reviewer sees them: A is the left response, B the right one.
PAIR_ANSWERS = (
    verdict_form.Answer("A", "A · left", "a"),
    verdict_form.Answer("B", "B · right", "b"),
    verdict_form.Answer("TIE", "Tie", "t"),
    verdict_form.Answer("CANNOT_ASSESS", "Cannot assess", "n"),
)
SIDE_TEXT = {"A": "A", "B": "B", "TIE": "tie", "CANNOT_ASSESS": "cannot assess"}


def criterion_part(position: int) -> str:
    return f"pairs_vf_c_{position}"


def form_key(pair_id: int, nonce: int) -> str:
    return verdict_form.form_key(pair_id, nonce)


def form_criteria(shown: PairForReview) -> list[verdict_form.FormCriterion]:
    """One form criterion per position (ids are positions: a holistic one has no id)."""
    return [verdict_form.FormCriterion(
        id=c.position, label=c.criterion.name or "overall", answers=PAIR_ANSWERS,
        initial=shown.mine.get(c.position)) for c in shown.criteria]


def render_sides(shown: PairForReview) -> None:
    """The query, then the two responses side by side; the source names only once revealed."""
    if shown.query:
        st.caption("Query")
        st.text(safe_text.text(shown.query))
    left, right = st.columns(2, gap="medium")
    names = (None, None)
    if shown.revealed is not None:
        a, b = shown.revealed.a_label, shown.revealed.b_label
        names = (b, a) if shown.swapped else (a, b)
    for column, title, text, name in ((left, "A · left", shown.left, names[0]),
                                      (right, "B · right", shown.right, names[1])):
        with column, st.container(border=True, key=f"pairs_side_{title[0]}"):
            st.markdown(f"**{title}**" + (f" — {safe_text.md(name)}" if name else ""))
            st.text(safe_text.text(text))


def _shown_side(side: str | None, swapped: bool) -> str:
    if side is None:
        return "no answer"
    if swapped and side in ("A", "B"):
        side = "B" if side == "A" else "A"
    return SIDE_TEXT[side]


def render_criterion(shown: PairForReview, index: int, form: dict) -> None:
    c = shown.criteria[index]
    with st.container(border=True, key=f"review_crit_{index}", gap="small"):
        st.markdown(f"**{safe_text.md(c.criterion.name or 'overall')}**")
        if c.criterion.weight < 0:  # asked as the judge was: the better one avoids it
            st.caption(f"Penalty — which response better **avoids** this: "
                       f"{safe_text.md(c.criterion.requirement)}")
        else:
            st.caption(safe_text.md(c.criterion.requirement))
        verdict_form.mount("criterion", form, key=criterion_part(index), criterion=c.position)
        if shown.revealed is None:
            st.caption("The judge's and other reviewers' preferences, and which source is "
                       "which, appear once you have answered every criterion.")
            return
        judge = shown.revealed.judge.get(c.position)
        decision = shown.revealed.decisions.get(c.position)
        people = ("no answer" if decision is None else
                  f"{decision.status}"
                  + (f": {_shown_side(decision.side, shown.swapped)}" if decision.side else ""))
        st.caption(f"Judge: {_shown_side(judge, shown.swapped)} · People: {people}"
                   " (as you were shown the sides)")


def render_result(result: PairPeopleResult) -> None:
    """The pair's result with people's preferences, beside the judge's (comparison terms)."""
    def line(score: float | None, winner: str | None) -> str:
        if score is None:
            return "nothing scored"
        return f"B's share {score:.2f} — {'even' if winner == 'TIE' else f'{winner} better'}"

    st.caption(f"With people's preferences: {line(result.report.score, result.report.winner)}"
               f" · the judge's alone: {line(result.judge.score, result.judge.winner)}"
               " (A and B as the comparison names them)")


def _interval(interval) -> str:
    return "" if interval is None else f"{interval.low:.2f} – {interval.high:.2f}"


def _figure(value: float | None, digits: str = ".2f") -> str:
    return "—" if value is None else format(value, digits)


def render_agreement(rows: list[CriterionPreferenceAgreement]) -> None:
    """Per criterion: the judge against the people (kappa over A / TIE / B with n and its
    95 % interval, percent agreement) and the people among themselves."""
    st.dataframe([{
        "Criterion": r.criterion or "overall",
        "n (judge vs people)": r.judge_vs_people.n,
        "Kappa": _figure(r.judge_vs_people.kappa),
        "Kappa 95 % interval": _interval(r.judge_vs_people.kappa_interval),
        "Agreement %": _figure(r.judge_vs_people.percent_agreement, ".0f"),
        "Pairs with 2+ people": r.people.pairs,
        "People agree %": _figure(r.people.percent_agreement, ".0f"),
        "People's alpha": _figure(r.people.alpha),
        "Alpha 95 % interval": _interval(r.people.alpha_interval),
    } for r in rows], hide_index=True)
    notes = [f"{r.criterion or 'overall'}: {n}" for r in rows
             for n in (r.judge_vs_people.note, r.people.note) if n]
    for note in notes:
        st.caption(safe_text.md(note))
