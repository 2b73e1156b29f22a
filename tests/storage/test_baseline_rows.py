"""The human baseline's criterion rows kept by their inputs (storage.services.baseline_rows):
a saved verdict computes its criterion's row again and keeps the others, every figure the
one computed whole."""

from __future__ import annotations

import pytest

from grading.types import Verdict
from storage.services import agreement, baseline_rows, human_baseline, reviews
from storage.services.baseline_patterns import ABSENT
from storage.services.reviewers import local_actor
from tests.storage.test_report_counts import _random_world


def _reviewed_key(data, reviewer: str, criterion_id: int) -> int:
    """A response ``reviewer`` answered ``criterion_id`` on."""
    return next(rid for (rid, cid) in data.reviewer_verdicts[reviewer] if cid == criterion_id)


def _other(verdict) -> str:
    return "UNMET" if verdict == Verdict.MET else "MET"


@pytest.mark.parametrize("reviewers", [("ana", "bo"), ("ana", "bo", "cy")])
def test_a_verdict_computes_its_criterion_row_again_and_keeps_the_others(sessions, reviewers):
    version, dataset = _random_world(sessions, 41, responses=30, reviewers=reviewers)
    memo = baseline_rows.RowMemo()
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    first = human_baseline.report_baseline(report, memo)
    criteria = len(first.criteria)
    assert criteria == len(version.criteria) and memo.made == criteria
    assert first == human_baseline.report_baseline(report)
    # the same report again: every row kept
    assert human_baseline.report_baseline(report, memo) == first and memo.made == criteria

    changed = version.criteria[2].id
    rid = _reviewed_key(report.data, "ana", changed)
    reviews.set_human_verdict(
        sessions, actor=local_actor("ana"), response_id=rid, criterion_id=changed,
        verdict=_other(report.data.reviewer_verdicts["ana"][rid, changed]))
    after = agreement.agreement_report(sessions, version.id, dataset.id)
    kept = human_baseline.report_baseline(after, memo)

    assert memo.made == criteria + 1  # the changed criterion's row only
    assert kept == human_baseline.report_baseline(after)  # every figure computed whole
    moved = [row.criterion.id for row, old in zip(kept.criteria, first.criteria, strict=True)
             if row != old]
    assert moved == [changed]


def test_data_read_whole_keeps_its_rows_apart_from_the_counted_reports(sessions):
    version, dataset = _random_world(sessions, 42, responses=24, reviewers=("ana", "bo"))
    memo = baseline_rows.RowMemo()
    whole = agreement.gather_sources(sessions, version.id, dataset.id)
    assert whole.complete
    found = human_baseline.build_baseline(whole, rows=memo)
    assert found == human_baseline.build_baseline(whole)
    made = memo.made
    assert human_baseline.build_baseline(whole, rows=memo) == found and memo.made == made
    # the counted report's data is not complete: its rows are its own (the judges' figures
    # against people come from its Human pairs there)
    counted = agreement.agreement_report(sessions, version.id, dataset.id)
    assert human_baseline.report_baseline(counted, memo) == human_baseline.report_baseline(
        counted)
    assert memo.made == 2 * made


def test_a_string_verdict_is_not_the_verdict_it_equals():
    """A plain "MET" equals Verdict.MET, but the baseline tells them apart (a majority
    counts Verdict members by identity): their rows are not one."""
    import numpy as np

    from storage.dto import CriterionInfo

    criterion = CriterionInfo(id=1, position=0, name="c", requirement="r", weight=1.0,
                              section=None)
    rids = np.array([1, 2, 3], dtype=np.int64)
    groups = np.array([0, 1, 0], dtype=np.int64)

    def key(found):
        return baseline_rows.row_key(criterion, ("ana", "bo"), rids, groups, found, (), 7,
                                     True, {}, {}, "__human__", {})

    enum = key([(Verdict.MET, ABSENT), (Verdict.UNMET, Verdict.MET)])
    assert enum == key([(Verdict.MET, ABSENT), (Verdict.UNMET, Verdict.MET)])
    assert enum != key([("MET", ABSENT), (Verdict.UNMET, Verdict.MET)])
    assert enum != key([(Verdict.MET, None), (Verdict.UNMET, Verdict.MET)])
    # the responses and their groups are part of it
    assert enum != baseline_rows.row_key(criterion, ("ana", "bo"), rids, np.array([0, 0, 1]),
                                         [(Verdict.MET, ABSENT), (Verdict.UNMET, Verdict.MET)],
                                         (), 7, True, {}, {}, "__human__", {})
    assert enum != baseline_rows.row_key(criterion, ("ana", "bo"), rids, groups,
                                         [(Verdict.MET, ABSENT), (Verdict.UNMET, Verdict.MET)],
                                         (), 8, True, {}, {}, "__human__", {})


