"""The trust report of a counted agreement report (issue 41: the judges' verdicts held for
the reviewed responses only) reads the judges' verdicts from the database as arrays
(storage.services.trust_stored) instead of gathering every verdict again, and gives the
report built from every verdict, figure for figure, on random worlds, on SQLite and
PostgreSQL."""

from __future__ import annotations

import random

import pytest

from grading.types import ScoringSettings, Verdict
from storage.services import (
    agreement,
    agreement_blind,
    agreement_lists,
    datasets,
    human_baseline,
    panels,
    review_sets,
    rubrics,
    runs,
    trust_report,
)
from storage.services.blindness import Sight
from storage.services.trust_frame import _coded, make_frame
from storage.services.trust_stored import StoredVerdicts
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report
from tests.storage.test_report_counts import review_randomly

M, U, C = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS


def _world(sessions, seed: int, responses: int = 30):
    """Two runs of one judge (stability samples of each other), a run of another judge that
    asked three samples per criterion (stored in ``grade_criteria.samples``), verdicts that
    mostly follow a hidden truth with CANNOT_ASSESS, failed criteria and ungraded responses;
    a majority panel of the three and an 'any' panel of two; three reviewers on part of the
    responses (disputes, some adjudicated) and a random review sample."""
    rng = random.Random(seed)
    version = rubrics.create_rubric(sessions, f"T{seed}", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, f"T{seed}", responses=[
        {"id": f"r{i}", "query": f"q{i}", "text": "word " * rng.randint(5, 300)}
        for i in range(responses)], actor=ADMIN)
    found = datasets.list_responses(sessions, dataset.id, limit=None)
    truth = {(r.id, c.id): rng.choice([M, U]) for r in found for c in version.criteria}

    def noisy(value: Verdict, agree: float) -> Verdict | None:
        roll = rng.random()
        if roll < 0.06:
            return C
        if roll < 0.09:
            return None
        return value if rng.random() < agree else (U if value is M else M)

    settings = ScoringSettings()
    made = []
    for model, agree, samples in (("j0", 0.85, 1), ("j0", 0.7, 1), ("j2", 0.8, 3)):
        run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                              grader="per_criterion", model=f"openai/{model}",
                              settings={"extra": {"samples": samples}} if samples > 1
                              else None, actor=ADMIN)
        made.append(run)
        for response in found:
            if rng.random() < 0.1:
                continue  # not graded by this run
            verdicts = [noisy(truth[response.id, c.id], agree) for c in version.criteria]
            report = judge_report(CRITERIA, verdicts, settings, response.output)
            if samples > 1:
                items = []
                for item, verdict in zip(report.report, verdicts, strict=True):
                    drawn = None
                    if verdict is not None:  # the majority of three is the verdict
                        other = rng.choice([M, U, C, None])
                        drawn = tuple(v.value if v is not None else None
                                      for v in rng.sample([verdict, verdict, other], 3))
                    items.append(item.model_copy(update={"samples": drawn}))
                report = report.model_copy(update={"report": items})
            runs.record_grade(sessions, run.id, response.id, report)
        runs.start_run(sessions, run.id, worker="t")
        runs.finish_run(sessions, run.id)
    panels.create_panel(sessions, run_ids=[r.id for r in made], rule="majority", actor=ADMIN)
    panels.create_panel(sessions, run_ids=[made[0].id, made[2].id], rule="any", actor=ADMIN)
    review_randomly(sessions, rng, version, found, truth, noisy)
    review_sets.update_settings(sessions, actor=ADMIN, dataset_id=dataset.id,
                                rubric_version_id=version.id, reviewers_per_response=1,
                                sample_size=12)
    return version, dataset


