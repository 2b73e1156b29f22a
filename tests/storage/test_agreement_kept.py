"""The Agreement report kept between saved verdicts (storage.services.agreement_kept): after
each of a sequence of people's writes (verdicts, a first review, a changed verdict, an
adjudication, a new reviewer) the patched report is the report from every verdict and the
one ``agreement_report`` reads whole, its data dict for dict; what is not an append (a grade
landing, a verdict deleted) builds it anew. SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from grading.types import ScoringSettings, Verdict
from storage import models as m
from storage.services import (
    agreement,
    agreement_judge_counts,
    agreement_kept,
    datasets,
    human_baseline,
    reviews,
    runs,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, delete_oldest_verdict, judge_report
from tests.storage.report_checks import assert_same_report
from tests.storage.test_report_counts import _random_world

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def _assert_is_the_report(sessions, version, dataset, kept) -> None:
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    assert_same_report(kept.report, agreement.build_report(data))
    whole = agreement.agreement_report(sessions, version.id, dataset.id)
    assert kept.report == whole and kept.report.patterns == whole.patterns
    # the same dicts in the same order (what sums floats over them meets them as before)
    for name in ("verdicts", "reasons", "reviewer_verdicts", "reviewer_seconds",
                 "human_scores"):
        ours, theirs = getattr(kept.report.data, name), getattr(whole.data, name)
        assert list(ours) == list(theirs) or name == "reviewer_seconds", name
        for key in theirs:
            assert list(ours[key].items()) == list(theirs[key].items()), (name, key)
    assert kept.report.data.reviewer_names == whole.data.reviewer_names
    assert human_baseline.report_baseline(kept.report) == human_baseline.build_baseline(data)


def _brought_up(sessions, version, dataset, kept, judges):
    """``kept`` patched up to date, or built anew when it cannot be (as the slot does)."""
    return (agreement_kept.advanced(sessions, version.id, dataset.id, kept, judges)
            or agreement_kept.build(sessions, version.id, dataset.id, judges))


def _land_a_grade(sessions, version, dataset) -> None:
    """The first run grades a response it had not graded: a grade lands."""
    run = runs.list_runs(sessions, rubric_version_id=version.id, dataset_id=dataset.id)[0]
    graded = {g.response_id for g in runs.list_grades(sessions, run.id)}
    spare = next(r for r in datasets.list_responses(sessions, dataset.id)
                 if r.id not in graded)
    runs.record_grade(sessions, run.id, spare.id, judge_report(
        CRITERIA, [M, U, M, C], ScoringSettings(), spare.output))


def _writes(sessions, version, dataset, seed: int):
    """People's writes one at a time: (what, the write)."""
    rng = random.Random(seed)
    found = datasets.list_responses(sessions, dataset.id)
    with sessions() as session:
        reviewed = set(session.scalars(select(m.EffectiveVerdictRow.response_id).where(
            m.EffectiveVerdictRow.rubric_version_id == version.id)))
    fresh = next(r for r in found if r.id not in reviewed)
    old = sorted(reviewed)
    criteria = version.criteria

    def verdict(person, rid, cid, value, seconds=None):
        return lambda: reviews.set_human_verdict(
            sessions, actor=local_actor(person), response_id=rid, criterion_id=cid,
            verdict=value, review_seconds=seconds)

    yield "a changed verdict", verdict("ana", old[0], criteria[0].id, C, 12.5)
    yield "a verdict on a reviewed response", verdict("bo", old[1], criteria[1].id, U)
    yield "the first verdict on a response", verdict("cy", fresh.id, criteria[2].id, M, 3.0)
    yield "a second reviewer there", verdict("ana", fresh.id, criteria[2].id, U)
    yield "an adjudication", lambda: reviews.adjudicate(
        sessions, actor=ADMIN, response_id=fresh.id, criterion_id=criteria[2].id, verdict=U)
    yield "a new reviewer", verdict("dee", old[-1], criteria[-1].id, M, 40.0)

    def several():
        for response in rng.sample(found, 4):
            for criterion in criteria:
                verdict(rng.choice(["ana", "bo", "dee"]), response.id, criterion.id,
                        rng.choice([M, U, C]))()
    yield "several responses at once", several


@pytest.mark.parametrize("seed", [31, 32])
def test_the_kept_report_patched_after_each_write_is_the_report_from_every_verdict(
        sessions, seed):
    version, dataset = _random_world(sessions, seed, responses=20)
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    kept = agreement_kept.build(sessions, version.id, dataset.id, judges)
    assert kept is not None
    _assert_is_the_report(sessions, version, dataset, kept)
    assert agreement_kept.advance(sessions, kept, judges) is kept  # nothing moved

    for what, write in _writes(sessions, version, dataset, seed):
        write()
        patched = agreement_kept.advance(sessions, kept, judges)
        assert patched is not None, what
        assert patched.stamp != kept.stamp
        kept = patched
        _assert_is_the_report(sessions, version, dataset, kept)