def test_the_memo_keeps_its_last_rows_only():
    memo = baseline_rows.RowMemo(size=2)
    made = []

    def make(name):
        return lambda: made.append(name) or name

    assert [memo.row(k, make(k)) for k in ("a", "b", "a", "c", "b", "a")] == [
        "a", "b", "a", "c", "b", "a"]
    # "a" was used again before "c" came, so "b" went; then "b" pushed out "a"
    assert made == ["a", "b", "c", "b", "a"]


def test_three_reviewers_order_their_verdicts_into_the_key(sessions):
    """With three reviewers or more a criterion's alpha sums their verdicts in order: a
    reviewer's verdict changed on it changes the key even where the patterns would not."""
    version, dataset = _random_world(sessions, 43, responses=20,
                                     reviewers=("ana", "bo", "cy"))
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    import numpy as np

    cid = version.criteria[0].id
    criterion = next(c for c in data.criteria if c.id == cid)
    rids = np.array([1, 2], dtype=np.int64)
    groups = np.array([0, 0], dtype=np.int64)
    found = [(Verdict.MET, Verdict.MET, Verdict.MET, Verdict.MET)]
    keys = ("ana", "bo", "cy")

    def key(verdicts):
        return baseline_rows.row_key(criterion, keys, rids, groups, found, (), 7, True, {},
                                     {}, "__human__", verdicts)

    verdicts = {k: dict(v) for k, v in data.reviewer_verdicts.items()}
    before = key(verdicts)
    rid = _reviewed_key(data, "cy", cid)
    verdicts["cy"][rid, cid] = Verdict(_other(verdicts["cy"][rid, cid]))
    assert key(verdicts) != before
    # a verdict on another criterion is not this row's input
    other = version.criteria[1].id
    verdicts = {k: dict(v) for k, v in data.reviewer_verdicts.items()}
    rid = _reviewed_key(data, "cy", other)
    verdicts["cy"][rid, other] = Verdict(_other(verdicts["cy"][rid, other]))
    assert key(verdicts) == before


def test_a_key_holds_a_digest_not_the_verdicts_it_stands_for():
    """With three reviewers a key stands for each one's verdicts on the criterion: kept as
    a digest, the 256 keys of the memo do not hold 100,000 responses' verdicts each."""
    import pickle

    import numpy as np

    from storage.dto import CriterionInfo

    criterion = CriterionInfo(id=1, position=0, name="c", requirement="r", weight=1.0,
                              section=None)
    keys = ("ana", "bo", "cy")

    def key(n):
        rids = np.arange(n, dtype=np.int64)
        verdicts = {k: {(rid, 1): Verdict.MET for rid in range(n)} for k in keys}
        return baseline_rows.row_key(criterion, keys, rids, np.zeros(n, dtype=np.int64),
                                     [(Verdict.MET,) * 4], (), 7, True, {}, {}, "__human__",
                                     verdicts)

    small, large = key(10), key(20_000)
    assert small != large
    assert len(pickle.dumps(large)) == len(pickle.dumps(small)) < 2_000


def test_a_blind_reviewer_and_an_adjudicator_share_the_memo_each_their_own_figures(sessions):
    """The page's memo is every viewer's: a blind reviewer's baseline (over the verdicts they
    may see) read after the adjudicator's, and the adjudicator's again after it, are each
    the one computed whole; rows are shared only where the inputs are the same."""
    from storage.services import agreement_blind, agreement_lists, blindness

    version, dataset = _random_world(sessions, 44, responses=24, reviewers=("ana", "bo"))
    memo = baseline_rows.RowMemo()
    full = agreement.agreement_report(sessions, version.id, dataset.id)
    blind = agreement.build_report(agreement_blind.as_seen(
        agreement_lists.complete_data(sessions, full.data), blindness.as_reviewer("ana")))

    everyone = human_baseline.report_baseline(full, memo)
    seen = human_baseline.report_baseline(blind, memo)
    assert seen == human_baseline.report_baseline(blind)
    assert seen != everyone  # the blind viewer's figures are not the adjudicator's
    assert human_baseline.report_baseline(full, memo) == everyone
    assert memo.made == 2 * len(everyone.criteria)
