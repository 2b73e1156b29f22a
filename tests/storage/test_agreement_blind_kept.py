"""A blind reviewer's Agreement report from the kept counted report
(``agreement_blind.seen_report``) has every figure, list and baseline of the report built from
every verdict as that reviewer may see them, after each of people's writes; a report the slot
has moved past is never taken for the kept one. SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

import pytest

from grading.types import Verdict
from storage.services import (
    agreement,
    agreement_blind,
    agreement_judge_counts,
    agreement_kept,
    agreement_lists,
    blindness,
    human_baseline,
    reviews,
)
from storage.services.agreement import HUMAN
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.test_report_counts import _random_world

M, U = Verdict.MET, Verdict.UNMET
SIGHTS = [blindness.as_reviewer(local_actor(name).key) for name in ("ana", "bo", "cy")]


def _assert_seen_as_every_verdict_gives(sessions, version, dataset, kept, sight) -> None:
    seen = agreement_blind.seen_report(kept, sight)
    python_data = agreement_blind.as_seen(
        agreement.gather_sources(sessions, version.id, dataset.id), sight)
    python = agreement.build_report(python_data)
    assert seen is not None and not seen.data.complete
    assert replace(seen, data=python_data) == python  # every figure
    for name in ("reviewer_verdicts", "reviewer_seconds", "human_scores", "reviewer_names",
                 "response_labels", "criteria"):
        assert getattr(seen.data, name) == getattr(python_data, name), name
    assert seen.data.sources == python_data.sources
    assert seen.data.verdicts[HUMAN] == python_data.verdicts[HUMAN]
    assert seen.data.reasons[HUMAN] == python_data.reasons[HUMAN]
    assert (seen.data.reviewed_responses, seen.data.fully_reviewed_responses) == (
        python_data.reviewed_responses, python_data.fully_reviewed_responses)
    assert human_baseline.report_baseline(seen) == human_baseline.build_baseline(python_data)
    keys = [s.key for s in python_data.verdict_sources]
    for a, b in [(None, None), (keys[0], keys[1]), (keys[1], keys[2])]:
        assert agreement.criterion_table(seen, a, b) == agreement.criterion_table(
            python, a, b)
    for criterion in version.criteria:
        for these in (keys, keys[:2], keys[1:3]):
            assert agreement_lists.disagreement_list(
                sessions, seen, these, criterion.id) == agreement.disagreements(
                python_data, these, criterion.id)


@pytest.mark.parametrize("seed", [31, 32])
def test_a_blind_reviewers_report_from_the_kept_one_is_the_one_from_every_verdict(
        sessions, seed):
    version, dataset = _random_world(sessions, seed, responses=24)
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    slot = agreement_kept.KeptSlot()
    report = slot.report(sessions, version.id, dataset.id, judges)
    kept = slot.kept_of(report)
    assert kept is not None
    for sight in SIGHTS:
        _assert_seen_as_every_verdict_gives(sessions, version, dataset, kept, sight)
    # The full view's figures differ from a reviewer's (the test compares something).
    assert agreement_blind.seen_report(kept, SIGHTS[0]).pairwise != report.pairwise


def test_after_a_verdict_and_an_adjudication_the_report_seen_is_the_new_one(sessions):
    version, dataset = _random_world(sessions, 33, responses=20)
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    slot = agreement_kept.KeptSlot()
    first = slot.report(sessions, version.id, dataset.id, judges)
    before = agreement_blind.seen_report(slot.kept_of(first), SIGHTS[0])
    unreviewed = [rid for rid in first.data.response_labels
                  if not any(r == rid for r, _ in first.data.verdicts[HUMAN])]
    ana = local_actor("ana")
    for criterion in version.criteria:
        reviews.set_human_verdict(sessions, actor=ana, response_id=unreviewed[0],
                                  criterion_id=criterion.id, verdict=U)
    (rid, cid), value = next(iter(first.data.verdicts[HUMAN].items()))
    reviews.adjudicate(sessions, actor=ADMIN, response_id=rid, criterion_id=cid,
                       verdict=U if value is M else M)

    now = slot.report(sessions, version.id, dataset.id, judges)
    assert slot.kept_of(first) is None  # the slot moved on: the old report is not kept
    kept = slot.kept_of(now)
    assert kept is not None
    for sight in SIGHTS:
        _assert_seen_as_every_verdict_gives(sessions, version, dataset, kept, sight)
    assert agreement_blind.seen_report(kept, SIGHTS[0]) != before


def test_nobody_signed_in_is_left_to_every_verdict(sessions):
    version, dataset = _random_world(sessions, 34, responses=12)
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    kept = agreement_kept.build(sessions, version.id, dataset.id, judges)
    assert kept is not None
    assert agreement_blind.seen_report(kept, blindness.NOBODY) is None
