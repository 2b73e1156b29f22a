"""The Results page read in SQL (storage.services.results_sql) gives every figure the Python
computation gives (storage.services.results_python, the page as it was read before issue
41's step): on random histories of grades, failures, reviews, disputes and adjudications,
for every filter and sort, on SQLite and PostgreSQL; its query reads the verdict tables
through indexes."""

from __future__ import annotations

import random
import re

import pytest
from sqlalchemy import text

from grading.types import EvaluationReport
from storage.services import blindness, datasets, panel_results, panels, results_sql, reviews, runs
from storage.services.results import ResultsFilter, VerdictFilter, results_page
from storage.services.results_python import page_in_python
from storage.services.results_query import PageQuery, ResultsQuery, VerdictClause
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_agreement_counts import _full_scans, _plan
from tests.storage.test_effective_verdicts import CHOICES

REVIEWERS = ("ana", "bo")
# Everyone, each reviewer blind to the other, one who answered nothing, nobody signed in.
SIGHTS = (blindness.EVERYTHING, blindness.as_reviewer("ana"), blindness.as_reviewer("bo"),
          blindness.as_reviewer("cy"), blindness.NOBODY)


class _History:
    def __init__(self, sessions, seed: int, size: int = 24):
        self.sessions, self.rng = sessions, random.Random(seed)
        self.version = make_rubric(sessions, f"Mixed {seed}", MIXED)
        rows = [{"id": f"r{i}", "query": f"q{i}", "text": f"answer {i}",
                 "model": "gpt-x" if i % 3 else "claude-y"} for i in range(size)]
        self.dataset = datasets.create_dataset(sessions, f"Answers {seed}", responses=rows,
                                               actor=ADMIN)
        self.responses = datasets.list_responses(sessions, self.dataset.id, limit=None)
        self.runs = [make_run(sessions, self.version.id, self.dataset.id),
                     make_run(sessions, self.version.id, self.dataset.id),
                     make_run(sessions, self.version.id, self.dataset.id, grader="one_shot")]
        self.todo = [(run.id, r.id) for run in self.runs for r in self.responses]
        self.rng.shuffle(self.todo)

    def _choice(self, criterion) -> str:
        return self.rng.choice(CHOICES.get(criterion.name, ("MET", "UNMET")))

    def grade(self, count: int) -> None:
        criteria = self.version.to_criteria()
        for run_id, rid in [self.todo.pop() for _ in range(min(count, len(self.todo)))]:
            if self.rng.random() < 0.08:
                report = EvaluationReport(score=None, error="provider timed out")
            else:
                # Judges agree most of the time, so "disagree" is a real filter.
                base = random.Random(rid)
                picks = [base.choice(CHOICES.get(c.name, ("MET", "UNMET"))) for c in criteria]
                if self.rng.random() < 0.3:
                    k = self.rng.randrange(len(criteria))
                    picks[k] = self._choice(criteria[k])
                report = judge_report(picks, criteria)
            runs.record_grades(self.sessions, run_id, [runs.NewGrade(rid, report, 0.1)])

    def review(self) -> None:
        response = self.rng.choice(self.responses)
        who = self.rng.choice(REVIEWERS)
        picked = self.rng.sample(list(self.version.criteria),
                                 self.rng.randint(1, len(self.version.criteria)))
        reviews.save_review(self.sessions, actor=local_actor(who), response_id=response.id,
                            verdicts={c.id: (self._choice(c), "") for c in picked})

    def adjudicate(self) -> None:
        response = self.rng.choice(self.responses)
        criterion = self.rng.choice(list(self.version.criteria))
        reviews.adjudicate(self.sessions, actor=ADMIN, response_id=response.id,
                           criterion_id=criterion.id, verdict=self._choice(criterion))

    def filters(self) -> list[ResultsFilter]:
        a, b, c = (run.id for run in self.runs)
        accurate, clarity, tone = self.version.criteria
        return [
            ResultsFilter(), ResultsFilter(disagree_only=True), ResultsFilter(failed_only=True),
            ResultsFilter(reviewed="reviewed"), ResultsFilter(reviewed="not_reviewed"),
            ResultsFilter(min_score=0.4), ResultsFilter(max_score=0.6, score_run_id=b),
            ResultsFilter(min_score=0.2, max_score=0.8, score_run_id=c),
            ResultsFilter(metadata=(("model", "gpt-x"),)), ResultsFilter(search="answer 1"),
            ResultsFilter(verdict=VerdictFilter(accurate.id, "MET", a)),
            ResultsFilter(verdict=VerdictFilter(clarity.id, "Good", b)),
            ResultsFilter(verdict=VerdictFilter(tone.id, "CANNOT_ASSESS", c)),
            ResultsFilter(verdict=VerdictFilter(tone.id, "no text", a), reviewed="reviewed"),
            ResultsFilter(disagree_only=True, min_score=0.3, metadata=(("model", "gpt-x"),)),
        ]


    def finish(self) -> None:
        """Every run done: a panel's stored decisions are then the ones read."""
        for run in self.runs:
            runs.start_run(self.sessions, run.id)
            runs.finish_run(self.sessions, run.id)

    def make_panels(self) -> list[int]:
        a, b, c = (run.id for run in self.runs)
        return [panels.create_panel(self.sessions, run_ids=[a, b, c], rule="majority",
                                    actor=ADMIN).id,
                panels.create_panel(self.sessions, run_ids=[a, b], rule="any",
                                    actor=ADMIN).id]

    def panel_filters(self, panel_ids: list[int]) -> list[ResultsFilter]:
        p, q = panel_ids
        b = self.runs[1].id
        accurate, clarity, tone = self.version.criteria
        return [
            ResultsFilter(min_score=0.4, score_panel_id=p), ResultsFilter(max_score=0.5),
            ResultsFilter(min_score=0.1, max_score=0.7, score_panel_id=q, score_run_id=b),
            ResultsFilter(verdict=VerdictFilter(accurate.id, "MET", None, panel_id=p)),
            ResultsFilter(verdict=VerdictFilter(clarity.id, "Good", None, panel_id=q)),
            ResultsFilter(verdict=VerdictFilter(tone.id, "CANNOT_ASSESS", None, panel_id=p),
                          reviewed="reviewed"),
            ResultsFilter(disagree_only=True, min_score=0.3, score_panel_id=q),
        ]


