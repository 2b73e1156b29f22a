"""A Results view with no filter (storage.services.results_query ``plain_histogram`` and
``ranked_page``): its histograms are the stored scores' counts corrected on the responses
people touched, its page by a score column the first of the column's index merged with
the touched responses; no matched set of the whole dataset is written. Every figure is the
Python page's (and, for people's score, the kept matched set's), for every viewer, on
SQLite and PostgreSQL; where the page reaches the responses without a score, or a column
has too many distinct scores, the matched set is kept as before."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import event

from storage.services import blindness, panel_results, results_query, results_unfiltered, reviews
from storage.services.results import ResultsFilter, results_page
from storage.services.results_python import page_in_python
from storage.services.results_query import PageQuery, ResultsQuery
from storage.services.reviewers import local_actor
from tests.storage.test_agreement_counts import _full_scans, _plan
from tests.storage.test_results_sql import SIGHTS, _History

MATCHED = results_query.MATCHED_TABLE


class _Statements:
    """The statements the engine runs while inside."""

    def __init__(self, sessions):
        self.engine, self.seen = sessions.kw["bind"], []

    def _record(self, conn, cursor, statement, params, context, many):
        self.seen.append(statement)

    def __enter__(self):
        event.listen(self.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc):
        event.remove(self.engine, "before_cursor_execute", self._record)

    def kept(self) -> bool:
        return any(MATCHED in statement for statement in self.seen)


def _history(sessions, seed: int = 21):
    history = _History(sessions, seed, size=30)
    history.grade(200)  # every run grades every response (a few fail: no score)
    for _ in range(12):
        history.review()
    for _ in range(4):
        history.adjudicate()
    history.finish()
    return history, history.make_panels()


def _kept_page(monkeypatch, sessions, **kwargs):
    """The page as read before: the matched set kept, counted, ordered and binned."""
    with monkeypatch.context() as patched:
        patched.setattr(results_query.ResultsQuery, "plain_histogram",
                        lambda self, bins: None)
        with _Statements(sessions) as statements:
            page = results_page(sessions, **kwargs)
        assert statements.kept()
    return page


def _views(history, panel_ids, sight):
    a, b, c = (run.id for run in history.runs)
    views = [dict(sort="score", sort_run_id=run, descending=descending)
             for run in (a, b, c) for descending in (True, False)]
    views += [dict(sort="score", sort_panel_id=p, descending=True) for p in panel_ids]
    views += [dict(sort="spread", descending=descending) for descending in (True, False)]
    views += [dict(sort="reviewed", descending=True), dict(sort="response"),
              dict(sort="response", descending=True)]
    if sight.sees_all:
        views.append(dict(sort="people", descending=True))
    return views


@pytest.mark.parametrize("sight", SIGHTS, ids=lambda s: repr(s)[:40])
def test_an_unfiltered_view_writes_no_matched_set_and_gives_the_python_page(
        sessions, copied_world, monkeypatch, sight):
    # the one history every viewer reads: built once per backend, then copied
    history, panel_ids = copied_world("unfiltered", _history)
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                 run_ids=[run.id for run in history.runs])
    columns = panel_results.page_columns(sessions, dataset_id=history.dataset.id,
                                         rubric_version_id=history.version.id,
                                         panel_ids=panel_ids, sight=sight)
    for view in _views(history, panel_ids, sight):
        for offset in (0, 4):
            kwargs = dict(**where, **view, offset=offset, limit=6, distribution_bins=4,
                          panels=columns, sight=sight)
            with _Statements(sessions) as statements:
                page = results_page(sessions, **kwargs)
            # people's score: only a few responses have one here (the next test)
            assert view["sort"] == "people" or not statements.kept(), kwargs
            assert page.distribution and page.total == len(history.responses)
            assert page == _kept_page(monkeypatch, sessions, **kwargs), kwargs
            if view["sort"] != "people":
                assert page == page_in_python(sessions, **kwargs), kwargs


def test_the_histograms_follow_each_new_verdict_without_a_matched_set(sessions):
    """The correction on the touched responses is what moves the bins: a verdict that
    changes a response's effective score moves its count from one bin to another."""
    history, _panels = _history(sessions, seed=22)
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                 run_ids=[run.id for run in history.runs], distribution_bins=5,
                 sort="score", descending=True, limit=5)
    before = results_page(sessions, **where)
    rng = random.Random(22)
    moved = False
    for _ in range(10):
        rng.choice([history.review, history.adjudicate])()
        with _Statements(sessions) as statements:
            page = results_page(sessions, **where)
        assert not statements.kept()
        assert page == page_in_python(sessions, **where)
        moved = moved or page.distribution != before.distribution
    assert moved