class _Calls:
    """Wraps (not replaces) what would read every judge verdict again, counting calls."""

    def __init__(self, monkeypatch) -> None:
        self.count = 0
        for module, name in ((agreement_lists, "complete_data"),
                             (agreement_lists, "gather_sources"),
                             (agreement, "gather_sources")):
            real = getattr(module, name)

            def counted(*args, _real=real, **kwargs):
                self.count += 1
                return _real(*args, **kwargs)

            monkeypatch.setattr(module, name, counted)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_trust_of_a_counted_report_equals_the_trust_from_every_verdict(
        sessions, seed, monkeypatch):
    version, dataset = _world(sessions, seed)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    assert not report.data.complete  # counted: the judges' verdicts of reviewed ones only
    assert sum(s.is_panel for s in report.data.verdict_sources) == 2
    baseline = human_baseline.report_baseline(report)
    whole = agreement.build_report(agreement.gather_sources(sessions, version.id, dataset.id))

    calls = _Calls(monkeypatch)
    counted = trust_report.build_trust(sessions, report, baseline)
    assert calls.count == 0  # no judge verdict gathered again into dicts
    monkeypatch.undo()

    expected = trust_report.build_trust(sessions, whole,
                                        human_baseline.build_baseline(whole.data))
    # the figures are measured: stability across runs, within a run and of the panels
    assert any(j.samples_per_criterion == 3 for j in expected.judges)
    assert any(len(j.samples) == 2 for j in expected.judges)
    assert sum(j.stability_basis != "" for j in expected.judges) == 2
    assert expected.sampled_reviewed > 0
    assert repr(counted) == repr(expected)
    assert repr(trust_report.trust_report(sessions, version.id, dataset.id)) == repr(expected)


@pytest.mark.parametrize("seed", [4, 5])
def test_each_judge_read_from_the_database_is_the_matrix_of_its_every_verdict(
        sessions, seed):
    version, dataset = _world(sessions, seed)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    data = agreement.gather_sources(sessions, version.id, dataset.id)
    lengths = {r.id: 1 for r in datasets.list_responses(sessions, dataset.id, limit=None)}
    frame = make_frame(data.criteria, lengths)
    stored = StoredVerdicts(sessions, report.data)
    for source in data.sources:
        if source.is_human:
            continue
        codes, present = stored.coded(source.key, frame)
        want_codes, want_present = _coded(data.verdicts[source.key], frame)
        assert (codes == want_codes).all() and (present == want_present).all(), source.key
        assert int(present.sum()) == len(data.verdicts[source.key]) > 0
        if not source.is_panel:  # CANNOT_ASSESS: present, no code
            assert ((codes < 0) & present).any(), source.key
    assert stored.coded("run:999999", frame)[1].sum() == 0  # no such source: nothing


@pytest.mark.parametrize("viewer", ["ana", "someone-else"])
def test_a_blind_viewers_trust_is_the_trust_of_every_verdict_they_may_see(
        sessions, copied_world, viewer):
    # one world for both viewers: built once per backend, then copied
    version, dataset = copied_world(("trust_counted", 6), lambda s: _world(s, 6))
    sight = Sight(viewer=viewer, sees_all=False)

    found = trust_report.trust_report(sessions, version.id, dataset.id, sight=sight)

    seen = agreement.build_report(agreement_blind.as_seen(
        agreement.gather_sources(sessions, version.id, dataset.id), sight))
    expected = trust_report.build_trust(sessions, seen,
                                        human_baseline.build_baseline(seen.data))
    assert repr(found) == repr(expected)
    assert (found.sampled_reviewed > 0) == (viewer == "ana")


def test_a_judges_codes_asked_of_the_kept_frame_fail_rather_than_come_from_partial_data(
        sessions):
    """The judges' share lets the verdicts it read from the database go before its figures
    are finished (issue 41: the trust tab's peak); made from the counted report's data, a
    judge's codes would cover the reviewed responses only and read as every verdict."""
    from storage.services.agreement_sources import HUMAN
    from storage.services.trust_frame import codes_of

    version, dataset = _world(sessions, 6)
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    assert not report.data.complete
    frame = trust_report.judges_part(sessions, report).frame
    judge = next(s.key for s in report.data.verdict_sources if not s.is_human)
    with pytest.raises(RuntimeError, match="let go of the judges' verdicts"):
        codes_of(report.data, frame, judge)
    assert codes_of(report.data, frame, HUMAN).shape == (len(frame.positions),
                                                         len(frame.columns))
