"""A comparison calibrated with pairs people decided: the judge's prompts (recorded by the
fake provider, over the real litellm HTTP path) carry the decided pairs with people's side
and note, never a pair as its own example; the example pairs are left out of the win rate;
disputed pairs are never examples; with no decided pair, nothing is written. SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from storage import models as m
from storage.errors import InvalidInputError
from storage.jobs.comparison_runner import run_comparison
from storage.services import comparisons, pair_agreement, pair_results
from storage.services.pair_calibration import PairCalibration
from storage.services.pair_reviews import adjudicate_pair, save_pair_review
from storage.services.pair_sides import shown_swapped
from tests.actors import ADMIN
from tests.jobs.test_comparison_runs import FAST, create, setup
from tests.storage.pair_fixtures import ADJ, ANN, BOB

__all__ = ["setup"]
_SHOWN = {"A": "B", "B": "A"}


def _pairs(sessions, comparison_id: int) -> dict[str, int]:
    with sessions() as session:
        return dict(session.execute(
            select(m.ComparisonPairRow.match_key, m.ComparisonPairRow.id)
            .where(m.ComparisonPairRow.comparison_id == comparison_id,
                   m.ComparisonPairRow.kind == "pair")).all())


def review(sessions, who, pair_id: int, side: str, note: str = "") -> None:
    """``who`` prefers ``side`` (in the comparison's terms) on both criteria of the pair."""
    swapped = shown_swapped(who.key, pair_id)
    shown = _SHOWN.get(side, side) if swapped else side
    save_pair_review(sessions, actor=who, pair_id=pair_id, shown_swapped=swapped,
                     preferences={"complete": (shown, note), "rude": (shown, note)})


@pytest.fixture
def reviewed(sessions, fake_provider, setup):
    """A judged comparison whose q1 people agreed on (B, with a note), q4 an adjudicator
    decided (A) and q2 is disputed."""
    first = create(sessions, fake_provider, *setup)
    pairs = _pairs(sessions, first.id)
    review(sessions, ANN, pairs["q1"], "B", "B lists every step")
    review(sessions, BOB, pairs["q1"], "B")
    review(sessions, ANN, pairs["q2"], "A", "disputed note")
    review(sessions, BOB, pairs["q2"], "B")
    for criterion in ("complete", "rude"):
        adjudicate_pair(sessions, actor=ADJ, pair_id=pairs["q4"], criterion=criterion,
                        side="A", note="A is the full answer")
    return first


async def test_the_judge_is_shown_the_decided_pairs_and_they_are_left_out_of_the_win_rate(
        sessions, fake_provider, setup, reviewed):
    calibrated = create(sessions, fake_provider, *setup,
                        calibration=PairCalibration(k=2, seed=0))
    assert sorted(calibrated.settings["calibration"]["left_out"]) == ["q1", "q4"]

    ended = await run_comparison(sessions, calibrated.id, actor=ADMIN, **FAST)

    assert (ended.status, ended.done_count) == ("done", 4)
    prompts = [b["messages"][-1]["content"] for b in fake_provider.bodies
               if "pairwise" in str(b.get("response_format"))]
    assert len(prompts) == 4 * 2 * 2
    for prompt in prompts:
        examples, pair = prompt.split("The pair to compare:")
        assert "disputed note" not in examples  # q2 is disputed: never an example
        # never the pair itself: q1's prompts show q4 only, q4's show q1 only
        if "one more" in pair:
            assert "one more" not in examples and "A is the full answer" in examples
        elif "four words are here" in pair:
            assert "four words" not in examples and "B lists every step" in examples
        else:
            assert "B lists every step" in examples and "A is the full answer" in examples
    results = comparisons.comparison_results(sessions, calibrated.id)
    assert results.examples_left_out == 2
    # q2 and q3 only: B longer on both (q1, a B win, and q4, an A win, left out)
    overall = results.summary.overall
    assert (overall.judged, overall.wins, overall.losses) == (2, 2, 0)
    uncalibrated = comparisons.comparison_results(sessions, reviewed.id)
    assert uncalibrated.examples_left_out == 0
    people = pair_results.people_results(sessions, actor=ADMIN, comparison_id=calibrated.id)
    assert people.overall.judged == 2


async def test_judge_vs_people_leaves_the_example_pairs_out(sessions, fake_provider, setup,
                                                            reviewed):
    calibrated = create(sessions, fake_provider, *setup, calibration=PairCalibration(k=2))
    await run_comparison(sessions, calibrated.id, actor=ADMIN, **FAST)
    pairs = _pairs(sessions, calibrated.id)
    for key in ("q1", "q3"):  # q1 is an example, q3 is not
        review(sessions, ANN, pairs[key], "B")

    [complete, _rude] = pair_agreement.preference_agreement(
        sessions, actor=ADMIN, comparison_id=calibrated.id, resamples=20)

    assert complete.judge_vs_people.n == 1


def test_without_a_decided_pair_a_calibrated_comparison_is_refused_and_nothing_written(
        sessions, fake_provider, setup):
    first = create(sessions, fake_provider, *setup)
    pairs = _pairs(sessions, first.id)
    review(sessions, ANN, pairs["q1"], "A")
    review(sessions, BOB, pairs["q1"], "B")  # disputed only

    with pytest.raises(InvalidInputError, match="no pair compared on this rubric version"):
        create(sessions, fake_provider, *setup, calibration=PairCalibration(k=2))

    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(m.ComparisonRow)) == 1