def _compare_views(sessions, history: _History, rng: random.Random, views: int, *,
                   panel_ids: list[int] = ()) -> int:
    """Random views with the panels shown (and in the filters, sort and histograms) and
    random viewers: the SQL page answers, and gives the Python page."""
    run_ids = [run.id for run in history.runs]
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id)
    columns = {sight: panel_results.panel_columns(sessions, **where, panel_ids=panel_ids,
                                                  sight=sight) if panel_ids else ()
               for sight in SIGHTS}
    choices = history.filters() + (history.panel_filters(panel_ids) if panel_ids else [])
    compared = 0
    for _ in range(views):
        sight = rng.choice(SIGHTS)
        kwargs = dict(
            **where, run_ids=run_ids, filters=rng.choice(choices),
            sort=rng.choice(["response", "score", "score", "spread", "reviewed"]),
            sort_run_id=rng.choice([None, *run_ids]),
            sort_panel_id=rng.choice([None, *panel_ids]), descending=rng.random() < 0.5,
            offset=rng.choice([0, 0, 5]), limit=rng.choice([7, 50]),
            distribution_bins=rng.choice([0, 4]), score_gap=rng.choice([0.2, 0.05]),
            panels=columns[sight], sight=sight)
        new = results_sql.sql_page(sessions, facts=None, **kwargs)
        assert new is not None, kwargs
        old = page_in_python(sessions, **kwargs)
        assert new == old, f"{kwargs}"
        compared += len(new.rows)
    return compared


def test_the_sql_page_gives_the_python_page_with_panels_and_blind_viewers(sessions):
    for seed in (6, 7):
        history = _History(sessions, seed)
        rng = random.Random(seed)
        history.grade(40)
        for _ in range(10):
            history.review()
        assert _compare_views(sessions, history, rng, 20) > 0  # blind viewers, no panel
        history.grade(100)
        history.finish()
        panel_ids = history.make_panels()
        for _ in range(4):
            history.adjudicate()
        assert _compare_views(sessions, history, rng, 30, panel_ids=panel_ids) > 0
        for _ in range(10):
            rng.choice([history.review, history.review, history.adjudicate])()
        assert _compare_views(sessions, history, rng, 30, panel_ids=panel_ids) > 0


