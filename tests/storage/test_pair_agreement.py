"""Agreement on a comparison's preferences, read from the database: the judge against the
people's effective preference (agreed or adjudicated; a disputed pair is not one), the
people's own agreement, and blindness (a reviewer measures on the pairs they answered).
SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from storage.services import pair_agreement, pair_reviews
from storage.services.pair_sides import shown_swapped, to_shown
from storage.services.reviewers import PermissionDeniedError
from tests.storage.pair_fixtures import ADJ, ANN, BOB, NOBODY, make_comparison


def give(sessions, who, pair_id, complete: str, rude: str) -> None:
    """Save in the comparison's own terms (turned into what ``who`` is shown)."""
    flip = shown_swapped(who.key, pair_id)
    pair_reviews.save_pair_review(
        sessions, actor=who, pair_id=pair_id, shown_swapped=flip,
        preferences={"complete": to_shown(complete, flip), "rude": to_shown(rude, flip)})


def test_judge_against_people_and_people_among_themselves_per_criterion(sessions):
    cid, pairs, _names = make_comparison(sessions, pairs=6, judge=("A", "B"))
    ann = ["A", "A", "B", "TIE", "A", "B"]
    bob = ["A", "A", "B", "TIE", "B", "B"]  # disputes pair 4
    for n, p in enumerate(pairs):
        give(sessions, ANN, p, ann[n], "B")
        if n < 5:
            give(sessions, BOB, p, bob[n], "B")
    pair_reviews.adjudicate_pair(sessions, actor=ADJ, pair_id=pairs[2], criterion="complete",
                                 side="TIE")

    complete, rude = pair_agreement.preference_agreement(
        sessions, actor=ADJ, comparison_id=cid, resamples=200)

    # Effective people's preferences: pair 2 adjudicated TIE, pair 4 disputed (left out),
    # pair 5 answered by ANN alone.
    people = ["A", "A", "TIE", "TIE", "B"]
    judge = ["A"] * 5
    assert complete.criterion == "complete"
    assert complete.judge_vs_people.n == 5
    assert complete.judge_vs_people.percent_agreement == pytest.approx(40.0)
    assert complete.judge_vs_people.kappa == pytest.approx(
        cohen_kappa_score(judge, people, labels=["A", "TIE", "B"]))
    # People among themselves: pairs 0-4 (two reviewers), 4 of 5 agree.
    assert (complete.people.pairs, complete.people.reviewer_pairs) == (5, 5)
    assert complete.people.percent_agreement == pytest.approx(80.0)
    assert rude.judge_vs_people.percent_agreement == 100.0
    assert rude.judge_vs_people.kappa is None and "undefined" in rude.judge_vs_people.note


def test_a_reviewer_measures_only_on_the_pairs_they_answered(sessions):
    cid, pairs, _names = make_comparison(sessions, pairs=3, judge=("A", "B"))
    for p in pairs:
        give(sessions, BOB, p, "B", "B")
    give(sessions, ANN, pairs[0], "B", "B")

    [complete, _rude] = pair_agreement.preference_agreement(
        sessions, actor=ANN, comparison_id=cid, resamples=50)
    assert (complete.judge_vs_people.n, complete.people.pairs) == (1, 1)
    [everyone, _rude] = pair_agreement.preference_agreement(
        sessions, actor=ADJ, comparison_id=cid, resamples=50)
    assert (everyone.judge_vs_people.n, everyone.people.pairs) == (3, 1)
    with pytest.raises(PermissionDeniedError):
        pair_agreement.preference_agreement(sessions, actor=NOBODY, comparison_id=cid)
