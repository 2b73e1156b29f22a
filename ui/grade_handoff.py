"""Results -> Grade: grade exactly the responses a Results filter shows (e.g. only the
disagreements). Results puts the matching response ids in session state; Grade offers them
as a selection ("The N responses from Results") and preselects rubric version and dataset."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from storage.services import rubrics
from storage.services.results import ResultSet, ResultsFilter
from ui import results_readers as readers
from ui import runtime
from ui.wording import plural

KEY = "grade_handoff"


@dataclass(frozen=True)
class Handoff:
    dataset_id: int
    rubric_id: int
    rubric_version_id: int
    response_ids: tuple[int, ...]
    description: str  # what the filter was, in the user's words
    fresh: bool = True  # not yet applied to Grade's pickers


def describe(filters: ResultsFilter) -> str:
    parts = []
    if filters.search:
        parts.append(f"search “{filters.search}”")
    if filters.failed_only:
        parts.append("judge failed or fell back")
    if filters.disagree_only:
        parts.append("judges disagree")
    if filters.reviewed != "any":
        parts.append(filters.reviewed.replace("_", " "))
    if filters.min_score is not None or filters.max_score is not None:
        parts.append(f"score {filters.min_score or 0:g}–{filters.max_score or 1:g}"
                     + (f" in panel P{filters.score_panel_id}"
                        if filters.score_panel_id is not None else ""))
    parts.extend(f"{column} is “{value}”" for column, value in filters.metadata)
    if filters.verdict is not None:
        parts.append(f"a criterion's verdict is {filters.verdict.verdict}"
                     + (f" in panel P{filters.verdict.panel_id}"
                        if filters.verdict.panel_id is not None else ""))
    return ", ".join(parts) or "no filter"


def render_grade_these(db: str, result_set: ResultSet, run_ids: tuple[int, ...],
                       filters: ResultsFilter, total: int, score_gap: float,
                       columns: dict | None = None) -> None:
    """Results' "Grade these" button: every response matching the filter, on every page."""
    label = f"Grade these {total:,}" if total != 1 else "Grade this one"
    if not st.button(label, key="results_grade_these", icon=":material/play_arrow:",
                     disabled=total == 0,
                     help="Open Grade with exactly the responses matching these filters "
                          "(all pages) as the selection"):
        return
    stamp = readers.run_stamp(db, run_ids)
    page = readers.get_results_page(
        db, result_set.dataset_id, result_set.rubric_version_id, run_ids, filters,
        "response", None, False, 0, max(1, total), stamp, score_gap, **(columns or {}))
    version = rubrics.get_version(runtime.sessions_for(db), result_set.rubric_version_id)
    st.session_state[KEY] = Handoff(
        dataset_id=result_set.dataset_id, rubric_id=version.rubric_id,
        rubric_version_id=version.id, response_ids=tuple(r.response_id for r in page.rows),
        description=describe(filters))
    st.switch_page("app_pages/grade.py")


def take_fresh() -> Handoff | None:
    """The hand-off to apply to Grade's pickers once (then the user may change them)."""
    handoff = st.session_state.get(KEY)
    if handoff is None or not handoff.fresh:
        return None
    st.session_state[KEY] = Handoff(**{**handoff.__dict__, "fresh": False})
    return handoff


def current(dataset_id: int) -> Handoff | None:
    handoff = st.session_state.get(KEY)
    return handoff if handoff is not None and handoff.dataset_id == dataset_id else None


def option_label(handoff: Handoff) -> str:
    return f"The {plural(len(handoff.response_ids), 'response')} from Results"