def test_a_panel_still_grading_is_read_in_python(sessions):
    """Its stored decisions are not the ones read while a member is grading."""
    history = _History(sessions, 8, size=8)
    history.grade(12)
    [panel_id, _other] = history.make_panels()
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id)
    columns = panel_results.panel_columns(sessions, **where, panel_ids=[panel_id])
    kwargs = dict(**where, run_ids=[run.id for run in history.runs],
                  filters=ResultsFilter(), sort="score", sort_panel_id=panel_id,
                  panels=columns, distribution_bins=3)
    assert results_sql.sql_page(sessions, facts=None, descending=False, offset=0,
                                limit=50, score_gap=0.2, sort_run_id=None, **kwargs) is None
    assert results_page(sessions, **kwargs) == page_in_python(sessions, **kwargs)


def _compare(sessions, history: _History, rng: random.Random, views: int) -> int:
    run_ids = [run.id for run in history.runs]
    compared = 0
    for _ in range(views):
        filters = rng.choice(history.filters())
        sort = rng.choice(["response", "score", "spread", "reviewed"])
        kwargs = dict(
            dataset_id=history.dataset.id, rubric_version_id=history.version.id,
            run_ids=run_ids, filters=filters, sort=sort,
            sort_run_id=rng.choice([None, *run_ids]), descending=rng.random() < 0.5,
            offset=rng.choice([0, 0, 5]), limit=rng.choice([7, 50]),
            distribution_bins=rng.choice([0, 4]), score_gap=rng.choice([0.2, 0.05]))
        new = results_page(sessions, **kwargs)
        old = page_in_python(sessions, **kwargs)
        assert new == old, f"{kwargs}"
        compared += len(new.rows)
    return compared


def test_the_sql_page_gives_the_python_page_on_random_histories(sessions):
    for seed in (1, 2):
        history = _History(sessions, seed)
        rng = random.Random(seed)
        history.grade(30)
        for _ in range(12):
            history.review()
        history.grade(20)  # grades landing on reviewed responses
        for _ in range(4):
            history.adjudicate()
        assert _compare(sessions, history, rng, 25) > 0
        for _ in range(10):
            rng.choice([history.review, history.review, history.adjudicate])()
        history.grade(100)
        assert _compare(sessions, history, rng, 25) > 0


def test_the_page_counts_facts_passed_in_as_the_python_page(sessions):
    """With the judges' facts from a cache, as the Results page passes them."""
    from storage.services.results import grade_facts

    history = _History(sessions, 3)
    history.grade(60)
    for _ in range(10):
        history.review()
    run_ids = [run.id for run in history.runs]
    facts = grade_facts(sessions, dataset_id=history.dataset.id,
                        rubric_version_id=history.version.id, run_ids=run_ids)
    for filters in history.filters():
        kwargs = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                      run_ids=run_ids, filters=filters, sort="score", facts=facts,
                      distribution_bins=5)
        assert results_page(sessions, **kwargs) == page_in_python(sessions, **kwargs)


def test_sorting_by_peoples_score_puts_unscored_responses_last(sessions):
    history = _History(sessions, 4)
    history.grade(72)
    for _ in range(20):
        history.review()
    scores = {s.response_id: s.score for s in reviews.human_scores(
        sessions, history.version.id, [r.id for r in history.responses])}
    for descending in (False, True):
        page = results_page(sessions, dataset_id=history.dataset.id,
                            rubric_version_id=history.version.id,
                            run_ids=[run.id for run in history.runs], sort="people",
                            descending=descending, limit=100)
        known = sorted((rid for rid, s in scores.items() if s is not None),
                       key=lambda rid: scores[rid], reverse=descending)
        assert len(known) >= 2
        unknown = sorted(rid for rid, s in scores.items() if s is None)
        assert [row.response_id for row in page.rows] == known + unknown


@pytest.mark.parametrize("sort", ["score", "people", "spread", "reviewed"])
def test_the_page_query_reads_the_verdict_tables_through_indexes(sessions, sort):
    history = _History(sessions, 5, size=6)
    history.grade(18)
    history.review()
    accurate = history.version.criteria[0]
    spec = PageQuery(
        dataset_id=history.dataset.id, rubric_version_id=history.version.id,
        runs=tuple(run.id for run in history.runs), reviewed="any", min_score=0.1,
        verdict=VerdictClause(accurate.id, "MET", history.runs[0].id, False),
        disagree_only=True)
    with sessions() as session:
        query = ResultsQuery(session, spec, with_scores=True)
        statements = [query.page_query(sort, history.runs[1].id, True, 0, 50),
                      query.count_query()]
    for statement in statements:
        plan = _plan(sessions, statement)
        for table in ("grade_criteria", "human_verdicts", "effective_verdicts", "grades",
                      "effective_scores", "effective_run_scores", "people",
                      *(f"[ge]{run.id}" for run in history.runs)):
            assert not _full_scans(plan, table), plan


