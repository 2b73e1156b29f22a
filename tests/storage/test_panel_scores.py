"""A judge panel's effective scores of the reviewed responses, kept in
``effective_panel_scores`` (storage.services.panel_scores), stay what the one aggregation
gives after each event that moves them: a person's verdict, a member's grade landing, a
panel made, a rebuild. The Results page reading the partial column (``page_columns``) in
SQL gives the Python page over the whole recomputed column. SQLite and PostgreSQL."""

from __future__ import annotations

import random

from grading.types import ScoringSettings
from storage.services import (
    blindness,
    datasets,
    effective_upkeep,
    panel_reads,
    panel_results,
    panel_scores,
    panel_upkeep,
    panels,
    reviews,
    runs,
)
from storage.services.results import ResultsFilter, VerdictFilter, results_page
from storage.services.results_python import page_in_python
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_effective_verdicts import CHOICES

PENALTY = ScoringSettings(length_penalty={"free_budget": 2, "max_cap": 6,
                                          "penalty_at_cap": 0.4, "penalty_type": "OUTPUT_ONLY"})


class _Set:
    def __init__(self, sessions, size: int = 12):
        self.sessions, self.rng = sessions, random.Random(41)
        self.version = make_rubric(sessions, "Mixed", MIXED)
        self.dataset = datasets.create_dataset(sessions, "Answers", responses=[
            {"id": f"r{i}", "text": "answer " * (i + 1)} for i in range(size)], actor=ADMIN)
        self.responses = datasets.list_responses(sessions, self.dataset.id, limit=None)
        self.runs = [make_run(sessions, self.version.id, self.dataset.id).id
                     for _ in range(3)]
        self.where = {"dataset_id": self.dataset.id, "rubric_version_id": self.version.id}

    def grade(self, run_id: int, rid: int) -> None:
        criteria = self.version.to_criteria()
        picks = [self.rng.choice(CHOICES.get(c.name, ("MET", "UNMET"))) for c in criteria]
        runs.record_grades(self.sessions, run_id,
                           [runs.NewGrade(rid, judge_report(picks, criteria), 0.1)])

    def verdict(self, rid: int, who: str = "ana") -> None:
        criterion = self.rng.choice(list(self.version.criteria))
        reviews.set_human_verdict(
            self.sessions, actor=local_actor(who), response_id=rid,
            criterion_id=criterion.id,
            verdict=self.rng.choice(CHOICES.get(criterion.name, ("MET", "UNMET"))))

    def finish(self) -> None:
        for run_id in self.runs:
            runs.start_run(self.sessions, run_id)
            runs.finish_run(self.sessions, run_id)


def _kept(sessions) -> list[tuple]:
    with sessions() as session:
        return panel_scores.maintained_rows(session)


def _rebuilt(sessions) -> list[tuple]:
    """The rows a full recomputation gives, in a transaction rolled back."""
    with sessions() as session:
        panel_scores.rescore_all(session)
        found = panel_scores.maintained_rows(session)
        session.rollback()
    return found


def _reviewed_scores(sessions, panel_id: int, ids: list[int]) -> list[tuple]:
    """(panel, response, score, error) as ``panel_results`` aggregates them."""
    return [(panel_id, r.response_id, r.effective.score, r.effective.error)
            for r in panel_results.panel_results(sessions, panel_id, ids, scores_only=True)]


def _same_pages(sessions, s: _Set, panel_ids: list[int]) -> None:
    """Sorted, filtered and binned by the panels: the SQL page over the partial columns
    equals the Python page over the recomputed whole columns."""
    partial = panel_results.page_columns(sessions, **s.where, panel_ids=panel_ids)
    whole = panel_results.recomputed_columns(sessions, **s.where, panel_ids=panel_ids)
    assert all(c.partial for c in partial)
    criterion = s.version.criteria[0]
    for panel_id in panel_ids:
        for filters in (ResultsFilter(), ResultsFilter(min_score=0.3, score_panel_id=panel_id),
                        ResultsFilter(verdict=VerdictFilter(criterion.id, "MET", None,
                                                            panel_id=panel_id))):
            for descending in (True, False):
                kwargs = dict(**s.where, run_ids=s.runs, filters=filters, sort="score",
                              sort_panel_id=panel_id, descending=descending,
                              distribution_bins=4, limit=5)
                new = results_page(sessions, **kwargs, panels=partial)
                assert new == page_in_python(sessions, **kwargs, panels=whole)
                assert new.rows


