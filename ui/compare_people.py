"""The Compare page's people section: when people reviewed pairs of the comparison (the
Review pairs page), its result with their decisions in place of the judge's, beside the
judge's own, and how far the judge agrees with them (kappa over A / TIE / B, n, interval)."""

from __future__ import annotations

import streamlit as st

from storage.services import pair_reviews
from storage.services.comparisons import ComparisonInfo, ComparisonResults
from storage.services.reviewers import Role
from ui import compare_readers, pair_agreement_view, runtime
from ui.auth import current_actor
from ui.compare_view import interval_text, share, summary_frame


def render_people(db: str, info: ComparisonInfo, results: ComparisonResults) -> None:
    actor = current_actor()
    if actor is None or not actor.can(Role.REVIEWER):
        return  # people's preferences are a reviewer's to read
    stamp = pair_reviews.review_stamp(runtime.get_sessions(), info.id)
    if not stamp[0]:
        return
    people = compare_readers.get_people_results(db, info.id, actor, stamp, info.done_count)
    rows = compare_readers.get_pair_agreement(db, info.id, actor, stamp, info.done_count)
    st.subheader("With people's preferences")
    st.caption("People reviewed pairs of this comparison (Review pairs page). Where they agree, "
               "or an adjudicator decided, their preference replaces the judge's, through the "
               "same aggregation; disputed criteria keep the judge's until adjudicated. "
               "Reviewers see people's decisions only on the pairs they answered whole.")
    render_beside_people("the judge", "Judge", results.summary, people, rows)



def render_beside_people(who: str, title: str, judge, people, rows) -> None:
    """B's win rate from ``who`` alone beside the one with people's preferences, the result
    with people's preferences, and ``who`` against the people per criterion (the Compare
    page's people section, for one comparison or a panel of them)."""
    left, right = st.columns(2)
    left.metric(f"B's win rate, {who} alone", share(judge.overall.win_rate if judge else None))
    left.caption(f"95% interval {interval_text(judge.overall.interval if judge else None)}")
    right.metric("B's win rate with people's preferences",
                 share(people.overall.win_rate if people else None))
    right.caption(f"95% interval {interval_text(people.overall.interval if people else None)}")
    if people is not None:
        st.dataframe(summary_frame(people, consistency=False), hide_index=True, width="stretch")
    st.markdown(f"**{title} vs people**")
    st.caption("Per criterion, on the pairs where people agreed or an adjudicator decided: "
               f"Cohen's kappa over A / tie / B between {who} and the people (1 = always the "
               "same, 0 = as by chance), the number of pairs n and a 95% bootstrap interval. "
               "CANNOT_ASSESS and disputed pairs are left out.")
    st.dataframe(pair_agreement_view.agreement_frame(rows), hide_index=True, width="stretch")
