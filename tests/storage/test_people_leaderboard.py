"""The leaderboard from people's preferences (comparison_leaderboard.people_leaderboard):
only pairs people decided on every criterion count, each pair's winner from their sides
through the one aggregation function; it says how many pairs it rests on; a blind reviewer
ranks only the pairs they answered whole. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from storage import models as m
from storage.services import comparison_leaderboard, datasets, pair_reviews, rubrics
from storage.services.pair_sides import shown_swapped
from storage.services.reviewers import PermissionDeniedError
from tests.actors import ADMIN
from tests.storage.pair_fixtures import ADJ, ANN, BOB, CRITERIA, NOBODY
from tests.storage.test_pair_leaderboard import _judged

_MIRROR = {"A": "B", "B": "A"}


def _pairs(sessions, comparison_id: int) -> list[int]:
    with sessions() as session:
        return list(session.scalars(select(m.ComparisonPairRow.id).where(
            m.ComparisonPairRow.comparison_id == comparison_id,
            m.ComparisonPairRow.kind == "pair").order_by(m.ComparisonPairRow.position)))


def _say(sessions, who, pair_id: int, complete: str, rude: str) -> None:
    swapped = shown_swapped(who.key, pair_id)
    shown = (lambda s: _MIRROR.get(s, s)) if swapped else (lambda s: s)
    pair_reviews.save_pair_review(sessions, actor=who, pair_id=pair_id, shown_swapped=swapped,
                                  preferences={"complete": shown(complete),
                                               "rude": shown(rude)})


@pytest.fixture
def three(sessions):
    """v1, v2, v3 compared two by two; the judge says B wins everywhere (v3 > v2 > v1)."""
    version = rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN).id
    ids = [datasets.create_dataset(sessions, name, actor=ADMIN, responses=[
        {"id": f"q{k}", "query": f"Q{k}?", "text": f"{name} {k}"} for k in range(3)]).id
        for name in ("v1", "v2", "v3")]
    duels = [_judged(sessions, version, ids[0], ids[1], ["B"] * 3),
             _judged(sessions, version, ids[1], ids[2], ["B"] * 3),
             _judged(sessions, version, ids[0], ids[2], ["B"] * 3)]
    return version, duels


def test_people_who_prefer_a_rank_the_sources_the_other_way(sessions, three):
    version, duels = three
    for duel in duels:  # people decided two pairs of each duel: A better on both criteria
        for pid in _pairs(sessions, duel)[:2]:
            _say(sessions, ANN, pid, "A", "A")
            _say(sessions, BOB, pid, "A", "A")
        disputed = _pairs(sessions, duel)[2]  # the third is disputed: not counted
        _say(sessions, ANN, disputed, "B", "B")
        _say(sessions, BOB, disputed, "A", "B")

    judge = comparison_leaderboard.rubric_leaderboard(sessions, version, resamples=50)
    people = comparison_leaderboard.people_leaderboard(sessions, version, actor=ADMIN,
                                                       resamples=50)

    assert [s.source for s in judge.standings] == ["v3", "v2", "v1"]
    assert [s.source for s in people.standings] == ["v1", "v2", "v3"]
    assert (people.basis, people.pairs, people.candidate_pairs) == ("people", 6, 9)
    assert people.comparison_ids == tuple(duels)
    assert all(s.interval is not None and s.interval.low is not None
               for s in people.standings)
    assert [s.comparisons for s in people.standings] == [4, 4, 4]


def test_an_adjudication_decides_a_pair_and_a_half_decided_pair_is_left_out(sessions, three):
    version, duels = three
    assert comparison_leaderboard.people_leaderboard(sessions, version, actor=ADMIN) is None
    first = _pairs(sessions, duels[0])
    for criterion in ("complete", "rude"):
        pair_reviews.adjudicate_pair(sessions, actor=ADJ, pair_id=first[0],
                                     criterion=criterion, side="A")
    pair_reviews.adjudicate_pair(sessions, actor=ADJ, pair_id=first[1],
                                 criterion="complete", side="A")  # "rude" undecided
    assert comparison_leaderboard.people_leaderboard(
        sessions, version, actor=ADMIN, resamples=10).pairs == 1
    second = _pairs(sessions, duels[1])[0]
    _say(sessions, ANN, second, "TIE", "TIE")

    board = comparison_leaderboard.people_leaderboard(sessions, version, actor=ADMIN,
                                                      resamples=20)

    assert board.pairs == 2  # first[0] (v1 over v2) and second (v2 ties v3)
    assert board.standings[0].source == "v1"


def test_a_blind_reviewer_ranks_only_the_pairs_they_answered(sessions, three):
    version, duels = three
    for duel in duels:
        for pid in _pairs(sessions, duel):
            _say(sessions, BOB, pid, "A", "A")
    own = _pairs(sessions, duels[0])[0]
    _say(sessions, ANN, own, "A", "A")  # Ann agrees with Bob on one pair only

    assert comparison_leaderboard.people_leaderboard(
        sessions, version, actor=ANN, resamples=10).pairs == 1
    assert comparison_leaderboard.people_leaderboard(
        sessions, version, actor=ADMIN, resamples=10).pairs == 9
    with pytest.raises(PermissionDeniedError):
        comparison_leaderboard.people_leaderboard(sessions, version, actor=NOBODY)
