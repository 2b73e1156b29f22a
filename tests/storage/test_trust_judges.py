"""The trust report's judges' share (storage.services.trust_judges, issue 41) kept across
people's verdicts: the report built on it is the report built afresh, figure for figure, and
nothing of the judges is read or computed again; a share made for other judges (a run
added) is made again. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from grading.types import ScoringSettings, Verdict
from storage.services import (
    agreement,
    agreement_blind,
    agreement_lists,
    human_baseline,
    reviews,
    runs,
    trust_report,
    trust_stored,
)
from storage.services.agreement_sources import HUMAN
from storage.services.blindness import Sight
from storage.services.reviewers import local_actor
from storage.services.trust_reads import read_sample
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report
from tests.storage.test_trust_counted import _world


def _trust(sessions, report, judges=None):
    return trust_report.build_trust(sessions, report, human_baseline.report_baseline(report),
                                    judges)


class _Counted:
    """Wraps (not replaces) the judges' share and the judges' verdict reads, counting calls."""

    def __init__(self, monkeypatch) -> None:
        self.shares = self.reads = 0
        real_share, real_read = trust_report.judges_part, trust_stored.StoredVerdicts._read

        def share(*args, **kwargs):
            self.shares += 1
            return real_share(*args, **kwargs)

        def read(*args, **kwargs):
            self.reads += 1
            return real_read(*args, **kwargs)

        monkeypatch.setattr(trust_report, "judges_part", share)
        monkeypatch.setattr(trust_stored.StoredVerdicts, "_read", read)


def _review_a_sampled_response(sessions, report, who: str = "newcomer") -> int:
    """A new reviewer answers every criterion of a sampled response nobody reviewed: the
    corrected estimates gain one sampled response."""
    data = report.data
    part = trust_report.judges_part(sessions, report)
    sample, _size = read_sample(sessions, data, part.reads.population)
    reviewed = {rid for rid, _cid in data.verdicts.get(HUMAN, {})}
    response = min(sample - reviewed)
    for criterion in data.criteria:
        reviews.set_human_verdict(sessions, actor=local_actor(who), response_id=response,
                                  criterion_id=criterion.id, verdict="MET")
    return response


@pytest.mark.parametrize("seed", [1, 2])
def test_the_judges_share_kept_across_verdicts_gives_the_fresh_report(
        sessions, seed, monkeypatch):
    version, dataset = _world(sessions, seed)
    before = agreement.agreement_report(sessions, version.id, dataset.id)
    kept = trust_report.judges_part(sessions, before)
    assert repr(_trust(sessions, before, kept)) == repr(_trust(sessions, before))
    _review_a_sampled_response(sessions, before)

    after = agreement.agreement_report(sessions, version.id, dataset.id)
    counted = _Counted(monkeypatch)
    found = _trust(sessions, after, kept)
    assert (counted.shares, counted.reads) == (0, 0)  # nothing of the judges made again
    monkeypatch.undo()
    fresh = _trust(sessions, after)
    assert repr(found) == repr(fresh)
    earlier = _trust(sessions, before)
    assert found.sampled_reviewed == earlier.sampled_reviewed + 1
    assert [j.criteria[0].corrected for j in found.judges] != [
        j.criteria[0].corrected for j in earlier.judges]  # people's part did move
    # the judges' own figures are the ones made before the verdict
    assert [(c.stability, c.length_all) for j in found.judges for c in j.criteria] == [
        (c.stability, c.length_all) for j in earlier.judges for c in j.criteria]


@pytest.mark.parametrize("viewer", ["ana", "someone-else"])
def test_a_blind_viewers_trust_on_the_kept_share_is_their_fresh_trust(sessions, viewer):
    version, dataset = _world(sessions, 6)
    full = agreement.agreement_report(sessions, version.id, dataset.id)
    kept = trust_report.judges_part(sessions, full)
    sight = Sight(viewer=viewer, sees_all=False)
    seen = agreement.build_report(agreement_blind.as_seen(
        agreement_lists.complete_data(sessions, full.data), sight))
    assert repr(_trust(sessions, seen, kept)) == repr(_trust(sessions, seen))


def test_a_share_made_before_a_run_was_added_is_made_again(sessions, monkeypatch):
    version, dataset = _world(sessions, 3)
    before = agreement.agreement_report(sessions, version.id, dataset.id)
    kept = trust_report.judges_part(sessions, before)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/j9", actor=ADMIN)
    for response in _responses(sessions, dataset.id)[:10]:
        runs.record_grade(sessions, run.id, response.id, judge_report(
            CRITERIA, [Verdict.MET] * len(CRITERIA), ScoringSettings(), response.output))
    runs.start_run(sessions, run.id, worker="t")
    runs.finish_run(sessions, run.id)

    after = agreement.agreement_report(sessions, version.id, dataset.id)
    assert not kept.fits(after)
    counted = _Counted(monkeypatch)
    found = _trust(sessions, after, kept)
    assert counted.shares == 1  # made again for the judges now
    monkeypatch.undo()
    assert f"run:{run.id}" in [j.source_key for j in found.judges]
    assert repr(found) == repr(_trust(sessions, after))


def _responses(sessions, dataset_id: int):
    from storage.services import datasets

    return datasets.list_responses(sessions, dataset_id, limit=None)


def test_a_share_made_before_a_response_was_added_is_made_again(sessions):
    version, dataset = _world(sessions, 2)
    before = agreement.agreement_report(sessions, version.id, dataset.id)
    kept = trust_report.judges_part(sessions, before)
    assert kept.fits(before)
    from storage.services import datasets

    added = datasets.add_response(sessions, dataset.id, "a late answer", actor=ADMIN)
    reviews.set_human_verdict(sessions, actor=local_actor("late"), response_id=added.id,
                              criterion_id=before.data.criteria[0].id, verdict="MET")
    after = agreement.agreement_report(sessions, version.id, dataset.id)
    assert not kept.fits(after)
    assert repr(_trust(sessions, after, kept)) == repr(_trust(sessions, after))