def test_the_panel_sort_reads_the_panel_tables_through_indexes(sessions):
    """Sorted by a panel's score, ranged on it and filtered on its verdict, with a blind
    viewer's overlay: the panel's stored rows by their keys, never a full scan."""
    from storage.services.results_query import Overlay, overlay_table

    history = _History(sessions, 9, size=6)
    history.grade(18)
    history.review()
    history.finish()
    panel_id, other = history.make_panels()
    accurate = history.version.criteria[0]
    rid = history.responses[0].id
    spec = PageQuery(
        dataset_id=history.dataset.id, rubric_version_id=history.version.id,
        runs=tuple(run.id for run in history.runs), min_score=0.1, score_panel_id=panel_id,
        panels=(panel_id, other),
        verdict=VerdictClause(accurate.id, "MET", None, False, panel_id=panel_id,
                              hidden=(rid,)),
        overlay=Overlay(runs={(rid, history.runs[0].id): 0.5}, judged=frozenset({rid}),
                        panels={(rid, panel_id): 0.25}))
    with sessions() as session, overlay_table(session, spec.overlay):
        query = ResultsQuery(session, spec, with_scores=True)
        # The overlay's temporary table lives on this connection: plan on it.
        plans = [_plan_on(session, statement) for statement in (
            query.page_query("score", None, True, 0, 50, panel_id), query.count_query())]
    for plan in plans:
        assert "panel_grades" in plan or f"pg{panel_id}" in plan, plan
        assert re.search(rf"\bop{panel_id}\b", plan), plan  # the overlay, by its key
        for table in ("panel_grades", "panel_verdicts", "grade_criteria", "effective_verdicts",
                      "grades", "effective_run_scores", "results_overlay", f"pg{panel_id}",
                      f"pg{other}", f"op{panel_id}", "oj", f"o{history.runs[0].id}"):
            assert not _full_scans(plan, table), plan


def _plan_on(session, statement) -> str:
    """``_plan`` on the session's own connection."""
    connection = session.connection()
    compiled = statement.compile(connection, compile_kwargs={"literal_binds": True})
    if connection.dialect.name == "sqlite":
        return "\n".join(row[-1] for row in connection.execute(
            text(f"EXPLAIN QUERY PLAN {compiled}")))
    connection.execute(text("SET LOCAL enable_seqscan = off"))
    return "\n".join(row[0] for row in connection.execute(text(f"EXPLAIN {compiled}")))


def test_a_blind_reviewers_page_reads_hidden_decisions_only_where_the_query_needs_them(
        sessions, monkeypatch):
    """Listed or sorted by review counts, only the page's rows need the viewer's hidden
    decisions; a score sort, a score range, the histograms or a verdict filter need those
    of every reviewed response (they decide which rows match, in what order)."""
    from storage.repositories import effective as effective_repo
    from storage.services import effective_reads

    history = _History(sessions, 11, size=30)
    history.grade(90)
    for _ in range(40):
        history.review()
    reviewed = set(effective_repo.reviewed_response_ids(
        sessions(), history.version.id, history.dataset.id))
    asked: list[set[int]] = []
    real = effective_reads.decided_keys

    def spy(session, rubric_version_id, dataset_id, response_ids=None):
        # None: every decided response of the set
        asked.append(reviewed if response_ids is None else set(response_ids))
        return real(session, rubric_version_id, dataset_id, response_ids)

    monkeypatch.setattr(effective_reads, "decided_keys", spy)
    sight = blindness.as_reviewer("ana")
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                 run_ids=[run.id for run in history.runs], sight=sight, limit=4)
    for sort in ("response", "reviewed"):
        asked.clear()
        page = results_page(sessions, **where, sort=sort, offset=4)
        assert page == page_in_python(sessions, **where, sort=sort, offset=4)
        on_page = {row.response_id for row in page.rows}
        assert asked and all(ids <= on_page for ids in asked), (sort, asked)
    assert len(reviewed) > 8  # more reviewed responses than a page holds
    for extra in ({"sort": "score"}, {"distribution_bins": 4},
                  {"filters": ResultsFilter(min_score=0.1)}):
        asked.clear()
        results_page(sessions, **where, **extra)
        assert reviewed <= set().union(*asked), extra


