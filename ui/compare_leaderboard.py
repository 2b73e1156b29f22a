"""The Compare page's leaderboard: every source compared on the chosen comparison's rubric
version, ranked by Bradley-Terry strength over all finished comparisons on it, with intervals
and the number of pairs behind each (storage.services.comparison_leaderboard); for reviewers,
ranked by people's decided preferences instead, where they exist."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.services import comparison_leaderboard, pair_agreement
from storage.services.comparison_leaderboard import RubricLeaderboard
from storage.services.comparisons import ComparisonInfo
from storage.services.reviewers import Actor, Role
from ui import safe_text
from ui.auth import current_actor
from ui.runtime import sessions_for

BASIS = {"judge": "the judges' winners", "people": "people's decided preferences"}

Stamp = tuple[tuple[int, str, int], ...]


@st.cache_data(ttl=600, max_entries=20, show_spinner="Ranking the sources…")
def get_leaderboard(db: str, rubric_version_id: int, stamp: Stamp) -> RubricLeaderboard | None:
    """As of ``stamp`` (the version's comparisons: id, status, pairs judged)."""
    return comparison_leaderboard.rubric_leaderboard(sessions_for(db), rubric_version_id)


@st.cache_data(ttl=600, max_entries=20, show_spinner="Ranking the sources…")
def get_people_leaderboard(db: str, rubric_version_id: int, actor: Actor,
                           stamp: tuple) -> RubricLeaderboard | None:
    """As of ``stamp`` (the version's comparisons and people's saves on them)."""
    return comparison_leaderboard.people_leaderboard(sessions_for(db), rubric_version_id,
                                                     actor=actor)


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
    actor = current_actor()
    reviewed = {}
    if actor is not None and actor.can(Role.REVIEWER):
        saved = pair_agreement.reviewed_comparisons(sessions_for(db))
        reviewed = {c.id: saved[c.id] for c in same if c.id in saved}
    sources = {label for c in same if c.status == "done" or c.id in reviewed
               for label in (c.a_label, c.b_label)}
    if len(sources) < 3:
        st.caption(f"A leaderboard needs three or more sources compared on this rubric "
                   f"version in finished comparisons; there are {len(sources)} so far.")
        return
    basis = "judge"
    if reviewed:  # people's preferences are a reviewer's to read
        basis = st.radio("Rank by", list(BASIS), format_func=BASIS.get, horizontal=True,
                         key="compare_board_basis")
    if basis == "people":
        board = get_people_leaderboard(db, chosen.rubric_version_id, actor,
                                       (stamp, tuple(sorted(reviewed.items()))))
    else:
        board = get_leaderboard(db, chosen.rubric_version_id, stamp)
    if board is None or len(board.standings) < 3:
        st.caption("Fewer than three sources have a judged pair on this rubric version yet."
                   if basis == "judge" else
                   "Fewer than three sources have a pair people decided on every criterion "
                   "(agreed or adjudicated) on this rubric version yet.")
        return
    st.subheader("Leaderboard")
    if basis == "people":
        st.caption(safe_text.md(
            f"Bradley-Terry strength from people's preferences: the {board.pairs:,} of "
            f"{board.candidate_pairs:,} pairs in {len(board.comparison_ids)} comparisons on "
            "this rubric version that people decided on every criterion (agreed or "
            "adjudicated), each pair's winner aggregated from their sides; a tie is half a "
            "win. 0 is the average source, and sources whose 95% intervals overlap are not "
            "told apart by these pairs. Reviewers count only the pairs they answered whole."))
    else:
        st.caption(safe_text.md(
            f"Bradley-Terry strength from every judged pair's winner in the "
            f"{len(board.comparison_ids)} finished comparisons on this rubric version "
            f"({board.pairs:,} pairs; a tie is half a win; judge "
            f"{', '.join(board.judges)}): 0 is the average source, and sources whose 95% "
            "intervals overlap are not told apart by these pairs."))
    st.dataframe(leaderboard_frame(board), hide_index=True, width="stretch")
