"""The Grade page's "Calibrate with reviewed examples" option (few-shot calibration).

Shows how many reviewed responses each criterion has, refuses a k that is larger (nothing
is launched), and hands the launch its ``calibration`` setting.
"""

from __future__ import annotations

import streamlit as st

from storage.run_settings import MAX_EXAMPLES
from storage.services import calibration
from ui import safe_text
from ui.runtime import sessions_for

HOLISTIC = "rubric_as_judge"


@st.cache_data(ttl=10, max_entries=20, show_spinner=False)
def get_reviewed_counts(db: str, rubric_version_id: int) -> tuple[calibration.ReviewedCount, ...]:
    return calibration.reviewed_counts(sessions_for(db), rubric_version_id)


def launch_settings() -> dict:
    """``{"calibration": {k, seed}}`` when the option is on, else nothing."""
    s = st.session_state
    if not s.grade_calibrate:
        return {}
    return {"calibration": {"k": int(s.grade_calibration_k),
                            "seed": int(s.grade_calibration_seed)}}


def estimate_key(grader: str) -> tuple[int, int] | None:
    """(k, seed) for the estimate of this grader's run, or None (off, or holistic)."""
    s = st.session_state
    if not s.grade_calibrate or grader == HOLISTIC:
        return None
    return int(s.grade_calibration_k), int(s.grade_calibration_seed)


def render_calibration(db: str, version) -> bool:
    """The option; False when it is on and cannot work (the page then cannot launch)."""
    s = st.session_state
    st.checkbox(
        "Calibrate with reviewed examples", key="grade_calibrate",
        help="Each judge prompt shows, per criterion, up to k responses people reviewed under "
             "this rubric, with their verdict (or chosen option) and note as the reason "
             "(balanced between MET and UNMET, or across a criterion's options; never the "
             "response being graded). The run records which ones, and "
             "its agreement with people is measured on the other responses.")
    if not s.grade_calibrate:
        return True
    counts = get_reviewed_counts(db, version.id)
    left, right, _ = st.columns([1, 1, 2])
    left.number_input("Examples per criterion (k)", min_value=1, max_value=MAX_EXAMPLES,
                      step=1, key="grade_calibration_k")
    right.number_input("Seed", min_value=0, step=1, key="grade_calibration_seed",
                       help="Which reviewed responses are drawn: the same seed draws the same "
                            "examples.")
    # A multi-choice criterion has no MET/UNMET count: its examples are counted per option.
    st.dataframe([{"Criterion": safe_text.text(c.label), "Reviewed": c.total,
                   "MET": None if c.options is not None else c.met,
                   "UNMET": None if c.options is not None else c.unmet,
                   "Per option": safe_text.text(c.breakdown) if c.options is not None else ""}
                  for c in counts], hide_index=True, width="stretch")
    st.caption("Reviewed responses per criterion that can be examples: agreed or adjudicated "
               "MET/UNMET verdicts (on a multi-choice criterion, chosen options) under this "
               "rubric, carried from earlier versions with the same requirement text, in any "
               "dataset that is not archived. Disputed and CANNOT_ASSESS verdicts, and NA "
               "options, are never examples.")
    ok = True
    problem = calibration.too_few(counts, int(s.grade_calibration_k))
    if problem:
        st.error(safe_text.md(problem) + " Nothing can be launched with calibration until "
                 "then.")
        ok = False
    if HOLISTIC in s.grade_graders:
        st.error("The rubric-as-judge grader gives one overall score, while people's verdicts "
                 "are per criterion, so it cannot be calibrated: unpick it, or turn "
                 "calibration off.")
        ok = False
    if ok:
        st.caption(f"Each prompt will show {int(s.grade_calibration_k)} reviewed examples per "
                   "criterion; the estimate below includes them.")
    return ok
