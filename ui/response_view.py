"""Drawing one response with its grades: shared by the Results and Review pages."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from storage.dto import CriterionInfo, EffectiveCriterion, HumanDecision
from storage.services.panel_results import PanelResult
from storage.services.panels import PanelInfo
from storage.services.review_queue import ResponseDetail
from ui import safe_text
from ui.verdict_view import (
    GRADER_LABELS,
    choice_badge,
    choice_text,
    choice_words,
    format_score,
    md_escape,
    render_untrusted,
    short_run_label,
)


def render_response_text(detail: ResponseDetail) -> None:
    response = detail.response
    if response.query:
        st.markdown("**Query**")
        render_untrusted(response.query)
    if response.thinking:
        with st.expander("Thinking", expanded=False):
            render_untrusted(response.thinking)
    st.markdown("**Output**")
    render_untrusted(response.output)
    if response.reference:
        st.markdown("**Reference answer** (shown to the judge to compare with)")
        render_untrusted(response.reference)


def render_scores(detail: ResponseDetail,
                  panels: Sequence[tuple[PanelInfo, PanelResult | None]] = (), *,
                  compact: bool = False) -> None:
    """Per run, then per judge panel: the effective score, how far a person moved it from
    the judge's (the panel's), coverage; then the score from people's verdicts alone.
    ``compact``: the scores in one line, what each is made of folded under them (Review)."""
    items = list(zip(detail.runs, detail.grades, strict=True))
    count = len(items) + len(panels) + 1
    if compact:
        row = st.container(horizontal=True, gap="small", key="review_scores")
        folded = st.expander("Score details", icon=":material/info:")
        places = [(row, folded)] * count
    else:
        columns = st.columns(min(4, count))
        places = [(columns[i % len(columns)],) * 2 for i in range(count)]
    for (tile, notes), (run, grade) in zip(places, items, strict=False):
        label = f"#{run.id} {GRADER_LABELS.get(run.grader, run.grader)}"
        if grade is None:
            tile.metric(label, "—", help=f"{md_escape(run.model)}: not graded yet")
            continue
        moved = (grade.score is not None and grade.judge_score is not None
                 and abs(grade.score - grade.judge_score) > 1e-9)
        tile.metric(
            label, format_score(grade.score),
            delta=f"{grade.score - grade.judge_score:+.3f} by review" if moved else None,
            help=f"Effective score of {md_escape(run.model)}; the judge gave "
                 f"{format_score(grade.judge_score)}")
        with notes:
            st.caption(f"{md_escape(label) + ': ' if compact else ''}{md_escape(run.model)} · "
                       f"judge {format_score(grade.judge_score)} · "
                       f"reviewed {grade.reviewed_count}/{grade.criteria_count}")
            if grade.error:
                st.text(safe_text.text(grade.error))
            if grade.judge_reason:
                st.text(safe_text.text(grade.judge_reason))
    for (tile, notes), (panel, result) in zip(places[len(items):], panels, strict=False):
        render_panel_score(panel, result, tile, notes)
    tile, notes = places[-1]
    human = detail.human_score
    tile.metric("Human verdicts", format_score(human.score),
                help="The score from people's verdicts alone, once every criterion has one")
    notes.caption(f"{'Human verdicts: ' if compact else ''}"
                  f"reviewed {human.reviewed_count}/{human.criteria_count}")


def render_panel_score(panel: PanelInfo, result: PanelResult | None, tile=st,
                       notes=st) -> None:
    """A panel's metric in the score row, like a run's: effective score, the panel's own;
    its caption in ``notes``."""
    label = f"Panel P{panel.id}"
    members = ", ".join(f"#{m.run.id}" for m in panel.members)
    if result is None:
        tile.metric(label, "—", help="No member has graded this response yet")
        notes.caption(md_escape(f"{panel.label} · {panel.rule} of {members}"))
        return
    grade = result.effective
    moved = (grade.score is not None and grade.judge_score is not None
             and abs(grade.score - grade.judge_score) > 1e-9)
    tile.metric(label, format_score(grade.score),
                delta=f"{grade.score - grade.judge_score:+.3f} by review" if moved else None,
                help=md_escape(f"Effective score of {panel.label}: its verdicts by the "
                               f"{panel.rule} rule over runs {members}, people's verdicts in "
                               f"place; the panel gave {format_score(grade.judge_score)}"))
    notes.caption(md_escape(f"{panel.label} · {panel.rule} of {members} · panel "
                            f"{format_score(grade.judge_score)} · reviewed "
                            f"{grade.reviewed_count}/{grade.criteria_count}")
                  + (f" · {result.ties} ties" if result.ties else ""))
    if grade.error:
        notes.text(safe_text.text(grade.error))


def render_history(detail: ResponseDetail, width: str = "stretch") -> None:
    """Every verdict, newest first: who, when, which criterion, from what to what, why."""
    with st.popover(f"History ({len(detail.history)})", icon=":material/history:",
                    help="Every human verdict on this response: who, when, from what to "
                         "what, and why", width=width):
        if not detail.history:
            st.caption("No person has reviewed this response yet.")
            return
        labels = {c.id: c.label for c in detail.version.criteria}
        for h in sorted(detail.history, key=lambda h: h.id, reverse=True):
            before = (md_escape(choice_text(h.previous_choice) or "") if h.previous_choice
                      else "the judge's verdict")
            role = " (adjudication)" if h.adjudication else ""
            carried = ("" if h.rubric_version_id == detail.version.id
                       else " · given on an earlier version")
            st.markdown(
                f"**{md_escape(h.reviewer)}**{role} · {h.created_at:%Y-%m-%d %H:%M} UTC · "
                f"{md_escape(labels.get(h.criterion_id, str(h.criterion_id)))}: "
                f"{before} → **{md_escape(choice_text(h.choice) or '')}**{carried}")
            if h.note:
                st.text(safe_text.text(f"“{h.note}”"))


def criterion_heading(criterion: CriterionInfo, disagree: bool) -> str:
    parts = [f"**{criterion.position + 1}. {md_escape(criterion.label)}**",
             f"weight {criterion.weight:g}"]
    if criterion.weight < 0:
        parts.append(":red-badge[penalty if met]")
    if criterion.section:
        parts.append(md_escape(criterion.section))
    if disagree:
        parts.append(":orange-badge[judges disagree]")
    return " · ".join(parts)


def render_judge_cell(row: EffectiveCriterion | None, holistic: bool, label: str) -> None:
    """One judge's verdict on a criterion, the verdict first: judges side by side keep their
    badges on one line however their labels wrap."""
    if row is None:
        st.caption("not graded yet")
        st.caption(md_escape(label))
        return
    if holistic and row.judge_choice is None and not row.judge_error:
        st.caption("holistic score only")
        st.caption(md_escape(label))
        return
    st.markdown(choice_badge(row.judge_choice))
    st.caption(md_escape(label))
    if row.judge_error and row.judge_verdict is not None:
        st.markdown(":orange-badge[fallback verdict]")
    if row.judge_error:
        st.text(safe_text.text(f"Error: {row.judge_error}"))
    if row.judge_reason:
        st.text(safe_text.text(row.judge_reason))


STATUS_LABELS = {
    "agreed": ":green-badge[reviewers agree]",
    "adjudicated": ":violet-badge[adjudicated]",
    "disputed": ":orange-badge[disputed — the judge's verdict stands]",
}


ONE_REVIEWER = ":blue-badge[one reviewer]"


def decision_caption(decision: HumanDecision) -> str:
    """How the verdict in force was reached; one reviewer's verdict is not an agreement."""
    alone = decision.status == "agreed" and len(decision.reviews) == 1
    parts = [ONE_REVIEWER if alone else STATUS_LABELS[decision.status]]
    if decision.carried_from is not None:
        parts.append(f"carried from v{decision.carried_from}")
    return " · ".join(parts)


