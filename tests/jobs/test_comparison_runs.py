"""Judging a stored comparison over the real litellm HTTP path against the fake provider, on
SQLite and PostgreSQL: both orders asked, preferences stored and read back as wins / ties /
losses with position consistency; the response cache keyed by the ordered pair; a provider
failing for one pair; an interrupted run resumed; a cancel; a second runner refused."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from grading.types import Criterion
from storage import models as m
from storage.jobs.comparison_runner import ComparisonBusyError, run_comparison
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.fake_provider import Reply, is_probe, judge_reply

CRITERIA = [Criterion(name="complete", requirement="Covers every step", weight=4),
            Criterion(name="rude", requirement="Insults the reader", weight=-2)]
FAST = {"retry_base_delay": 0.001, "retry_max_delay": 0.01}
# The fake judge prefers the response with more words (tests/fake_provider.longer): B is
# longer on q1-q3 and shorter on q4; q5 is the same text; q6 / q7 have no partner.
A_ROWS = [("q1", "one"), ("q2", "two"), ("q3", "three"), ("q4", "four words are here"),
          ("q5", "same"), ("q6", "lonely")]
B_ROWS = [("q1", "one more"), ("q2", "two more words"), ("q3", "three and more"),
          ("q4", "four"), ("q5", "same"), ("q7", "alone")]


def source(sessions, name: str, rows) -> int:
    return datasets.create_dataset(sessions, name, responses=[
        {"id": i, "query": f"question {i}", "text": t} for i, t in rows], actor=ADMIN).id


@pytest.fixture
def setup(sessions):
    version = rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN).id
    return version, source(sessions, "Old", A_ROWS), source(sessions, "New", B_ROWS)


def create(sessions, fake, version, a, b, **options):
    return comparisons.create_comparison(
        sessions, rubric_version_id=version, a=Source(a), b=Source(b), model="openai/judge",
        settings={"api_base": fake.api_base, "timeout": 10.0}, actor=ADMIN, **options)


def judged_at(sessions, comparison_id: int) -> dict[str, object]:
    with sessions() as session:
        return dict(session.execute(
            select(m.ComparisonPairRow.match_key, m.ComparisonPairRow.judged_at)
            .where(m.ComparisonPairRow.comparison_id == comparison_id,
                   m.ComparisonPairRow.state == "done")).all())


async def test_a_comparison_is_judged_in_both_orders_and_read_back(sessions, fake_provider,
                                                                   setup):
    made = create(sessions, fake_provider, *setup)

    ended = await run_comparison(sessions, made.id, actor=ADMIN, **FAST)

    assert (ended.status, ended.done_count, ended.failed_count, ended.error) == (
        "done", 4, 0, None)
    assert fake_provider.requests == 4 * 2 * 2  # pairs x criteria x orders
    results = comparisons.comparison_results(sessions, made.id)
    summary = results.summary
    assert (summary.overall.wins, summary.overall.ties, summary.overall.losses) == (3, 0, 1)
    assert summary.overall.win_rate == 0.75 and summary.overall.interval is not None
    assert [(c.label, c.tally.wins, c.tally.losses, c.consistency_rate)
            for c in summary.criteria] == [("complete", 3, 1, 1.0), ("rude", 3, 1, 1.0)]
    assert summary.consistency_rate == 1.0
    assert sorted((n.kind, n.key) for n in results.not_judged) == [
        ("identical", "q5"), ("only_a", "q6"), ("only_b", "q7")]
    with sessions() as session:
        rows = session.scalars(select(m.ComparisonPreferenceRow)).all()
    assert len(rows) == 8 and {(r.first, r.second, r.preference, r.consistent)
                               for r in rows} == {("B", "A", "B", True), ("A", "B", "A", True)}


async def test_the_cache_is_keyed_by_the_ordered_pair(sessions, fake_provider, setup):
    version, a, b = setup
    await run_comparison(sessions, create(sessions, fake_provider, version, a, b).id,
                         actor=ADMIN, **FAST)
    assert fake_provider.requests == 16

    again = await run_comparison(sessions, create(sessions, fake_provider, version, a, b).id,
                                 actor=ADMIN, **FAST)
    assert fake_provider.requests == 16  # the same ordered pairs: every answer from the cache
    swapped = await run_comparison(
        sessions, create(sessions, fake_provider, version, b, a).id, actor=ADMIN, **FAST)
    # B vs A asks the same two ordered questions (B shown first, A shown first): both cached,
    # each under its own order. A key blind to the order would hand the A-first answer to
    # the B-first question: every verdict would then flip with the order.
    assert fake_provider.requests == 16
    mirrored = comparisons.comparison_results(sessions, swapped.id).summary
    assert (again.done_count, mirrored.overall.wins, mirrored.overall.losses) == (4, 1, 3)
    assert mirrored.consistency_rate == 1.0


async def test_a_provider_failing_for_one_pair_fails_that_pair_and_a_rerun_retries_it(
        sessions, fake_provider, setup):
    broken = {"on": True}

    def reply(body):
        prompt = body["messages"][-1]["content"]
        if broken["on"] and "two more words" in prompt:
            return Reply(status=500, error_message="upstream exploded")
        return judge_reply(body)

    fake_provider.default = reply
    made = create(sessions, fake_provider, *setup)

    ended = await run_comparison(sessions, made.id, actor=ADMIN, transport_retries=1, **FAST)

    assert (ended.status, ended.done_count, ended.failed_count) == ("done", 3, 1)
    assert ended.error.startswith("1 of 4 pairs could not be compared")
    failed = [n for n in comparisons.comparison_results(sessions, made.id).not_judged
              if n.kind == "failed"]
    assert [(n.key, n.a_id, n.b_id) for n in failed] == [("q2", "q2", "q2")]
    assert "could not be judged" in failed[0].reason
    assert comparisons.comparison_results(sessions, made.id).summary.overall.judged == 3
    kept = judged_at(sessions, made.id)

    broken["on"] = False
    again = await run_comparison(sessions, made.id, actor=ADMIN, **FAST)

    assert (again.status, again.done_count, again.failed_count, again.error) == (
        "done", 4, 0, None)
    assert {k: v for k, v in judged_at(sessions, made.id).items() if k != "q2"} == kept
    assert comparisons.comparison_results(sessions, made.id).summary.overall.wins == 3


async def test_an_interrupted_comparison_resumes_with_the_pairs_not_yet_stored(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    fake_provider.default = lambda body: (
        Reply(judge_reply(body).content, delay=2.0)
        if "four" in body["messages"][-1]["content"] else judge_reply(body))
    task = asyncio.create_task(run_comparison(sessions, made.id, actor=ADMIN, worker="first",
                                              batch=3, **FAST))
    for _ in range(600):  # until the first batch (q1-q3) is stored (30 s: a loaded CI)
        await asyncio.sleep(0.05)
        if comparisons.get_comparison(sessions, made.id).done_count:
            break
    task.cancel()  # the process dies: nothing more is written
    with pytest.raises(asyncio.CancelledError):
        await task
    interrupted = comparisons.get_comparison(sessions, made.id)
    assert (interrupted.status, interrupted.done_count) == ("running", 3)
    kept = judged_at(sessions, made.id)

    with pytest.raises(ComparisonBusyError, match="another process"):  # a second tab, at once
        await run_comparison(sessions, made.id, actor=ADMIN, worker="second", **FAST)
    asked = len(fake_provider.bodies)
    fake_provider.default = judge_reply
    resumed = await run_comparison(sessions, made.id, actor=ADMIN, worker="second",
                                   take_over_after=0.0, **FAST)

    assert (resumed.status, resumed.done_count, resumed.failed_count) == ("done", 4, 0)
    again = [b["messages"][-1]["content"] for b in fake_provider.bodies[asked:]
             if not is_probe(b)]
    assert 0 < len(again) <= 4  # only q4's questions (those not cached), none of q1-q3's
    assert all("four" in prompt for prompt in again)
    assert {k: v for k, v in judged_at(sessions, made.id).items() if k != "q4"} == kept
    with sessions() as session:
        assert len(session.scalars(select(m.ComparisonPreferenceRow)).all()) == 8


async def test_a_cancelled_comparison_asks_nothing(sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    comparisons.cancel_comparison(sessions, made.id, actor=ADMIN)

    ended = await run_comparison(sessions, made.id, actor=ADMIN, **FAST)

    assert (ended.status, ended.done_count, fake_provider.requests) == ("cancelled", 0, 0)


async def test_a_holistic_comparison_stores_one_preference_per_pair(sessions, fake_provider,
                                                                    setup):
    made = create(sessions, fake_provider, *setup, holistic=True)

    await run_comparison(sessions, made.id, actor=ADMIN, **FAST)

    assert fake_provider.requests == 4 * 2
    summary = comparisons.comparison_results(sessions, made.id).summary
    assert [c.label for c in summary.criteria] == ["overall"]
    assert (summary.overall.wins, summary.overall.losses) == (3, 1)


async def test_a_refused_key_fails_the_comparison_with_the_reason(sessions, fake_provider,
                                                                  setup):
    fake_provider.required_api_key = "another-key"
    made = create(sessions, fake_provider, *setup)

    ended = await run_comparison(sessions, made.id, actor=ADMIN, **FAST)

    assert ended.status == "failed" and ended.error
    assert ended.done_count == 0


async def test_a_judged_comparison_goes_with_its_rubric_when_the_rubric_is_deleted(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    await run_comparison(sessions, made.id, actor=ADMIN, **FAST)

    rubrics.delete_rubric(sessions, rubrics.get_version(sessions, setup[0]).rubric_id,
                          confirm=True, actor=ADMIN)

    assert comparisons.list_comparisons(sessions) == []
    with sessions() as session:
        assert session.scalars(select(m.ComparisonPreferenceRow)).all() == []


async def test_a_cancel_while_judging_stops_it_and_keeps_the_pairs_stored(
        sessions, fake_provider, setup):
    made = create(sessions, fake_provider, *setup)
    fake_provider.default = lambda body: (
        Reply(judge_reply(body).content, delay=0.5)
        if "one more" not in body["messages"][-1]["content"] else judge_reply(body))
    task = asyncio.create_task(run_comparison(sessions, made.id, actor=ADMIN, batch=1,
                                              **FAST))
    for _ in range(200):  # until the first pair (q1) is stored
        await asyncio.sleep(0.05)
        if comparisons.get_comparison(sessions, made.id).done_count:
            break
    comparisons.cancel_comparison(sessions, made.id, actor=ADMIN)

    ended = await task

    assert ended.status == "cancelled"
    assert 1 <= ended.done_count < 4
    assert len(judged_at(sessions, made.id)) == ended.done_count
