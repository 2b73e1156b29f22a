"""The Grade page's cost cap for a single run (each run, when several are launched), drawn
next to the estimate; a panel's cap is ui/grade_panel's (split over its members).

The runner keeps the cap (``extra.cost_cap``): the run stops once its known cost reaches it,
says so, and keeps what it graded. A cap on a model with no price could never be reached,
so it is refused here before anything is launched.
"""

from __future__ import annotations

import streamlit as st

from ui.verdict_view import md_escape


def run_cap(panel) -> float | None:
    """The cap each launched run carries (None: no cap, or a panel, which has its own)."""
    if panel is not None:
        return None
    return float(st.session_state.grade_run_cap) or None


def render_cap(panel, estimates, judges) -> bool:
    """The field, and whether the cap can be kept (False refuses the launch)."""
    if panel is not None:
        return True  # the panel's own cap, split over its members, is above
    several = len(judges) > 1
    field, _ = st.columns([1, 2])  # an amount, not a paragraph: as wide as the panel's cap
    field.number_input(
        "Stop each run when its cost reaches (USD, 0 = no cap)" if several else
        "Stop the run when its cost reaches (USD, 0 = no cap)",
        min_value=0.0, step=0.5, key="grade_run_cap",
        help="The run stops once its known cost reaches this amount; what it graded is kept "
             "and the other responses stay pending (launch again with a higher cap: answers "
             "already paid for come from the cache)." + (
                 " Each run has its own cap." if several else ""))
    cap = run_cap(panel)
    if cap is None:
        return True
    unpriced = sorted({j.model for j, e in zip(judges, estimates, strict=True)
                       if e.cost is None})
    if unpriced:
        st.error(md_escape(
            f"The cost cap cannot be kept: no price for {', '.join(unpriced)}, so the run's "
            "cost stays unknown and would never reach the cap. Set the price per million "
            "tokens on the Settings page, or set the cap to 0."))
        return False
    over = [(j, e) for j, e in zip(judges, estimates, strict=True) if e.cost > cap]
    for judge, estimate in over:
        st.warning(md_escape(
            f"{judge.model} ({judge.grader.replace('_', '-')}): the estimate "
            f"(${estimate.cost:,.4f}) is above the cap (${cap:g}), so the run will stop at "
            "the cap with some responses not graded."))
    return True