def render_human_cell(decision: HumanDecision | None) -> None:
    """The human verdict in force, how it was reached, and every reviewer's verdict."""
    if decision is None:
        st.caption("not reviewed")
        return
    if decision.verdict is not None:
        st.markdown(choice_badge(decision.choice))
    st.markdown(decision_caption(decision))
    if decision.adjudication is not None:
        h = decision.adjudication
        st.caption(f"adjudicated by {md_escape(h.reviewer)}, "
                   f"{h.created_at:%Y-%m-%d %H:%M} UTC")
        if h.note:
            st.text(safe_text.text(h.note))
    render_reviews(decision)


def render_reviews(decision: HumanDecision) -> None:
    for h in decision.reviews:
        st.caption(f"{md_escape(h.reviewer)}: {md_escape(choice_words(h.choice))} · "
                   f"{h.created_at:%Y-%m-%d %H:%M} UTC")
        if h.note:
            st.text(safe_text.text(h.note))


def render_criteria(detail: ResponseDetail) -> None:
    """Per criterion: every run's verdict and reason side by side with the human verdict."""
    runs = detail.runs
    for index, criterion in enumerate(detail.version.criteria):
        disagree = criterion.id in detail.disagree_criteria
        with st.container(border=True):
            st.markdown(criterion_heading(criterion, disagree))
            st.text(safe_text.text(criterion.requirement))
            columns = st.columns(len(runs) + 1)
            for column, run, grade in zip(columns, runs, detail.grades, strict=False):
                with column:
                    row = grade.criteria[index] if grade is not None else None
                    render_judge_cell(row, holistic=run.grader == "rubric_as_judge",
                                      label=short_run_label(run))
            with columns[-1]:
                st.caption("Human")
                render_human_cell(detail.humans.get(criterion.id))