def test_a_page_past_the_scored_responses_is_read_from_the_kept_set(sessions):
    """The last page holds the responses without a score (failed grades): the index of
    scores does not reach them, so the matched set is kept and ordered."""
    history, _panels = _history(sessions, seed=23)
    kwargs = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                  run_ids=[run.id for run in history.runs], sort="score",
                  descending=True, offset=len(history.responses) - 4, limit=10,
                  distribution_bins=4)
    with _Statements(sessions) as statements:
        page = results_page(sessions, **kwargs)
    assert statements.kept()
    assert page == page_in_python(sessions, **kwargs)
    assert any(row.scores[0] is None for row in page.rows)


def test_columns_with_more_distinct_scores_than_counted_are_binned_from_the_kept_set(
        sessions, monkeypatch):
    history, panel_ids = _history(sessions, seed=24)
    monkeypatch.setattr(results_unfiltered, "_DISTINCT", 1)
    columns = panel_results.page_columns(sessions, dataset_id=history.dataset.id,
                                         rubric_version_id=history.version.id,
                                         panel_ids=panel_ids)
    kwargs = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                  run_ids=[run.id for run in history.runs], sort="score", limit=5,
                  distribution_bins=4, panels=columns, filters=ResultsFilter())
    with _Statements(sessions) as statements:
        page = results_page(sessions, **kwargs)
    assert statements.kept()
    assert page == page_in_python(sessions, **kwargs)


def test_a_blind_reviewers_unfiltered_histograms_leave_out_what_they_may_not_see(sessions):
    """Ana's histograms count the judges' scores where only bo decided (the overlay), not
    the scores bo's verdicts made: they differ from everyone's page, and are the Python
    page's for ana."""
    history, _panels = _history(sessions, seed=25)
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                 run_ids=[run.id for run in history.runs], distribution_bins=10, limit=5,
                 sort="score", descending=True)
    ana = blindness.as_reviewer("ana")
    seen = results_page(sessions, **where, sight=ana)
    assert seen == page_in_python(sessions, **where, sight=ana)
    assert seen.distribution != results_page(sessions, **where).distribution


def test_the_page_by_peoples_score_is_read_from_the_scored_responses_alone(
        sessions, monkeypatch):
    """Only a response people decided has a score of theirs: the page by it is the scored
    ones in order while it does not reach the others."""
    history, _panels = _history(sessions, seed=26)
    for response in history.responses[:8]:
        verdicts = {c.id: (history._choice(c), "") for c in history.version.criteria}
        for who in ("ana", "bo"):
            reviews.save_review(sessions, actor=local_actor(who), response_id=response.id,
                                verdicts=verdicts)
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                 run_ids=[run.id for run in history.runs], distribution_bins=4,
                 sort="people")
    for descending in (True, False):
        for offset in (0, 3):
            kwargs = dict(**where, descending=descending, offset=offset, limit=4)
            with _Statements(sessions) as statements:
                page = results_page(sessions, **kwargs)
            assert not statements.kept(), kwargs
            assert page == _kept_page(monkeypatch, sessions, **kwargs)
            assert len(page.rows) == 4


def test_the_stored_scores_are_counted_and_ranked_through_their_indexes(sessions):
    """The histograms' counts and the first untouched responses by a run's or the panel's
    score: searched in the run's (panel's) scores index, never a full scan of the grades
    or the panel's decisions."""
    history, panel_ids = _history(sessions, seed=27)
    spec = PageQuery(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                     runs=tuple(run.id for run in history.runs), panels=tuple(panel_ids))
    with sessions() as session:
        query = ResultsQuery(session, spec, with_scores=True)
        names = [f"s{history.runs[0].id}", f"p{panel_ids[0]}"]
        statements = [statement for name in names
                      for statement in (query.stored_counts_query(name),
                                        query.stored_top_query(name, True, 50),
                                        query.stored_top_query(name, False, 50))]
    sqlite = sessions.kw["bind"].dialect.name == "sqlite"
    for position, statement in enumerate(statements):
        plan = _plan(sessions, statement)
        for table in ("grades", "panel_grades", "effective_scores"):
            assert not _full_scans(plan, table), plan
        if sqlite and position < 3:  # a run's scores in score order, not row by row
            assert "SEARCH grades USING COVERING INDEX ix_grades_run_ranked" in plan, plan
