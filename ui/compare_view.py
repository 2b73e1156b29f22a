"""The Compare page's results: B's wins / ties / losses over A per criterion and overall,
with intervals and the position-consistency rate, and every row that was not compared."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from grading.bootstrap import Interval
from grading.pairwise.summary import ComparisonSummary
from storage.services.comparisons import ComparisonInfo, ComparisonResults
from storage.services.pair_panel_results import PairPanelResults
from ui.boundary import plain

NOT_JUDGED = {"only_a": "only in A", "only_b": "only in B", "identical": "same text",
              "failed": "failed"}


def share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def interval_text(interval: Interval | None) -> str:
    if interval is None or interval.low is None:
        return "—"
    return f"{interval.low:.0%} – {interval.high:.0%}"


def results_frame(results: ComparisonResults) -> pd.DataFrame:
    """One row per criterion and one overall: counts, B's win rate, its interval, and the
    share answered the same in both orders."""
    return summary_frame(results.summary)


def summary_frame(summary: ComparisonSummary, *, consistency: bool = True) -> pd.DataFrame:
    """A summary's table; without ``consistency`` (people's preferences: asked once, in one
    order) the position-consistency columns are left out."""
    rows = []
    for c in summary.criteria:
        rows.append({"criterion": c.label, "B wins": c.tally.wins, "ties": c.tally.ties,
                     "A wins": c.tally.losses, "B win rate": share(c.tally.win_rate),
                     "95% interval": interval_text(c.tally.interval),
                     "position-consistent": share(c.consistency_rate),
                     "consistency interval": interval_text(c.consistency_interval),
                     "cannot assess": c.cannot_assess, "failed": c.failed})
    o = summary.overall
    rows.append({"criterion": "overall", "B wins": o.wins, "ties": o.ties, "A wins": o.losses,
                 "B win rate": share(o.win_rate), "95% interval": interval_text(o.interval),
                 "position-consistent": share(summary.consistency_rate),
                 "consistency interval": "—", "cannot assess": 0,
                 "failed": summary.failed_pairs})
    frame = pd.DataFrame(rows)
    if not consistency:
        frame = frame.drop(columns=["position-consistent", "consistency interval"])
    return frame


def not_judged_frame(results: ComparisonResults | PairPanelResults) -> pd.DataFrame:
    return pd.DataFrame([{"why": NOT_JUDGED.get(n.kind, n.kind), "matched on": n.key,
                          "A id": n.a_id or "", "B id": n.b_id or "", "detail": n.reason}
                         for n in results.not_judged])


CONSISTENCY_HELP = ("Share of judgments the judge gave the same way with A shown first and "
                    "with B shown first; the others count as ties")


def render_figures(summary: ComparisonSummary, *, a_label: str, b_label: str, pairs: int,
                   consistency_help: str = CONSISTENCY_HELP) -> None:
    """B's win rate with its interval, the position consistency and the pairs judged: the
    three figures a judge (one comparison, or a panel of them) is read by."""
    left, middle, right = st.columns(3)
    left.metric(f"B's win rate ({b_label[:40]} over {a_label[:40]})",
                share(summary.overall.win_rate),
                help="(B wins + ties / 2) / judged pairs; 50% means no difference")
    left.caption(f"95% interval {interval_text(summary.overall.interval)}")
    middle.metric("Position consistency", share(summary.consistency_rate),
                  help=consistency_help)
    right.metric("Pairs judged", f"{summary.overall.judged:,} of {pairs:,}")


def render_headline(info: ComparisonInfo, results: ComparisonResults) -> None:
    render_figures(results.summary, a_label=info.a_label, b_label=info.b_label,
                   pairs=info.pair_count)


def render_results(info: ComparisonInfo, results: ComparisonResults) -> None:
    if results.summary is None:
        st.info("No pair judged yet." if not info.finished else
                "No pair could be compared; see why below.")
    else:
        render_headline(info, results)
        st.dataframe(results_frame(results), hide_index=True, width="stretch")
    calibration = info.settings.get("calibration")
    if calibration:
        st.caption(plain(
            f"Calibrated: the judge was shown {len(calibration['examples'])} decided pair "
            f"answer(s) as examples (up to {calibration['k']} per criterion)"
            + (f"; {results.examples_left_out} pair(s) that are examples are left out of "
               "these figures" if results.examples_left_out else "")
            + (f". {calibration['note']}" if calibration.get("note") else ".")))
    if results.not_judged:
        st.subheader("Not compared")
        st.caption(plain(
            f"Rows of A ({info.a_label}) or B ({info.b_label}) without a partner, pairs whose "
            "two texts are the same, and pairs the judge could not compare."))
        st.dataframe(not_judged_frame(results), hide_index=True, width="stretch")
