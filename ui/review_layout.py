"""Review: the page's layout on one screen (issue 35 item 12) — the response beside its
criteria, both starting near the top, at 1280x800 as at 1920x1080.

Streamlit's own spacing puts 6rem above a page's title and draws every widget in its own row;
the Review page is used for hours at a time, so it is drawn tighter: the set, the mode and
the title share a row, the response sits in a column of its own that scrolls on its own,
and the criteria with their controls fill the other column.
"""

from __future__ import annotations

import streamlit as st

from storage.dto import EffectiveCriterion, RunInfo
from storage.services.review_queue import ResponseDetail
from ui import response_view, runtime, safe_text
from ui import results_panels as panel_columns
from ui.components import verdict_form
from ui.verdict_view import choice_badge, choice_text, md_escape, short_run_label

# Only the Review page's own elements (keyed containers) and its main block: other pages keep
# Streamlit's spacing. The response column scrolls on its own when the response is long, so
# the criteria beside it stay where they are.
_STYLE = """<style>
[data-testid="stMainBlockContainer"]:has(.st-key-review_head) {
  padding: 3.25rem 2rem 2rem;
}
[data-testid="stMainBlockContainer"]:has(.st-key-review_head) h1 {
  font-size: 1.9rem; padding: 0;
}
.st-key-review_response {
  max-height: calc(100vh - 9rem); overflow-y: auto; position: sticky; top: 3.5rem;
}
.st-key-review_body .rw-keys .rw-button { padding: 0.15rem 0.5rem; font-size: 0.85rem; }
.st-key-review_body .rw-keys .rw-row { gap: 0.35rem; }
.st-key-review_body .rw-where { margin-bottom: 0.25rem; }
.st-key-review_body .rw-choices { gap: 0.6rem; margin-bottom: 0.25rem; }
.st-key-review_scores [data-testid="stMetricValue"] { font-size: 1.35rem; }
.st-key-review_scores [data-testid="stMetric"] { min-width: 7rem; }
</style>"""


def tighten() -> None:
    """The page's tighter spacing (CSS only: no script, nothing of the user's)."""
    st.html(_STYLE)


def body():
    """The response column and the criteria column, side by side."""
    with st.container(key="review_body"):
        response, criteria = st.columns([5, 8], gap="medium")
    return response.container(key="review_response"), criteria


def render_scores(detail: ResponseDetail, panels) -> None:
    """The scores in one line under the response; what each is made of, folded."""
    response_view.render_scores(detail, panels, compact=True)


def render_criterion(detail: ResponseDetail, index: int, hide_judges: bool, form: dict,
                     part_key: str) -> None:
    """One criterion: its requirement, the reviewer's controls and, beside them, its row of
    the criterion x judge matrix (each judge's verdict and reason, then the panels')."""
    criterion = detail.version.criteria[index]
    decision = detail.humans.get(criterion.id)
    mine = detail.mine.get(criterion.id)
    disagree = criterion.id in detail.disagree_criteria and not hide_judges
    # keyed: the form outlines the box of the criterion in focus (verdict_form.css)
    with st.container(border=True, key=f"review_crit_{index}", gap="small"):
        st.markdown(response_view.criterion_heading(criterion, disagree))
        st.caption(safe_text.md(criterion.requirement))
        people, judges = st.columns([5, 3], gap="small")
        with people:
            verdict_form.mount("criterion", form, key=part_key, criterion=criterion.id)
            if mine is not None:
                st.caption(f"Yours: {md_escape(choice_text(mine.choice) or '')} · "
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
        with judges:
            if hide_judges:
                st.caption("Judges hidden until you answer (blind mode).")
                return
            for run, grade in zip(detail.runs, detail.grades, strict=False):
                row = grade.criteria[index] if grade is not None else None
                render_judge_line(row, run)
            panel_columns.render_criterion_verdicts(
                runtime.database_key(), detail.response.dataset_id, detail.version.id,
                detail.response.id, criterion.id, shown_runs={run.id for run in detail.runs})


def render_judge_line(row: EffectiveCriterion | None, run: RunInfo) -> None:
    """One cell of the matrix: the judge's verdict and who gave it on one line, its reason
    (model text, shown as text) under it."""
    label = md_escape(short_run_label(run))
    if row is None:
        st.caption(f"{label}: not graded yet")
        return
    if run.grader == "rubric_as_judge" and row.judge_choice is None and not row.judge_error:
        st.caption(f"{label}: holistic score only")
        return
    fallback = (" :orange-badge[fallback verdict]"
                if row.judge_error and row.judge_verdict is not None else "")
    with st.container(gap=None):
        st.markdown(f"{choice_badge(row.judge_choice)}{fallback} :small[{label}]")
        if row.judge_error:
            st.caption(safe_text.md_lines(f"Error: {row.judge_error}"))
        if row.judge_reason:
            st.caption(safe_text.md_lines(row.judge_reason))
