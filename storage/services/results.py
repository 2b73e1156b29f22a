"""Reading results: the responses x runs table of effective scores, a page at a time.

How this stays fast at 10,000 responses (see benchmarks/results_page.py for the figures):

- Everything that can be decided from stored columns runs in SQL (storage.repositories.results),
  once per call, over the whole dataset: text search, metadata columns, judge failures, judge
  disagreements (two runs giving different verdicts on one criterion, or two runs with
  comparable scores further apart than ``score_gap``; see ``repo.comparable_groups``),
  per-criterion verdicts, review counts, and the judge score of every (response, run) pair —
  a few narrow queries, no response texts. The part that depends only on grades
  (``grade_facts``) can be cached by the caller until a grade is stored.
- No score math here. An effective score differs from the judge's score only when a person
  has reviewed the response, so the judge's stored score *is* the effective score of every
  unreviewed response. Effective scores are computed (by ``storage.services.reviews``, which
  uses ``grading``'s one aggregation function) only for reviewed responses, which keeps
  score-range filters and score sorting exact at the cost of one aggregation per reviewed grade.
- Texts (snippets) are read only for the page being shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.repositories import datasets as dataset_repo
from storage.repositories import effective as effective_repo
from storage.repositories import results as repo
from storage.services import blindness, effective_reads, results_sql
from storage.services.blindness import Sight
from storage.services.results_order import ScoreBin
from storage.services.results_python import (
    _effective_overlay,
    filter_choices,
    grade_facts,
    page_in_python,
)
from storage.services.results_types import (
    DEFAULT_SCORE_GAP,
    SNIPPET_CHARS,
    VERDICTS,
    GradeFacts,
    PanelColumn,
    ResultSet,
    ResultsFilter,
    ResultsPage,
    ResultsRow,
    ReviewedFilter,
    Scores,
    SortKey,
    VerdictFilter,
)

__all__ = ["DEFAULT_SCORE_GAP", "SNIPPET_CHARS", "VERDICTS", "GradeFacts", "PanelColumn",
           "ResultSet", "ResultsFilter", "ResultsPage", "ResultsRow", "ReviewedFilter",
           "ScoreBin", "Scores", "SortKey", "VerdictFilter", "filter_choices", "grade_facts",
           "list_result_sets", "metadata_columns", "response_labels", "results_page",
           "results_stamp", "reviewed_effective_scores", "upload_columns"]


def list_result_sets(sessions: SessionFactory) -> list[ResultSet]:
    """Every (dataset, rubric version) pair that has at least one run, newest first."""
    with sessions() as session:
        rows = repo.result_set_rows(session)
    groups: dict[tuple[int, int], list] = {}
    for dataset_id, dataset_name, version_id, rubric_name, number, run_id in rows:
        groups.setdefault((dataset_id, version_id), [dataset_name, rubric_name, number, []])[
            3].append(run_id)
    found = [
        ResultSet(dataset_id=d, dataset_name=dn, rubric_version_id=v, rubric_name=rn,
                  version_number=num, run_ids=tuple(ids))
        for (d, v), (dn, rn, num, ids) in groups.items()
    ]
    return sorted(found, key=lambda s: max(s.run_ids), reverse=True)



def reviewed_effective_scores(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], sight: Sight = blindness.EVERYTHING,
) -> Scores:
    """Effective scores of every reviewed response of the dataset (cacheable until the next
    verdict or grade) as ``sight`` may see them; every other response's effective score is
    its judge score."""
    with sessions() as session:
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        reviewed = sorted(repo.review_counts(session, dataset_id, rubric_version_id))
        # Kept (effective_run_scores) for the responses people decided on whose every
        # decision the viewer sees; aggregated with what they see only for the others.
        hidden = effective_reads.hidden_responses(session, rubric_version_id, dataset_id,
                                                  sight)
        people = effective_repo.people_scored_ids(session, rubric_version_id, reviewed)
        visible = [rid for rid in reviewed if rid in people and rid not in hidden]
        found = effective_repo.kept_run_scores(session, runs, visible)
    found.update(_effective_overlay(
        sessions, runs, [rid for rid in reviewed if rid not in people or rid in hidden],
        sight))
    return found



def results_page(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], filters: ResultsFilter | None = None, sort: SortKey = "response",
    sort_run_id: int | None = None, descending: bool = False, offset: int = 0,
    limit: int = 50, score_gap: float = DEFAULT_SCORE_GAP, facts: GradeFacts | None = None,
    reviewed_scores: Scores | None = None, distribution_bins: int = 0,
    panels: Sequence[PanelColumn] = (), sort_panel_id: int | None = None,
    sight: Sight = blindness.EVERYTHING,
) -> ResultsPage:
    """One page of the responses x runs table of effective scores.

    ``sort``: ``response`` (dataset order), ``score`` (effective score of ``sort_run_id``,
    default the first run), ``spread`` (largest gap between runs first when descending),
    ``reviewed`` (number of reviewed criteria), ``people`` (people's score, from
    ``effective_scores``; for a viewer who may see every verdict). Responses without a
    score sort last.
    ``facts`` (from ``grade_facts``) may be passed in from a cache, as may
    ``reviewed_scores`` (``reviewed_effective_scores``, same sight): a blind viewer's
    partly hidden responses are scored from it instead of aggregated on each page.
    ``distribution_bins``: also count the matching responses' effective scores per run in
    that many equal bins (``ResultsPage.distribution``).
    ``panels``: judge panels shown as columns after the runs: the score range (on a panel,
    or on any column), the verdict filter (``VerdictFilter.panel_id``), ``sort="score"``
    with ``sort_panel_id`` and the distribution cover them like runs. Failures,
    disagreements and the spread stay the runs' own (a panel is made of them).
    ``sight`` (storage/services/blindness.py): whose eyes the table is read with. Human
    verdicts it may not see yet count as not given, in the effective scores, the verdict
    filter and the disputed criteria; ``reviewed_scores`` and ``panels`` must have been
    read with the same sight. The review counts stay everyone's (they tell that someone
    answered, not what).

    The page is read in SQL (storage.services.results_sql); only while a member of a panel
    used in the filters, sort or histograms is still grading (or with more reviewed
    responses to overlay than a statement binds) from Python objects
    (storage.services.results_python), with the same figures.
    """
    filters = filters or ResultsFilter()
    if limit < 1 or offset < 0:
        raise InvalidInputError("page size must be at least 1 and the offset not negative")
    if sort == "people" and not sight.sees_all:
        raise InvalidInputError("sorting by people's score is for a viewer who may see every "
                                "verdict")
    page = results_sql.sql_page(
        sessions, dataset_id=dataset_id, rubric_version_id=rubric_version_id,
        run_ids=run_ids, filters=filters, sort=sort, sort_run_id=sort_run_id,
        descending=descending, offset=offset, limit=limit, score_gap=score_gap,
        facts=facts, distribution_bins=distribution_bins, panels=panels,
        sort_panel_id=sort_panel_id, sight=sight, reviewed_scores=reviewed_scores)
    if page is not None:
        return page
    if sort == "people":
        raise InvalidInputError("sorting by people's score waits until the judge panels "
                                "shown have finished grading: sort by another column, or "
                                "hide the panels until then")
    return page_in_python(
        sessions, dataset_id=dataset_id, rubric_version_id=rubric_version_id,
        run_ids=run_ids, filters=filters, sort=sort, sort_run_id=sort_run_id,
        descending=descending, offset=offset, limit=limit, score_gap=score_gap, facts=facts,
        reviewed_scores=reviewed_scores, distribution_bins=distribution_bins, panels=panels,
        sort_panel_id=sort_panel_id, sight=sight)


def metadata_columns(sessions: SessionFactory, dataset_id: int, *, sample: int = 500,
                     max_values: int = 100) -> dict[str, tuple[str, ...] | None]:
    """The dataset's metadata columns (kept from the upload) and their values to filter on:
    ``None`` for a column with more than ``max_values`` distinct values (filter by typing)."""
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        keys = repo.metadata_keys(session, dataset_id, sample)
        found: dict[str, tuple[str, ...] | None] = {}
        for key in keys:
            values = repo.metadata_values(session, dataset_id, key, max_values + 1)
            found[key] = tuple(values) if len(values) <= max_values else None
    return found


def upload_columns(sessions: SessionFactory, dataset_ids: Sequence[int]) -> list[str]:
    """Every column the datasets' uploads kept (the responses' metadata), in order of first
    appearance: the exports' ``upload.<column>`` columns."""
    keys: dict[str, None] = {}
    with sessions() as session:
        for dataset_id in dict.fromkeys(dataset_ids):
            keys.update(dict.fromkeys(repo.metadata_keys(session, dataset_id, None)))
    return list(keys)


def response_labels(
    sessions: SessionFactory, dataset_id: int, *, limit: int = 2000
) -> list[tuple[int, str]]:
    """(id, short label) of a dataset's first responses, to pick a selection from; no texts
    beyond a snippet are read."""
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        rows = repo.response_label_rows(session, dataset_id, limit)
    return [
        (rid, f"{external or f'#{rid}'} — {(query or output or '').strip()}".strip(" —"))
        for rid, external, query, output in rows
    ]


def results_stamp(sessions: SessionFactory, run_ids: Sequence[int]) -> tuple:
    """Changes whenever the results of these runs may have: a new grade, a status change,
    any new human verdict. Two cheap queries; lets callers cache results until it changes."""
    with sessions() as session:
        return repo.stamp_rows(session, run_ids)