@pytest.mark.parametrize("k", [0, 21, "2"])
def test_a_bad_number_of_examples_is_refused(k):
    with pytest.raises(InvalidInputError, match="calibration examples per criterion"):
        PairCalibration(k=k)


async def test_a_calibrated_comparison_keeps_its_examples_when_their_sources_are_deleted(
        sessions, fake_provider, setup, reviewed):
    from storage.services import datasets
    from tests.jobs.test_comparison_runs import A_ROWS, B_ROWS, source

    version, old, _new = setup
    other = (version, source(sessions, "Old again", A_ROWS[:3]),
             source(sessions, "New again", B_ROWS[:3]))
    calibrated = create(sessions, fake_provider, *other, calibration=PairCalibration(k=2, seed=0))
    # the examples' own comparison goes with its dataset, before the calibrated one is judged
    datasets.delete_dataset(sessions, old, confirm=True, delete_human_verdicts=True,
                            actor=ADMIN)
    with sessions() as session:
        assert session.get(m.ComparisonRow, reviewed.id) is None

    ended = await run_comparison(sessions, calibrated.id, actor=ADMIN, **FAST)

    assert (ended.status, ended.done_count, ended.error) == ("done", 3, None)
    prompts = [b["messages"][-1]["content"] for b in fake_provider.bodies
               if "pairwise" in str(b.get("response_format"))]
    calibrated_prompts = prompts[-3 * 2 * 2:]  # 3 pairs x 2 criteria x 2 orders, judged last
    for prompt in calibrated_prompts:
        examples, pair = prompt.split("The pair to compare:")
        assert "A is the full answer" in examples  # q4's example: no such pair here
        # q1's own texts are an example: shown for q2 and q3, never for q1 itself
        assert ("B lists every step" in examples) == ("one more" not in pair)


async def test_a_panel_leaves_out_the_pairs_a_calibrated_member_was_shown(
        sessions, fake_provider, setup, reviewed):
    from storage.services import pair_panel_results, pair_panels
    from tests.jobs.test_comparison_runs import Source

    version, a, b = setup
    await run_comparison(sessions, reviewed.id, actor=ADMIN, **FAST)
    calibrated = comparisons.create_comparison(
        sessions, rubric_version_id=version, a=Source(a), b=Source(b), model="openai/judge-2",
        settings={"api_base": fake_provider.api_base, "timeout": 10.0}, actor=ADMIN,
        calibration=PairCalibration(k=2, seed=0))
    await run_comparison(sessions, calibrated.id, actor=ADMIN, **FAST)
    assert comparisons.comparison_results(sessions, calibrated.id).summary.pairs == 2

    panel = pair_panels.create_pair_panel(sessions, comparison_ids=[reviewed.id, calibrated.id],
                                          actor=ADMIN)
    found = pair_panel_results.pair_panel_results(sessions, panel.id)
    # q1 and q4 were the calibrated member's examples: out of the panel's figures too
    assert found.judged_pairs == 2 and found.summary.pairs == 2
