"""People review comparison pairs: sides randomised per reviewer and pair (the same on a
reload) and mapped back, append-only preferences per reviewer, bad input refused with
nothing written, consensus and adjudication as for single verdicts, blindness, the pair's
result through the one aggregation function, roles, and concurrent saves. SQLite and
PostgreSQL (the ``sessions`` fixture)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from sqlalchemy import func, select

from storage import models as m
from storage.errors import InvalidInputError, InvalidStateError, StaleVerdictError
from storage.services import pair_results, pair_reviews
from storage.services.pair_sides import shown_swapped
from storage.services.reviewers import IdentityChangedError, PermissionDeniedError, Role
from tests.storage.pair_fixtures import (
    ADJ,
    ANN,
    BOB,
    CAT,
    NOBODY,
    make_comparison,
    pair_shown,
    person,
)


def rows(sessions) -> list[tuple]:
    with sessions() as session:
        return [(r.pair_id, r.position, r.stream, r.seq, r.side, r.swapped) for r in
                session.scalars(select(m.PairReviewRow).order_by(m.PairReviewRow.id))]


def save(sessions, actor, pair_id, answers, **kw):
    return pair_reviews.save_pair_review(
        sessions, actor=actor, pair_id=pair_id, preferences=answers,
        shown_swapped=shown_swapped(actor.key, pair_id), **kw)


def test_sides_are_randomised_per_reviewer_and_pair_and_the_same_on_reload(sessions):
    _cid, pairs, _names = make_comparison(sessions, pairs=8)

    seen = {(who.key, p): pair_reviews.pair_for_review(sessions, actor=who, pair_id=p).swapped
            for who in (ANN, BOB) for p in pairs}
    again = {(who.key, p): pair_reviews.pair_for_review(sessions, actor=who, pair_id=p).swapped
             for who in (ANN, BOB) for p in pairs}

    assert seen == again
    assert set(seen.values()) == {True, False}  # both sides occur over 16 (reviewer, pair)
    assert [seen[ANN.key, p] for p in pairs] != [seen[BOB.key, p] for p in pairs]


def test_the_left_key_maps_back_to_the_response_shown_on_the_left(sessions):
    _cid, pairs, names = make_comparison(sessions, pairs=8)
    complete, rude = names
    flipped = pair_shown(ANN, pairs, swapped=True)
    straight = pair_shown(ANN, pairs, swapped=False)

    shown = pair_reviews.pair_for_review(sessions, actor=ANN, pair_id=flipped)
    assert (shown.swapped, shown.left.startswith("new"), shown.right.startswith("old")) == (
        True, True, True)
    save(sessions, ANN, flipped, {complete: "A", rude: "t"})  # "A": the left one, i.e. B
    save(sessions, ANN, straight, {complete: "A", rude: "B"})

    assert rows(sessions) == [(flipped, 0, ANN.key, 1, "B", True),
                              (flipped, 1, ANN.key, 1, "TIE", True),
                              (straight, 0, ANN.key, 1, "A", False),
                              (straight, 1, ANN.key, 1, "B", False)]
    reloaded = pair_reviews.pair_for_review(sessions, actor=ANN, pair_id=flipped)
    assert reloaded.mine == {0: "A", 1: "TIE"}  # shown again as the reviewer gave them
    assert reloaded.answered


@pytest.mark.parametrize(("answers", "words"), [
    pytest.param({999: "A"}, ["criterion 999 is not a criterion of this comparison",
                              "'complete'", "'rude'"], id="unknown-criterion-id"),
    pytest.param({"politeness": "A"}, ["'politeness' is not a criterion"], id="unknown-name"),
    pytest.param({"complete": "A", "rude": "left"},
                 ["criterion 'rude'", "'left' is not a side", "A (the left response)"],
                 id="unknown-side"),
    pytest.param({"complete": ""}, ["'' is not a side"], id="empty-side"),
    pytest.param({}, ["at least one criterion"], id="nothing"),
    pytest.param({"complete": "A", "COMPLETE": "B"}, ["'complete' is given twice"],
                 id="one-criterion-twice"),
])
def test_an_unknown_criterion_or_side_is_named_and_nothing_is_written(sessions, answers, words):
    _cid, pairs, _names = make_comparison(sessions)

    with pytest.raises(InvalidInputError) as caught:
        save(sessions, ANN, pairs[0], answers)

    assert all(w in str(caught.value) for w in words), str(caught.value)
    assert rows(sessions) == []


def test_answers_given_on_other_sides_than_shown_are_refused(sessions):
    _cid, pairs, _names = make_comparison(sessions)
    with pytest.raises(InvalidInputError, match="reload the pair"):
        pair_reviews.save_pair_review(
            sessions, actor=ANN, pair_id=pairs[0], preferences={"complete": "A"},
            shown_swapped=not shown_swapped(ANN.key, pairs[0]))
    with pytest.raises(IdentityChangedError):
        save(sessions, ANN, pairs[0], {"complete": "A"}, shown_as=BOB.key)
    assert rows(sessions) == []


def test_a_pair_that_was_not_compared_cannot_be_reviewed(sessions):
    _cid, pairs, _names = make_comparison(sessions)
    with sessions.begin() as session:
        session.get(m.ComparisonPairRow, pairs[0]).kind = "identical"
    with pytest.raises(InvalidStateError, match="is not reviewed"):
        save(sessions, ANN, pairs[0], {"complete": "A"})


def test_a_change_is_a_new_row_and_the_latest_counts(sessions):
    _cid, pairs, _names = make_comparison(sessions)
    p = pairs[0]
    first = save(sessions, ANN, p, {"complete": "A", "rude": "A"})
    second = save(sessions, ANN, p, {"complete": ("B", "read it again")},
                  expected={"complete": first[0].id})

    assert [r[2:4] for r in rows(sessions)] == [(ANN.key, 1), (ANN.key, 1), (ANN.key, 2)]
    assert second[0].replaces_id == first[0].id and second[0].note == "read it again"
    history = pair_reviews.pair_history(sessions, actor=ANN, pair_id=p)
    assert len(history) == 3
    shown = pair_reviews.pair_for_review(sessions, actor=ANN, pair_id=p)
    assert shown.mine == {0: "B", 1: "A"}  # the latest, as it was shown and given
    assert shown.mine_ids[0] == second[0].id


def test_a_stale_form_from_another_tab_is_refused_and_nothing_is_written(sessions):
    _cid, pairs, _names = make_comparison(sessions)
    p = pairs[0]
    save(sessions, ANN, p, {"complete": "A"})  # the other tab saved first

    with pytest.raises(StaleVerdictError, match="changed this preference"):
        save(sessions, ANN, p, {"rude": "B", "complete": "B"},
             expected={"rude": None, "complete": None})
    assert len(rows(sessions)) == 1


def test_consensus_agreed_disputed_and_adjudicated_as_for_single_verdicts(sessions):
    cid, pairs, _names = make_comparison(sessions)
    p = pairs[0]
    for who in (ANN, BOB):  # the same sides in the comparison's terms, whatever was shown
        flip = shown_swapped(who.key, p)
        save(sessions, who, p, {"complete": "A" if flip else "B", "rude": "T"})
    result = pair_results.pair_result(sessions, actor=ADJ, pair_id=p)
    assert {n: (d.status, d.side) for n, d in result.decisions.items()} == {
        0: ("agreed", "B"), 1: ("agreed", "TIE")}
    assert pair_results.pair_adjudication_queue(sessions, actor=ADJ, comparison_id=cid) == []

    flip = shown_swapped(CAT.key, p)
    save(sessions, CAT, p, {"complete": "B" if flip else "A", "rude": "T"})  # CAT: A
    result = pair_results.pair_result(sessions, actor=ADJ, pair_id=p)
    assert (result.decisions[0].status, result.decisions[0].side) == ("disputed", None)
    assert result.sources == {0: "judge", 1: "people"}
    [waiting] = pair_results.pair_adjudication_queue(sessions, actor=ADJ, comparison_id=cid)
    assert (waiting.pair_id, waiting.criterion, waiting.judge) == (p, "complete", "A")
    assert sorted((r.reviewer_key, r.side) for r in waiting.reviews) == [
        (ANN.key, "B"), (BOB.key, "B"), (CAT.key, "A")]

    pair_reviews.adjudicate_pair(sessions, actor=ADJ, pair_id=p, criterion="complete",
                                 side="B", note="B lists every step")
    result = pair_results.pair_result(sessions, actor=ADJ, pair_id=p)
    assert (result.decisions[0].status, result.decisions[0].side) == ("adjudicated", "B")
    assert pair_results.pair_adjudication_queue(sessions, actor=ADJ, comparison_id=cid) == []


def test_the_people_result_replaces_the_judge_through_the_one_aggregation(sessions):
    cid, pairs, _names = make_comparison(sessions, pairs=2, judge=("A", "A"))
    p = pairs[0]
    for who in (ANN, BOB):
        flip = shown_swapped(who.key, p)
        save(sessions, who, p, {"complete": "A" if flip else "B", "rude": "T"})

    result = pair_results.pair_result(sessions, actor=ANN, pair_id=p)

    # complete (|w| 4): B = 1; rude (|w| 2): TIE = 0.5 -> (4 + 1) / 6
    assert result.report.score == pytest.approx(5 / 6)
    assert (result.report.winner, result.judge.score, result.judge.winner) == ("B", 0.0, "A")
    summary = pair_results.people_results(sessions, actor=ADJ, comparison_id=cid,
                                          resamples=50)
    assert (summary.overall.wins, summary.overall.losses) == (1, 1)
    assert (summary.criteria[0].tally.wins, summary.criteria[1].tally.ties) == (1, 1)
    # A reviewer who answered nothing gets the judge's results: the people's are hidden.
    blind = pair_results.people_results(sessions, actor=CAT, comparison_id=cid, resamples=50)
    assert (blind.overall.wins, blind.overall.losses) == (0, 2)


def test_an_agreed_cannot_assess_leaves_the_criterion_out_of_the_result(sessions):
    _cid, pairs, _names = make_comparison(sessions, pairs=1, judge=("A", "A"))
    p = pairs[0]
    flip = shown_swapped(ANN.key, p)
    save(sessions, ANN, p, {"complete": "CANNOT_ASSESS", "rude": "A" if flip else "B"})
    result = pair_results.pair_result(sessions, actor=ANN, pair_id=p)
    assert (result.report.score, result.report.scored_count) == (1.0, 1)


def test_a_reviewer_who_has_not_answered_sees_neither_the_judge_nor_other_people(sessions):
    _cid, pairs, _names = make_comparison(sessions, judge=("B", "TIE"))
    p = pairs[0]
    save(sessions, BOB, p, {"complete": ("A", "Bob's reason"), "rude": "A"})

    before = pair_reviews.pair_for_review(sessions, actor=ANN, pair_id=p)
    assert (before.revealed, before.mine, before.answered) == (None, {}, False)
    with pytest.raises(PermissionDeniedError, match="answer every criterion"):
        pair_results.pair_result(sessions, actor=ANN, pair_id=p)
    assert pair_reviews.pair_history(sessions, actor=ANN, pair_id=p) == []

    save(sessions, ANN, p, {"complete": "A"})  # half the pair: still blind
    half = pair_reviews.pair_for_review(sessions, actor=ANN, pair_id=p)
    assert half.revealed is None
    assert [h.reviewer_key for h in pair_reviews.pair_history(
        sessions, actor=ANN, pair_id=p)] == [ANN.key]

    save(sessions, ANN, p, {"rude": "T"})
    after = pair_reviews.pair_for_review(sessions, actor=ANN, pair_id=p)
    assert (after.revealed.a_label, after.revealed.b_label) == ("Old prompt", "New prompt")
    assert after.revealed.judge == {0: "B", 1: "TIE"}
    assert {r.reviewer_key for d in after.revealed.decisions.values() for r in d.reviews} == {
        ANN.key, BOB.key}
    # An adjudicator sees everything without answering, unless reviewing blind (the form).
    assert pair_reviews.pair_for_review(sessions, actor=ADJ, pair_id=p,
                                        blind=False).revealed is not None
    assert pair_reviews.pair_for_review(sessions, actor=ADJ, pair_id=p).revealed is None


def test_roles_are_enforced_by_the_service(sessions):
    cid, pairs, _names = make_comparison(sessions)
    with pytest.raises(PermissionDeniedError, match="review a comparison pair"):
        save(sessions, NOBODY, pairs[0], {"complete": "A"})
    with pytest.raises(PermissionDeniedError, match="adjudicate"):
        pair_reviews.adjudicate_pair(sessions, actor=ANN, pair_id=pairs[0],
                                     criterion="complete", side="A")
    with pytest.raises(PermissionDeniedError):
        pair_results.pair_adjudication_queue(sessions, actor=ANN, comparison_id=cid)
    assert rows(sessions) == []


def test_two_reviewers_and_two_tabs_saving_the_same_pair_at_once_all_land(sessions):
    _cid, pairs, _names = make_comparison(sessions, pairs=1)
    p = pairs[0]
    writers = [ANN, BOB, CAT, ANN, BOB]  # ANN and BOB also from a second tab
    barrier = Barrier(len(writers))

    def write(who):
        barrier.wait()
        return save(sessions, who, p, {"complete": "A", "rude": "B"})

    with ThreadPoolExecutor(len(writers)) as pool:
        done = list(pool.map(write, writers))

    assert all(len(saved) == 2 for saved in done)
    with sessions() as session:
        seqs = session.execute(
            select(m.PairReviewRow.stream, func.max(m.PairReviewRow.seq),
                   func.count()).group_by(m.PairReviewRow.stream)
            .where(m.PairReviewRow.position == 0)).all()
    assert sorted(seqs) == [(ANN.key, 2, 2), (BOB.key, 2, 2), (CAT.key, 1, 1)]


def test_a_holistic_comparison_is_reviewed_on_its_one_question(sessions):
    _cid, pairs, _names = make_comparison(sessions, pairs=1, judge=("A",), holistic=True)
    p = pairs[0]
    reviewer = person("dan@example.org")
    flip = shown_swapped(reviewer.key, p)
    save(sessions, reviewer, p, {None: "A" if flip else "B"})
    result = pair_results.pair_result(sessions, actor=reviewer, pair_id=p)
    assert (result.report.winner, result.judge.winner) == ("B", "A")
    with pytest.raises(InvalidInputError, match="None \\(holistic\\)"):
        save(sessions, reviewer, p, {"complete": "A"})


def test_people_reviews_of_pairs_keep_their_dataset_and_rubric_as_verdicts_do(sessions):
    from storage.errors import ConfirmationRequiredError, HumanVerdictsExistError
    from storage.services import comparisons, datasets, rubrics
    from tests.actors import ADMIN

    cid, pairs, _names = make_comparison(sessions)
    made = comparisons.get_comparison(sessions, cid)
    save(sessions, ANN, pairs[0], {"complete": "A", "rude": "A"})
    save(sessions, ANN, pairs[0], {"complete": "B"})  # a change: two links of one history

    summary = datasets.deletion_summary(sessions, made.source_b.dataset_id)
    assert (summary.human_verdicts, summary.comparisons) == (3, 1)
    with pytest.raises(HumanVerdictsExistError, match="3 human verdicts"):
        datasets.delete_dataset(sessions, made.source_b.dataset_id, confirm=True, actor=ADMIN)
    version = rubrics.get_version(sessions, made.rubric_version_id)
    with pytest.raises(HumanVerdictsExistError):
        rubrics.delete_rubric(sessions, version.rubric_id, confirm=True, actor=ADMIN)
    assert len(rows(sessions)) == 3

    with pytest.raises(ConfirmationRequiredError, match="1 comparisons"):
        datasets.delete_dataset(sessions, made.source_b.dataset_id, delete_human_verdicts=True,
                                actor=ADMIN)
    datasets.delete_dataset(sessions, made.source_b.dataset_id, confirm=True,
                            delete_human_verdicts=True, actor=ADMIN)
    assert rows(sessions) == [] and comparisons.list_comparisons(sessions) == []


def test_an_adjudication_made_on_a_stale_view_is_refused_and_writes_nothing(sessions):
    """What the adjudicator saw (no adjudication, each reviewer's current answer) is checked
    in the same transaction: a decision made meanwhile, or a reviewer's new answer, makes
    the decision stale."""
    cid, pairs, _names = make_comparison(sessions, pairs=1, judge=("A", "A"))
    p = pairs[0]
    for who, side in ((ANN, "A"), (BOB, "B"), (CAT, "B")):
        flip = shown_swapped(who.key, p)
        save(sessions, who, p, {"complete": {"A": "B", "B": "A"}[side] if flip else side,
                                "rude": "T"})
    [item] = pair_results.pair_adjudication_queue(sessions, actor=ADJ, comparison_id=cid)
    seen = {r.reviewer_key: r.id for r in item.reviews}
    before = rows(sessions)

    save(sessions, CAT, p, {"complete": "T"})  # still disputed, but not what was seen
    with pytest.raises(StaleVerdictError,
                       match=r"Cat answered TIE on complete at .* while you were deciding"):
        pair_reviews.adjudicate_pair(sessions, actor=ADJ, pair_id=p, criterion="complete",
                                     side="B", expected_current_id=None,
                                     expected_reviews=seen)
    assert len(rows(sessions)) == len(before) + 1  # CAT's answer only

    [item] = pair_results.pair_adjudication_queue(sessions, actor=ADJ, comparison_id=cid)
    seen = {r.reviewer_key: r.id for r in item.reviews}
    other = person("dee@example.org", Role.ADJUDICATOR)
    pair_reviews.adjudicate_pair(sessions, actor=other, pair_id=p, criterion="complete",
                                 side="A", expected_current_id=None, expected_reviews=seen)
    with pytest.raises(StaleVerdictError, match="Dee changed this preference to A"):
        pair_reviews.adjudicate_pair(sessions, actor=ADJ, pair_id=p, criterion="complete",
                                     side="B", expected_current_id=None,
                                     expected_reviews=seen)
    result = pair_results.pair_result(sessions, actor=ADJ, pair_id=p)
    assert (result.decisions[0].status, result.decisions[0].side) == ("adjudicated", "A")
