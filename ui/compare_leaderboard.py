"""The Compare page's leaderboard: every source compared on the chosen comparison's rubric
version, ranked by Bradley-Terry strength over all finished comparisons on it, with intervals
and the number of pairs behind each (storage.services.comparison_leaderboard)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.services import comparison_leaderboard
from storage.services.comparison_leaderboard import RubricLeaderboard
from storage.services.comparisons import ComparisonInfo
from ui import safe_text
from ui.runtime import sessions_for

Stamp = tuple[tuple[int, str, int], ...]


@st.cache_data(ttl=600, max_entries=20, show_spinner="Ranking the sources…")
def get_leaderboard(db: str, rubric_version_id: int, stamp: Stamp) -> RubricLeaderboard | None:
    """As of ``stamp`` (the version's comparisons: id, status, pairs judged)."""
    return comparison_leaderboard.rubric_leaderboard(sessions_for(db), rubric_version_id)


def leaderboard_frame(board: RubricLeaderboard) -> pd.DataFrame:
    return pd.DataFrame([{
        "rank": s.rank, "source": s.source, "strength": round(s.strength, 2),
        "95% interval": "—" if s.interval is None or s.interval.low is None
        else f"{s.interval.low:.2f} – {s.interval.high:.2f}",
        "beats an average source": f"{s.win_probability:.0%}", "pairs": s.comparisons,
    } for s in board.standings])


def render_leaderboard(db: str, chosen: ComparisonInfo, every: list[ComparisonInfo]) -> None:
    same = [c for c in every if c.rubric_version_id == chosen.rubric_version_id]
    stamp = tuple((c.id, c.status, c.done_count) for c in same)
    sources = {label for c in same if c.status == "done" for label in (c.a_label, c.b_label)}
    if len(sources) < 3:
        st.caption(f"A leaderboard needs three or more sources compared on this rubric "
                   f"version in finished comparisons; there are {len(sources)} so far.")
        return
    board = get_leaderboard(db, chosen.rubric_version_id, stamp)
    if board is None or len(board.standings) < 3:
        st.caption("Fewer than three sources have a judged pair on this rubric version yet.")
        return
    st.subheader("Leaderboard")
    st.caption(safe_text.md(
        f"Bradley-Terry strength from every judged pair's winner in the "
        f"{len(board.comparison_ids)} finished comparisons on this rubric version "
        f"({board.pairs:,} pairs; a tie is half a win; judge "
        f"{', '.join(board.judges)}): 0 is the average source, and sources whose 95% "
        "intervals overlap are not told apart by these pairs."))
    st.dataframe(leaderboard_frame(board), hide_index=True, width="stretch")