def test_a_deleted_verdict_or_a_landed_grade_builds_the_report_anew(sessions):
    version, dataset = _random_world(sessions, 33, responses=16)
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    kept = agreement_kept.build(sessions, version.id, dataset.id, judges)
    delete_oldest_verdict(sessions)  # what deleting a dataset's verdicts would do, once
    reviews.set_human_verdict(sessions, actor=local_actor("bo"),
                              response_id=min(kept.reviewed),
                              criterion_id=version.criteria[0].id, verdict=C)

    assert agreement_kept.advance(sessions, kept, judges) is None  # one gone, one new
    kept = _brought_up(sessions, version, dataset, kept, judges)
    _assert_is_the_report(sessions, version, dataset, kept)

    _land_a_grade(sessions, version, dataset)

    assert agreement_kept.advance(sessions, kept, judges) is None
    assert agreement_kept.build(sessions, version.id, dataset.id, judges) is None
    fresh = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    kept = _brought_up(sessions, version, dataset, kept, fresh)
    _assert_is_the_report(sessions, version, dataset, kept)


def test_the_merge_puts_the_touched_responses_back_in_response_order():
    old = {(1, 5): "a", (1, 6): "b", (3, 5): "c", (7, 5): "d"}
    fresh = {(0, 5): "z", (3, 6): "y", (3, 5): "x", (9, 1): "w"}

    merged = agreement_kept.merged(old, fresh, {0, 3, 9})

    assert list(merged.items()) == [((0, 5), "z"), ((1, 5), "a"), ((1, 6), "b"),
                                    ((3, 6), "y"), ((3, 5), "x"), ((7, 5), "d"),
                                    ((9, 1), "w")]
    assert agreement_kept.merged(old, {}, {1}) == {(3, 5): "c", (7, 5): "d"}


def test_the_slot_patches_its_report_and_reads_the_whole_one_when_it_cannot_keep_it(
        sessions):
    version, dataset = _random_world(sessions, 34, responses=12)
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    slot = agreement_kept.KeptSlot()
    first = slot.report(sessions, version.id, dataset.id, judges)
    rid = min(first.data.response_labels)

    def save(value: Verdict) -> None:
        reviews.set_human_verdict(sessions, actor=local_actor("ana"), response_id=rid,
                                  criterion_id=version.criteria[1].id, verdict=value)

    save(U)
    patched = slot.report(sessions, version.id, dataset.id, judges)
    assert slot._kept is not None and slot._kept.report is patched
    assert patched == agreement.agreement_report(sessions, version.id, dataset.id)
    save(M)
    unkept = slot.report(sessions, version.id, dataset.id, None)  # no judges' share

    assert slot._kept is None
    assert unkept == agreement.agreement_report(sessions, version.id, dataset.id)
    assert unkept != patched


def test_a_changed_value_stays_where_it_stood_and_new_keys_go_in_response_order():
    old = {(1, 5): "a", (1, 6): "b", (3, 6): "c", (3, 5): "d", (7, 5): "e"}

    def keys_of(rid):
        return [(rid, 5), (rid, 6)]

    same = agreement_kept.merged(old, {(3, 5): "x", (3, 6): "y"}, {3}, keys_of=keys_of)
    grown = agreement_kept.merged(old, {(3, 6): "y", (3, 5): "x", (4, 5): "z"}, {3, 4},
                                  keys_of=keys_of)

    assert list(same.items()) == [((1, 5), "a"), ((1, 6), "b"), ((3, 6), "y"),
                                  ((3, 5), "x"), ((7, 5), "e")]
    assert list(grown.items()) == [((1, 5), "a"), ((1, 6), "b"), ((3, 6), "y"),
                                   ((3, 5), "x"), ((4, 5), "z"), ((7, 5), "e")]


def test_the_slot_lets_go_of_its_kept_report_before_it_builds_one_anew(sessions, monkeypatch):
    """A grade landed: the slot's kept report cannot be patched and a new one is built. The
    old one is let go first, not held beside it while it is built (at 100,000 responses the
    app's peak was ~150 MB higher)."""
    import gc
    import weakref

    version, dataset = _random_world(sessions, 35, responses=16)
    judges = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    slot = agreement_kept.KeptSlot()
    slot.report(sessions, version.id, dataset.id, judges)
    old = weakref.ref(slot._kept)
    alive_while_building: list[bool] = []
    real_build = agreement_kept.build

    def build(*args):
        gc.collect()
        alive_while_building.append(old() is not None)
        return real_build(*args)

    monkeypatch.setattr(agreement_kept, "build", build)
    _land_a_grade(sessions, version, dataset)
    fresh = agreement_judge_counts.judge_patterns(sessions, version.id, dataset.id)
    report = slot.report(sessions, version.id, dataset.id, fresh)

    assert alive_while_building == [False]
    assert slot._kept is not None and slot._kept.report is report
    _assert_is_the_report(sessions, version, dataset, slot._kept)
