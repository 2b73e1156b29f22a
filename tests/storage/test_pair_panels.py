"""Panels of pairwise judges on SQLite and PostgreSQL: the panel's figures are those of
grading.pairwise.panel computed straight on the members' preferences; bad members are refused
with what is wrong and nothing written; the same members twice are one panel; roles are
checked in the service; a panel goes with its comparisons, never the other way."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from sqlalchemy import func, select, update

from grading.pairwise.panel import combine_reports
from grading.pairwise.summary import summarize
from storage import models as m
from storage.errors import ConfirmationRequiredError, InvalidInputError, NotFoundError
from storage.services import comparisons, datasets, pair_panel_results, pair_panels
from storage.services.reviewers import PermissionDeniedError
from tests.actors import ADMIN
from tests.storage.pair_fixtures import ADJ, ANN
from tests.storage.pair_panel_fixtures import judged, reports, sources

T, F = True, False
# Three judges over four pairs; criteria "complete" (weight 4) and "rude" (penalty 2).
ONE = [[("A", T), ("B", T)], [("A", T), ("TIE", F)], [("B", T), ("A", T)],
       [("A", T), ("A", T)]]
TWO = [[("B", T), ("A", T)], [("B", T), ("B", T)], [("TIE", F), ("A", T)], None]
THREE = [[("B", T), ("B", T)], [("A", T), None], [("B", T), ("CANNOT_ASSESS", T)], None]


def panel_rows(sessions) -> tuple[int, int]:
    with sessions() as session:
        return (session.scalar(select(func.count()).select_from(m.PairPanelRow)),
                session.scalar(select(func.count()).select_from(m.PairPanelMemberRow)))


@pytest.fixture
def trio(sessions):
    src = sources(sessions)
    ids = [judged(sessions, src, model, script) for model, script in
           (("openai/one", ONE), ("openai/two", TWO), ("openai/three", THREE))]
    return src, ids


def test_the_panels_figures_are_grading_pairwise_panels_on_the_members_preferences(
        sessions, trio):
    _src, ids = trio
    panel = pair_panels.create_pair_panel(sessions, comparison_ids=ids, actor=ADMIN,
                                          name="trio")

    found = pair_panel_results.pair_panel_results(sessions, panel.id)

    # Straight from the scripts: each pair's three reports combined by the library's rule.
    expected = summarize([combine_reports(list(r)) for r in zip(
        reports(ONE), reports(TWO), reports(THREE), strict=True)])
    assert found.summary == expected
    # ... and what that rule means here, by hand: complete B (judge one, alone, says A),
    # A, B (two of three say B, one a flip), A; rude B, a split (TIE, B; one failed) = TIE,
    # A (A, A; one cannot assess), A (only judge one judged pair 4: the others failed it).
    # Judge one alone would make B lose three pairs of four.
    complete, rude = found.summary.criteria
    assert (complete.tally.wins, complete.tally.ties, complete.tally.losses) == (2, 0, 2)
    assert (rude.tally.wins, rude.tally.ties, rude.tally.losses) == (1, 1, 2)
    overall = found.summary.overall
    assert (overall.wins, overall.ties, overall.losses, overall.win_rate) == (2, 0, 2, 0.5)
    # Position-consistent when every judge that voted was: not on complete of pair 2 (judge
    # two flipped) nor on rude of pair 1 (judge one flipped).
    assert (complete.consistent, rude.consistent) == (3, 3)
    assert found.summary.consistency_rate == 6 / 8
    assert found.judged_pairs == 4 and found.not_judged == []
    assert (panel.name, panel.rule, [c.id for c in panel.members]) == ("trio", "majority", ids)


def test_a_pair_no_member_judged_is_listed_with_each_members_reason(sessions):
    src = sources(sessions, pairs=2)
    one = judged(sessions, src, "openai/one", [[("B", T), ("B", T)], None])
    two = judged(sessions, src, "openai/two", [[("A", T), ("A", T)], None])
    panel = pair_panels.create_pair_panel(sessions, comparison_ids=[one, two], actor=ADMIN)

    found = pair_panel_results.pair_panel_results(sessions, panel.id)

    assert found.judged_pairs == 1
    assert found.summary.overall.ties == 1  # A 1, B 1: a split panel is a TIE
    [missing] = found.not_judged
    assert (missing.key, missing.a_id, missing.b_id) == ("q1", "q1", "q1")
    assert f"comparison #{one} did not judge it (the provider kept failing)" in missing.reason
    assert f"comparison #{two} did not judge it" in missing.reason


def _other_version(sessions, src):
    from storage.services import rubrics
    from tests.storage.pair_fixtures import CRITERIA

    other = rubrics.create_rubric(sessions, "Other", CRITERIA, actor=ADMIN).id
    return type(src)(other, src.a, src.b)


@pytest.mark.parametrize(("make", "words"), [
    pytest.param(lambda s, src, one: [one], ["at least two finished comparisons"],
                 id="one-member"),
    pytest.param(lambda s, src, one: [one, one], ["only once"], id="twice"),
    pytest.param(lambda s, src, one: [one, judged(s, _other_version(s, src), "openai/two",
                                                  ONE)],
                 ["another rubric version than comparison"], id="other-version"),
    pytest.param(lambda s, src, one: [one, judged(s, src, "openai/two", ONE, swap=True)],
                 ["the same two sources", "each as the same side"], id="sides-swapped"),
    pytest.param(lambda s, src, one: [one, judged(s, src, "openai/two", ONE,
                                                  status="running")],
                 ["is still running", "finished comparisons"], id="unfinished"),
    pytest.param(lambda s, src, one: [one, judged(s, src, "openai/two", [None] * 4,
                                                  status="failed")],
                 ["has no judged pair"], id="nothing-judged"),
    pytest.param(lambda s, src, one: [one, judged(s, src, "openai/one", ONE)],
                 ["both judged by openai/one", "different judges"], id="same-judge"),
    pytest.param(lambda s, src, one: [one, judged(s, src, "openai/two", [[("A", T)]] * 4,
                                                  holistic=True)],
                 ["asked the same way"], id="holistic-and-per-criterion"),
    pytest.param(lambda s, src, one: [one, 999], ["#999 no longer exists"], id="gone"),
])
def test_bad_members_are_refused_with_what_is_wrong_and_nothing_written(sessions, make,
                                                                          words):
    src = sources(sessions)
    one = judged(sessions, src, "openai/one", ONE)
    members = make(sessions, src, one)

    with pytest.raises((InvalidInputError, NotFoundError)) as caught:
        pair_panels.create_pair_panel(sessions, comparison_ids=members, actor=ADMIN)

    assert all(w in str(caught.value) for w in words), str(caught.value)
    assert panel_rows(sessions) == (0, 0)


def test_other_sources_are_refused(sessions):
    src = sources(sessions)
    other = sources(sessions, name="Else")
    one = judged(sessions, src, "openai/one", ONE)
    two = judged(sessions, type(src)(src.version_id, other.a, other.b), "openai/two", ONE)
    with pytest.raises(InvalidInputError, match="the same two sources"):
        pair_panels.create_pair_panel(sessions, comparison_ids=[one, two], actor=ADMIN)
    assert panel_rows(sessions) == (0, 0)


def test_only_an_admin_makes_or_deletes_a_panel(sessions, trio):
    _src, ids = trio
    for who in (ANN, ADJ):
        with pytest.raises(PermissionDeniedError, match="make a panel of pairwise judges"):
            pair_panels.create_pair_panel(sessions, comparison_ids=ids, actor=who)
    assert panel_rows(sessions) == (0, 0)
    panel = pair_panels.create_pair_panel(sessions, comparison_ids=ids, actor=ADMIN)
    with pytest.raises(PermissionDeniedError, match="delete a panel of pairwise judges"):
        pair_panels.delete_pair_panel(sessions, panel.id, actor=ANN)
    assert panel_rows(sessions) == (1, 3)


def test_the_same_members_again_in_any_order_are_the_same_panel(sessions, trio):
    _src, ids = trio
    first, made = pair_panels.ensure_pair_panel(sessions, comparison_ids=ids, actor=ADMIN)
    again, made_again = pair_panels.ensure_pair_panel(
        sessions, comparison_ids=list(reversed(ids)), actor=ADMIN)
    fewer, made_fewer = pair_panels.ensure_pair_panel(sessions, comparison_ids=ids[:2],
                                                      actor=ADMIN)

    assert (made, made_again, made_fewer) == (True, False, True)
    assert again.id == first.id != fewer.id
    assert [p.id for p in pair_panels.list_pair_panels(sessions)] == [fewer.id, first.id]


def test_two_clicks_at_the_same_moment_make_one_panel(sessions, trio):
    _src, ids = trio
    barrier = Barrier(2)

    def make(_n):
        barrier.wait()
        return pair_panels.create_pair_panel(sessions, comparison_ids=ids, actor=ADMIN).id

    with ThreadPoolExecutor(2) as pool:
        made = list(pool.map(make, range(2)))

    assert made[0] == made[1]
    assert panel_rows(sessions) == (1, 3)


def test_deleting_a_panel_keeps_its_comparisons_and_deleting_a_member_removes_the_panel(
        sessions, trio):
    src, ids = trio
    kept = pair_panels.create_pair_panel(sessions, comparison_ids=ids, actor=ADMIN)
    pair_panels.delete_pair_panel(sessions, kept.id, actor=ADMIN)
    assert panel_rows(sessions) == (0, 0)
    assert len(comparisons.list_comparisons(sessions)) == 3
    with pytest.raises(NotFoundError, match=f"panel P{kept.id} of pairwise judges does not"):
        pair_panel_results.pair_panel_results(sessions, kept.id)

    pair_panels.create_pair_panel(sessions, comparison_ids=ids, actor=ADMIN)
    pair_panels.create_pair_panel(sessions, comparison_ids=ids[:2], actor=ADMIN)
    summary = datasets.deletion_summary(sessions, src.b)
    assert (summary.comparisons, summary.pair_panels) == (3, 2)
    with pytest.raises(ConfirmationRequiredError,
                       match="3 comparisons, and the 2 panels of pairwise judges built on them"):
        datasets.delete_dataset(sessions, src.b, actor=ADMIN)
    assert panel_rows(sessions)[0] == 2
    datasets.delete_dataset(sessions, src.b, confirm=True, actor=ADMIN)

    assert panel_rows(sessions) == (0, 0)
    assert comparisons.list_comparisons(sessions) == []


def test_a_member_judging_again_shows_in_the_panel_at_once(sessions, trio):
    """The panel is computed from its members when read: a resumed member's new pair
    counts as soon as it is stored."""
    _src, ids = trio
    panel = pair_panels.create_pair_panel(sessions, comparison_ids=ids[1:], actor=ADMIN)
    before = pair_panel_results.pair_panel_results(sessions, panel.id)
    assert before.judged_pairs == 3 and len(before.not_judged) == 1
    with sessions.begin() as session:
        pair = session.scalars(select(m.ComparisonPairRow).where(
            m.ComparisonPairRow.comparison_id == ids[1], m.ComparisonPairRow.state == "failed")
        ).first()
        session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pair.id)
                        .values(state="done", error=None))
        for n, crit in enumerate(session.scalars(select(m.CriterionRow.id).where(
                m.CriterionRow.version_id == pair_panels.get_pair_panel(
                    sessions, panel.id).rubric_version_id).order_by(m.CriterionRow.position))):
            session.add(m.ComparisonPreferenceRow(pair_id=pair.id, criterion_id=crit,
                                                  position=n, first="B", second="A",
                                                  preference="B", consistent=True))

    after = pair_panel_results.pair_panel_results(sessions, panel.id)

    assert after.judged_pairs == 4 and after.not_judged == []
    assert after.summary.overall.wins == before.summary.overall.wins + 1
