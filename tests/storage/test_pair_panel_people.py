"""People's preferences against a panel of pairwise judges (SQLite and PostgreSQL): the
panel's summary with people's decisions in place of its own, through the same aggregation;
judge-vs-people with the panel as the judge; reviews of the same pair in any member count,
the latest per reviewer; blind review and roles as for one comparison."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from storage import models as m
from storage.services import pair_panel_people, pair_panel_results, pair_panels, pair_reviews
from storage.services.pair_sides import shown_swapped, to_shown
from storage.services.reviewers import PermissionDeniedError
from tests.actors import ADMIN
from tests.storage.pair_fixtures import ADJ, ANN, BOB, CAT, NOBODY
from tests.storage.pair_panel_fixtures import judged, sources
from tests.storage.test_pair_panels import ONE, THREE, TWO


def pair_ids(sessions, comparison_id: int) -> list[int]:
    with sessions() as session:
        return list(session.scalars(select(m.ComparisonPairRow.id)
                                    .where(m.ComparisonPairRow.comparison_id == comparison_id)
                                    .order_by(m.ComparisonPairRow.position)))


def review(sessions, who, pair_id: int, complete: str, rude: str) -> None:
    flip = shown_swapped(who.key, pair_id)
    pair_reviews.save_pair_review(
        sessions, actor=who, pair_id=pair_id, shown_swapped=flip,
        preferences={"complete": to_shown(complete, flip), "rude": to_shown(rude, flip)})


@pytest.fixture
def panel(sessions):
    src = sources(sessions)
    ids = [judged(sessions, src, model, script) for model, script in
           (("openai/one", ONE), ("openai/two", TWO), ("openai/three", THREE))]
    made = pair_panels.create_pair_panel(sessions, comparison_ids=ids, actor=ADMIN)
    return made.id, [pair_ids(sessions, cid) for cid in ids]


def test_peoples_decisions_replace_the_panels_preferences_and_are_measured_against_it(
        sessions, panel):
    panel_id, (one, two, _three) = panel
    # The panel: B wins pairs 1 and 3, A pairs 2 and 4. Two people agree B is better on
    # both criteria of pairs 1 and 2 (reviewed in member one) ...
    for who in (ANN, BOB):
        for p in one[:2]:
            review(sessions, who, p, "B", "B")
    # ... and Ann says A on pair 4 in member one, then B on the same pair in member two:
    # her latest answer on that pair counts.
    review(sessions, ANN, one[3], "A", "A")
    review(sessions, ANN, two[3], "B", "B")

    people = pair_panel_people.panel_people_results(sessions, actor=ADJ, panel_id=panel_id)
    rows = pair_panel_people.panel_preference_agreement(sessions, actor=ADJ,
                                                        panel_id=panel_id)

    judge = pair_panel_results.pair_panel_results(sessions, panel_id).summary
    assert (judge.overall.wins, judge.overall.losses) == (2, 2)
    assert (people.overall.wins, people.overall.losses, people.overall.win_rate) == (
        4, 0, 1.0)
    complete, rude = rows
    # complete: the panel said B, A, A on pairs 1, 2, 4; the people B, B, B.
    assert (complete.judge_vs_people.n, complete.judge_vs_people.percent_agreement) == (
        3, pytest.approx(100 / 3))
    # rude: the panel B, TIE (split), A; the people B, B, B.
    assert (rude.judge_vs_people.n, rude.judge_vs_people.percent_agreement) == (
        3, pytest.approx(100 / 3))
    assert complete.people.pairs == 2  # pairs answered by two people


def test_a_reviewer_sees_peoples_decisions_only_on_pairs_they_answered_whole(
        sessions, panel):
    panel_id, (one, _two, _three) = panel
    for who in (ANN, BOB):
        review(sessions, who, one[1], "B", "B")
    judge = pair_panel_results.pair_panel_results(sessions, panel_id).summary

    cat = pair_panel_people.panel_people_results(sessions, actor=CAT, panel_id=panel_id)
    ann = pair_panel_people.panel_people_results(sessions, actor=ANN, panel_id=panel_id)

    assert cat == judge  # Cat answered nothing: the panel alone
    assert ann.overall.wins == judge.overall.wins + 1
    assert [r.judge_vs_people.n for r in pair_panel_people.panel_preference_agreement(
        sessions, actor=CAT, panel_id=panel_id)] == [0, 0]


def test_people_figures_need_the_reviewer_role(sessions, panel):
    panel_id, _pairs = panel
    with pytest.raises(PermissionDeniedError):
        pair_panel_people.panel_people_results(sessions, actor=NOBODY, panel_id=panel_id)
    with pytest.raises(PermissionDeniedError):
        pair_panel_people.panel_preference_agreement(sessions, actor=NOBODY,
                                                     panel_id=panel_id)