def test_a_blind_reviewers_cached_reviewed_scores_score_the_page_without_aggregating_again(
        sessions, monkeypatch):
    from storage.services.results import reviewed_effective_scores

    history = _History(sessions, 12, size=30)
    history.grade(90)
    for _ in range(40):
        history.review()
    # partly hidden from ana: on a response nobody reviewed yet she answers the first
    # criterion, bo the first two
    from storage.repositories import effective as effective_repo
    with sessions() as session:
        reviewed = set(effective_repo.reviewed_response_ids(session, history.version.id,
                                                            history.dataset.id))
    fresh = next(r for r in history.responses if r.id not in reviewed)
    first, second = list(history.version.criteria)[:2]
    for who, criteria in (("ana", [first]), ("bo", [first, second])):
        reviews.save_review(sessions, actor=local_actor(who), response_id=fresh.id,
                            verdicts={c.id: (history._choice(c), "") for c in criteria})
    sight = blindness.as_reviewer("ana")
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id,
                 run_ids=[run.id for run in history.runs], sight=sight)
    cached = reviewed_effective_scores(sessions, **where)
    views = [dict(sort="score", descending=True, distribution_bins=4, limit=6),
             dict(sort="response", limit=6, offset=6),
             dict(filters=ResultsFilter(min_score=0.2, max_score=0.9), limit=50)]
    expected = [results_page(sessions, **where, **view) for view in views]
    assert any(row.reviewed_count for page in expected for row in page.rows)
    aggregated: list = []
    real = results_sql._effective_overlay
    monkeypatch.setattr(results_sql, "_effective_overlay",
                        lambda *a, **k: aggregated.append(a) or real(*a, **k))
    results_page(sessions, **where, **views[0])
    assert aggregated  # without the cache, the partly hidden responses are aggregated
    aggregated.clear()
    for view, page in zip(views, expected, strict=True):
        assert results_page(sessions, **where, **view, reviewed_scores=cached) == page
        assert page == page_in_python(sessions, **where, **view)
    assert aggregated == []


def test_facts_beyond_what_a_statement_binds_filter_as_the_python_page(sessions, monkeypatch):
    """The judges' failed and disagreeing ids from the cached facts, more than a statement
    binds one by one (one JSON array on SQLite, one array on PostgreSQL), filter as the
    Python page does; at 100,000 responses the GROUP BY in their place took 15-28 s."""
    from storage.services import results_query
    from storage.services.results import grade_facts

    monkeypatch.setattr(results_query, "_LISTED", 2)
    history = _History(sessions, 11)
    history.grade(60)
    for _ in range(8):
        history.review()
    run_ids = [run.id for run in history.runs]
    facts = grade_facts(sessions, dataset_id=history.dataset.id,
                        rubric_version_id=history.version.id, run_ids=run_ids)
    assert len(facts.disagree) > 2 and len(facts.failed) > 2
    for filters in (ResultsFilter(disagree_only=True), ResultsFilter(failed_only=True),
                    ResultsFilter(disagree_only=True, failed_only=True, min_score=0.3)):
        for sort in ("response", "score", "spread"):
            kwargs = dict(dataset_id=history.dataset.id, run_ids=run_ids, sort=sort,
                          rubric_version_id=history.version.id, filters=filters,
                          facts=facts, distribution_bins=4, descending=True)
            page = results_page(sessions, **kwargs)
            assert page.total > 0
            assert page == page_in_python(sessions, **kwargs)