def test_kept_panel_scores_follow_verdicts_and_member_grades(sessions):
    s = _Set(sessions)
    ids = [r.id for r in s.responses]
    late = ids[:3]  # the first member grades these only after people reviewed them
    for run_id in s.runs:
        for rid in ids:
            if not (run_id == s.runs[0] and rid in late):
                s.grade(run_id, rid)
    s.finish()
    made = [panels.create_panel(sessions, run_ids=s.runs, rule="majority", actor=ADMIN).id,
            panels.create_panel(sessions, run_ids=s.runs[:2], rule="any", actor=ADMIN,
                                scoring=PENALTY).id]
    assert _kept(sessions) == []  # nobody reviewed anything yet
    for rid in ids[:6]:
        s.verdict(rid)
    kept = _kept(sessions)
    assert kept == _rebuilt(sessions)
    assert {row[1] for row in kept} == set(ids[:6])
    assert kept == sorted(row for p in made for row in _reviewed_scores(sessions, p, ids[:6]))
    _same_pages(sessions, s, made)

    # a person's verdict on a reviewed response
    before = _kept(sessions)
    for _ in range(6):
        s.verdict(s.rng.choice(ids[:6]), who=s.rng.choice(["ana", "bo"]))
    assert _kept(sessions) == _rebuilt(sessions)
    assert _kept(sessions) != before  # the verdicts moved some kept score
    _same_pages(sessions, s, made)

    # a member's grade landing on reviewed responses: the panel's decision changes
    before = _kept(sessions)
    for rid in late:
        s.grade(s.runs[0], rid)
    assert _kept(sessions) == _rebuilt(sessions)
    assert _kept(sessions) != before
    _same_pages(sessions, s, made)

    # a grade of a run outside the panels changes nothing kept
    other = make_run(sessions, s.version.id, s.dataset.id).id
    before = _kept(sessions)
    s.grade(other, ids[0])
    assert _kept(sessions) == before

    # the rebuild commands give the same rows; a panel made later is filled with them
    assert effective_upkeep.rebuild_effective(sessions, actor=ADMIN)[1] == 0
    assert _kept(sessions) == before
    panel_upkeep.rebuild_panels(sessions, actor=ADMIN)
    assert _kept(sessions) == before
    third = panels.create_panel(sessions, run_ids=s.runs[1:], rule="unanimous",
                                actor=ADMIN).id
    assert {row[1] for row in _kept(sessions) if row[0] == third} == set(ids[:6])
    assert _kept(sessions) == _rebuilt(sessions)
    _same_pages(sessions, s, [*made, third])

    # a panel removed takes its rows with it
    panels.delete_panel(sessions, third, actor=ADMIN)
    assert {row[0] for row in _kept(sessions)} == set(made)


def _graded_with_panel(sessions):
    """Eight responses graded by every run of a ``_Set``, and a majority panel of them."""
    s = _Set(sessions, size=8)
    for run_id in s.runs:
        for r in s.responses:
            s.grade(run_id, r.id)
    s.finish()
    return s, panels.create_panel(sessions, run_ids=s.runs, rule="majority", actor=ADMIN).id


def test_a_partial_column_holds_only_the_reviewed_and_reads_the_rest_stored(sessions):
    s, panel_id = _graded_with_panel(sessions)
    reviewed = [r.id for r in s.responses[:2]]
    for rid in reviewed:
        s.verdict(rid)
    [partial] = panel_results.page_columns(sessions, **s.where, panel_ids=[panel_id])
    assert set(partial.scores) == set(reviewed) and partial.verdicts == {}
    [whole] = panel_results.recomputed_columns(sessions, **s.where, panel_ids=[panel_id])
    assert panel_results.panel_columns(sessions, **s.where, panel_ids=[panel_id]) == (whole,)
    page = results_page(sessions, **s.where, run_ids=s.runs, panels=[partial])
    assert [row.panel_scores for row in page.rows] == [
        (whole.scores[r.id][0],) for r in s.responses]


def test_a_blind_viewers_column_aggregates_only_what_they_may_not_see(sessions,
                                                                      monkeypatch):
    s, panel_id = _graded_with_panel(sessions)
    seen, unseen = s.responses[0].id, s.responses[1].id
    s.verdict(seen, who="ana")
    s.verdict(unseen, who="bo")
    ana = blindness.as_reviewer("ana")
    aggregated: list[list[int]] = []
    original = panel_results.panel_results

    def spy(sessions, panel_id, response_ids=None, **kwargs):
        aggregated.append(list(response_ids))
        return original(sessions, panel_id, response_ids, **kwargs)

    monkeypatch.setattr(panel_results, "panel_results", spy)
    [partial] = panel_results.page_columns(sessions, **s.where, panel_ids=[panel_id],
                                           sight=ana)
    monkeypatch.undo()
    assert aggregated == [[unseen]]  # ana answered what was decided on ``seen``
    [whole] = panel_results.recomputed_columns(sessions, **s.where, panel_ids=[panel_id],
                                               sight=ana)
    with sessions() as session:
        assert panel_reads.whole_column(session, partial) == whole
    kwargs = dict(**s.where, run_ids=s.runs, sort="score", sort_panel_id=panel_id,
                  descending=True, distribution_bins=3, sight=ana)
    assert results_page(sessions, **kwargs, panels=[partial]) == page_in_python(
        sessions, **kwargs, panels=[whole])
