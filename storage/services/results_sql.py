"""One page of the Results table read in SQL (storage.services.results_query): the filters,
sort, count and histograms are queries; only the page's responses are read as rows. The
figures are those of storage.services.results_python (tests/storage/test_results_sql.py
compares the two on random histories)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.repositories import datasets as dataset_repo
from storage.repositories import results as repo
from storage.services import blindness, effective_reads, panel_reads
from storage.services import panels as panels_service
from storage.services.results_python import (
    _effective_overlay,
    check_verdict_filter,
    disputed_labels,
)
from storage.services.results_query import (
    Overlay,
    PageQuery,
    ResultsQuery,
    VerdictClause,
    overlay_table,
)
from storage.services.results_types import (
    SNIPPET_CHARS,
    GradeFacts,
    PanelColumn,
    ResultsFilter,
    ResultsPage,
    Scores,
    results_row,
)

SORTS = ("response", "score", "spread", "reviewed", "people")


def sql_page(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], filters: ResultsFilter, sort: str, sort_run_id: int | None,
    descending: bool, offset: int, limit: int, score_gap: float, facts: GradeFacts | None,
    distribution_bins: int, panels: Sequence[PanelColumn], sort_panel_id: int | None = None,
    sight: blindness.Sight = blindness.EVERYTHING, reviewed_scores: Scores | None = None,
) -> ResultsPage | None:
    """The page, or None where SQL cannot answer it: a judge panel in the filters, the
    sort or the histograms while a member is still grading (its stored decisions are not
    the ones read). ``reviewed_scores`` (``results.reviewed_effective_scores`` with the
    same sight, cached by the caller): where given, the partly hidden responses' scores
    are taken from it instead of aggregated again."""
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        criteria_count = repo.criteria_count(session, rubric_version_id)
        dataset_total = dataset_repo.response_count(session, dataset_id)
        panel_ids = [p.panel_id for p in panels]
        verdict, panel = None, None
        if filters.verdict is not None:
            criterion, panel = check_verdict_filter(session, rubric_version_id, runs,
                                                    filters.verdict, panels)
        if not 0 <= score_gap <= 1e9:
            raise InvalidInputError("the score gap must be a number of 0 or more")
        ranged = filters.min_score is not None or filters.max_score is not None
        if ranged and filters.score_run_id is not None and filters.score_run_id not in runs:
            raise InvalidInputError("the score range applies to a run that is not selected")
        if (ranged and filters.score_panel_id is not None
                and filters.score_panel_id not in panel_ids):
            raise InvalidInputError(
                "the score range applies to a judge panel that is not shown")
        by_panel = sort_panel_id if sort == "score" else None
        if by_panel is not None and by_panel not in panel_ids:
            raise InvalidInputError("the sort applies to a judge panel that is not shown")
        if sort not in SORTS:
            raise InvalidInputError(
                f"unknown sort {sort!r}; use response, score, spread, reviewed or people")
        score_panel = filters.score_panel_id if ranged else None
        read_panels = (by_panel is not None or panel is not None or distribution_bins > 0
                       or (ranged and (score_panel is not None
                                       or filters.score_run_id is None)))
        shown = tuple(panel_ids) if panels and read_panels else ()
        if any(panels_service.unsettled(session, pid) for pid in shown):
            return None
        needs_scores = sort in ("score", "spread") or distribution_bins > 0 or ranged
        # A blind viewer's hidden decisions: of every reviewed response where the query
        # filters, sorts or bins by them (the verdict filter, the overlay of scores), else
        # only of the page's rows, read once the page is known.
        whole = filters.verdict is not None or needs_scores or bool(shown)
        # The query reads the runs' and panels' kept effective scores; a blind viewer's
        # are overlaid where a decision is hidden from them.
        seen = (_Seen.read(session, rubric_version_id, dataset_id, sight)
                if whole else _Seen.none(sight))
        seen.known = reviewed_scores
        if filters.verdict is not None:
            verdict = VerdictClause(
                criterion.id, filters.verdict.verdict, filters.verdict.run_id,
                criterion.is_multi_choice,
                panel_id=None if panel is None else panel.panel_id,
                hidden=seen.hidden_on(criterion.id))
        overlay, partly_scores = None, {}
        if needs_scores and (seen.partly or seen.wholly or shown):
            partly_scores = seen.scores(sessions, runs, seen.partly)
            overlay = Overlay(
                runs={key: value[0] for key, value in partly_scores.items()},
                judged=frozenset(seen.wholly),
                # Only where a decision is hidden from the viewer: elsewhere the column
                # holds the kept score the query reads (``page_columns``), and a reviewed
                # response without one the stored score, as the query's (5,000 rows less
                # to write and join for a blind viewer at 100,000).
                panels={(rid, p.panel_id): p.scores.get(rid, (None, None))[0]
                        for p in panels if p.panel_id in shown
                        for rid in sorted(seen.hidden)})
        spec = PageQuery(
            dataset_id=dataset_id, rubric_version_id=rubric_version_id, runs=tuple(runs),
            search=filters.search, metadata=filters.metadata, verdict=verdict,
            failed_only=filters.failed_only, disagree_only=filters.disagree_only,
            reviewed=filters.reviewed, min_score=filters.min_score,
            max_score=filters.max_score, score_run_id=filters.score_run_id,
            score_gap=score_gap, panels=shown, score_panel_id=score_panel, overlay=overlay)
        with overlay_table(session, overlay):
            usable = (facts is not None and facts.run_ids == tuple(runs)
                      and facts.score_gap == score_gap)
            query = ResultsQuery(session, spec, with_scores=needs_scores,
                                 known=(facts.failed, facts.disagree) if usable else None)
            # No filter: every response matches; the histograms are the stored scores'
            # counts corrected on the responses people touched, and the page one ORDER BY
            # ... LIMIT over an index (no matched set of the whole dataset written and read
            # three times; by the spread, one ORDER BY over the query's rows). Where that
            # cannot be read so, the matched set is kept as below.
            plain = filters == ResultsFilter() and needs_scores
            if plain:
                distribution = query.plain_histogram(distribution_bins)
                plain = distribution is not None
            if plain:
                total = dataset_total
                column = _sort_column(sort, sort_run_id, by_panel, runs)
                page_ids = (query.ranked_page(column, descending, offset, limit)
                            if column is not None else None)
                if page_ids is None and column in (None, "spread"):
                    # in dataset order or by the review count (no score read), or by the
                    # spread past the responses with one: one ORDER BY over the query
                    query.materialized = sort == "spread"
                    pager = (query if sort == "spread"
                             else ResultsQuery(session, spec, with_scores=False))
                    page_ids = pager.page(sort, sort_run_id, descending, offset, limit,
                                          by_panel)
                plain = page_ids is not None
            # Scores or filters: the matched set is kept once for the count, the page and
            # the histograms; the plain table in dataset order pages by its index instead.
            keep = not plain and (needs_scores or filters != ResultsFilter())
            # No filter and no histogram: every response of the dataset matches (the
            # query's joins are all outer), so the count is the dataset's and the page one
            # ORDER BY ... LIMIT (the matched set's count was 77-88 ms of a 0.1 s page at
            # 100,000 on SQLite, the rest a few ms).
            counted = not plain and filters == ResultsFilter() and distribution_bins <= 0
            if counted:
                total, distribution = dataset_total, ()
                page_ids = (query.page(sort, sort_run_id, descending, offset, limit, by_panel)
                            if total else [])
            with query.kept() if keep and not counted else contextlib.nullcontext():
                if not plain and not counted:
                    total, ranges = query.summary(with_ranges=distribution_bins > 0)
                    page_ids = (query.page(sort, sort_run_id, descending, offset, limit,
                                           by_panel) if total else [])
                    distribution = (query.histogram(distribution_bins, ranges) if total
                                    else ())
        flags = _flags(session, runs, score_gap, page_ids, facts if usable else None)
        effective, judged = _page_scores(session, runs, page_ids)
        on_page = set(page_ids)
        if not whole:
            seen = _Seen.read(session, rubric_version_id, dataset_id, sight, among=page_ids)
            seen.known = reviewed_scores
        for rid in seen.wholly & on_page:
            for run in runs:
                if (rid, run) in judged:
                    effective[(rid, run)] = judged[(rid, run)]
        effective.update({key: value for key, value in partly_scores.items()
                          if key[0] in on_page})
        effective.update(seen.scores(sessions, runs, (seen.partly & on_page)
                                     - {rid for rid, _run in partly_scores}))
        counts = _review_counts(session, rubric_version_id, page_ids)
        reviewed_total = session.scalar(
            select(func.count()).select_from(m.EffectiveScoreRow)
            .where(m.EffectiveScoreRow.rubric_version_id == rubric_version_id,
                   m.EffectiveScoreRow.dataset_id == dataset_id)) or 0
        panel_figures = _page_panel_scores(session, panels, page_ids)
        texts = repo.snippets(session, page_ids, SNIPPET_CHARS)
        disputed = disputed_labels(session, [i for i in page_ids if counts.get(i, 0) > 0],
                                   rubric_version_id, sight)
    failed, verdicts_differ, scores_differ, failed_total, disagree_total = flags
    rows = tuple(
        results_row(rid, texts[rid], runs, effective, judged, failed=rid in failed,
                    verdicts_differ=rid in verdicts_differ, scores_differ=rid in scores_differ,
                    reviewed_count=counts.get(rid, 0), criteria_count=criteria_count,
                    disputed=disputed.get(rid, ()),
                    panel_scores=tuple(found.get(rid, (None, None))[0]
                                       for found in panel_figures))
        for rid in page_ids)
    return ResultsPage(
        run_ids=tuple(runs), rows=rows, total=total, dataset_total=dataset_total,
        failed_total=failed_total, disagree_total=disagree_total,
        reviewed_total=reviewed_total, offset=offset, limit=limit,
        distribution=distribution, panel_ids=tuple(panel_ids))


class _Seen:
    """What the viewer may see of people's decisions on the reviewed responses, where it
    differs from what the kept tables hold (storage/services/blindness.py): per response
    the criteria whose decision is hidden; ``wholly`` the responses whose every decision
    is (their effective scores are the judges'), ``partly`` the others with one hidden
    (their effective scores are computed with what the viewer sees)."""

    def __init__(self, hidden: dict[int, frozenset[int]], wholly: set[int],
                 sight: blindness.Sight):
        self.hidden, self.sight = hidden, sight
        self.wholly = wholly
        self.partly = set(hidden) - wholly
        self.known: Scores | None = None  # the reviewed responses' scores, if cached

    @classmethod
    def none(cls, sight: blindness.Sight) -> _Seen:
        return cls({}, set(), sight)

    @classmethod
    def read(cls, session: Session, rubric_version_id: int, dataset_id: int,
             sight: blindness.Sight, among: Sequence[int] | None = None) -> _Seen:
        """``among``: only these responses (the page's), not every reviewed one."""
        if sight.sees_all:
            return cls.none(sight)
        # Which criteria are decided and which of them the viewer has not answered: the
        # keys only (building every reviewed response's decisions, as before, was 1 s at
        # 100,000).
        everything, hidden = effective_reads.hidden_decisions(
            session, rubric_version_id, dataset_id, sight,
            None if among is None else sorted(among))
        wholly = {rid for rid, missing in hidden.items()
                  if len(missing) == len(everything[rid])}
        return cls(hidden, wholly, sight)

    def hidden_on(self, criterion_id: int) -> tuple[int, ...]:
        return tuple(sorted(rid for rid, missing in self.hidden.items()
                            if criterion_id in missing))

    def scores(self, sessions: SessionFactory, runs: list[int], ids: set[int]):
        """(response, run) -> (score, error) of these responses as the viewer sees them."""
        if not ids:
            return {}
        if self.known is not None:
            return {key: value for key, value in self.known.items()
                    if key[0] in ids and key[1] in runs}
        return _effective_overlay(sessions, runs, sorted(ids), self.sight)


def _sort_column(sort: str, sort_run_id: int | None, by_panel: int | None,
                 runs: list[int]) -> str | None:
    """The score column a view orders by (``ResultsQuery``'s names), None for an order
    that reads none."""
    if sort == "people":
        return "people_score"
    if sort == "spread":
        return "spread"
    if sort != "score":
        return None
    if by_panel is not None:
        return f"p{by_panel}"
    if not runs:
        return None
    return f"s{sort_run_id if sort_run_id in runs else runs[0]}"


def _flags(session: Session, runs: list[int], score_gap: float, page_ids: list[int],
           facts: GradeFacts | None):
    """(failed, verdicts differ, scores differ) among the page's responses, and the
    dataset's failed and disagreeing counts: from the cached facts when they are for these
    runs, else from the queries, each run once (the page's flags and the counts are both
    read from its answer: run twice, once per page and once per count, the judges' GROUP
    BYs were most of a first page without cached facts)."""
    if facts is not None:
        return (facts.failed, facts.verdicts_differ, facts.scores_differ, len(facts.failed),
                len(facts.disagree))
    failed = repo.failed_ids(session, runs)
    verdicts, scores = repo.disagreement(session, runs, score_gap)
    return failed, verdicts, scores, len(failed), len(verdicts | scores)


def _page_scores(session: Session, runs: list[int], page_ids: list[int]):
    """(effective, judge) (score, error) per (response, run) of the page."""
    if not page_ids or not runs:
        return {}, {}
    g, kept = m.GradeRow, m.EffectiveRunScoreRow
    judged = {(rid, run): (score, error) for rid, run, score, error in session.execute(
        select(g.response_id, g.run_id, g.score, g.error)
        .where(g.run_id.in_(runs), g.response_id.in_(page_ids)))}
    effective = dict(judged)
    effective.update({(rid, run): (score, error) for rid, run, score, error in session.execute(
        select(kept.response_id, kept.run_id, kept.score, kept.error)
        .where(kept.run_id.in_(runs), kept.response_id.in_(page_ids)))})
    return effective, judged


def _page_panel_scores(session: Session, panels: Sequence[PanelColumn],
                       page_ids: list[int]) -> list[dict]:
    """Per panel, (score, error) of the page's responses: the column's own, and of a
    ``partial`` column the stored ``panel_grades`` where it has none."""
    found = []
    for p in panels:
        scores = p.scores
        rest = [rid for rid in page_ids if rid not in p.scores] if p.partial else []
        if rest:
            scores = {**panel_reads.stored_scores(session, p.panel_id, rest), **p.scores}
        found.append(scores)
    return found


def _review_counts(session: Session, rubric_version_id: int, page_ids: list[int]
                   ) -> dict[int, int]:
    """Criteria of the version anyone answered, per response of the page."""
    if not page_ids:
        return {}
    es = m.EffectiveScoreRow
    return {rid: decided + disputed for rid, decided, disputed in session.execute(
        select(es.response_id, es.decided, es.disputed)
        .where(es.rubric_version_id == rubric_version_id, es.response_id.in_(page_ids)))}