def test_pages_with_other_columns_one_after_another_keep_their_own_matched_set(sessions):
    """The matched set kept for a page (a temporary table of the connection) has the view's
    columns: pages of three runs, of two, of one, with a panel, in turn on one connection,
    each give the Python page (a table left over from the one before, with other columns,
    failed the next page on SQLite)."""
    history = _History(sessions, 12, size=10)
    history.grade(30)
    history.review()
    history.finish()
    panel_id, _other = history.make_panels()
    a, b, c = (run.id for run in history.runs)
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id)
    column = panel_results.panel_columns(sessions, **where, panel_ids=[panel_id])
    for run_ids, panel_columns in (([a, b, c], ()), ([a, b], ()), ([c], ()),
                                   ([a, b, c], column), ([b], column), ([a, b, c], ())):
        kwargs = dict(**where, run_ids=run_ids, sort="score", distribution_bins=3,
                      filters=ResultsFilter(min_score=0.1), panels=panel_columns)
        assert results_page(sessions, **kwargs) == page_in_python(sessions, **kwargs)


def test_the_kept_matched_set_holds_the_querys_rows_and_postgresql_does_not_compile_it(
        sessions):
    """``ResultsQuery.kept``: the temporary table holds exactly the rows of the view's query
    (its filters and columns), and on PostgreSQL the page's statements run without JIT
    (compiling the kept INSERT took 0.3-1.0 s of its 0.7-1.4 s at 100,000)."""
    from sqlalchemy import select

    history = _History(sessions, 13, size=12)
    history.grade(30)
    history.review()
    spec = PageQuery(
        dataset_id=history.dataset.id, rubric_version_id=history.version.id,
        runs=tuple(run.id for run in history.runs), min_score=0.2)
    with sessions() as session:
        query = ResultsQuery(session, spec, with_scores=True)
        expected = sorted(tuple(row) for row in session.execute(query.query))
        assert expected
        with query.kept():
            kept = sorted(tuple(row) for row in session.execute(select(query.matched)))
            assert kept == expected
            assert session.scalar(query.count_query()) == len(expected)
            if session.get_bind().dialect.name == "postgresql":
                assert session.execute(text("SHOW jit")).scalar() == "off"
        assert query.matched is None


def test_the_histogram_as_one_key_and_as_one_key_per_column_gives_the_python_bins(sessions):
    """The bins of every column (3 runs, 2 panels) grouped as one integer key (a digit per
    column) and, past what a double holds exactly (5,000 bins: 5,001 ** 5), as one key per
    column: both the Python page's counts."""
    history = _History(sessions, 13, size=40)
    history.grade(120)
    for _ in range(12):
        history.review()
    history.finish()
    panel_ids = history.make_panels()
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id)
    columns = panel_results.panel_columns(sessions, **where, panel_ids=panel_ids)
    for bins in (7, 5000):
        kwargs = dict(**where, run_ids=[run.id for run in history.runs], panels=columns,
                      distribution_bins=bins)
        page = results_page(sessions, **kwargs)
        assert page == page_in_python(sessions, **kwargs)
        assert len(page.distribution) == 5 * bins
        assert {(b.run_id, b.panel_id) for b in page.distribution if b.count} == {
            *((run.id, None) for run in history.runs), *((None, p) for p in panel_ids)}


def test_the_runs_scores_pivoted_give_the_rows_of_one_join_per_run(sessions):
    """``ResultsQuery._select``: the runs' grades and kept scores read as one row per response
    (``pivoted``, PostgreSQL's matched set of most of the dataset), or the kept scores alone
    so (``kept_pivoted``, the touched responses on PostgreSQL), give the rows of the query
    with one join per run — failed and missing grades, reviewed responses, every filter."""
    history = _History(sessions, 14, size=16)
    history.grade(40)  # of 48: some responses without a grade in some run
    for _ in range(6):
        history.review()
    history.adjudicate()
    run_ids = tuple(run.id for run in history.runs)
    where = dict(dataset_id=history.dataset.id, rubric_version_id=history.version.id)
    checked = 0
    with sessions() as session:
        for filters in history.filters():
            spec = PageQuery(**where, runs=run_ids, search=filters.search,
                             metadata=filters.metadata, failed_only=filters.failed_only,
                             disagree_only=filters.disagree_only, reviewed=filters.reviewed,
                             min_score=filters.min_score, max_score=filters.max_score,
                             score_run_id=filters.score_run_id)
            query = ResultsQuery(session, spec, with_scores=True)
            expected = sorted(tuple(row) for row in session.execute(query.query))
            for wide in ({"pivoted": True}, {"kept_pivoted": True}):
                found = sorted(tuple(row) for row in session.execute(query._select(**wide)[0]))
                assert found == expected, (filters, wide)
            checked += bool(expected)
    assert checked >= 8
