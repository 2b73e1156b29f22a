"""Cached readers of the Grade, Results and Review pages.

Every reader takes the database URL first (``runtime.database_key()``), so two databases never
share a cache entry, and only hashable arguments. Readers whose data grows while runs are
graded also take a ``stamp`` (the selected runs' graded counts and statuses): a new grade
changes the stamp and so the cache entry, without a short TTL on everything.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from storage import model_presets
from storage.dto import DatasetInfo, RubricInfo, RubricVersionInfo, RunInfo
from storage.services import (
    blindness,
    datasets,
    results,
    review_queue,
    review_sets,
    rubrics,
    runs,
)
from storage.services.blindness import Sight
from storage.services.results import (
    DEFAULT_SCORE_GAP,
    GradeFacts,
    ResultSet,
    ResultsFilter,
    ResultsPage,
    Scores,
    SortKey,
)
from storage.services.review_queue import ResponseDetail, ReviewQueue
from ui import panel_readers
from ui.runtime import sessions_for

RunStamp = tuple


@st.cache_data(ttl=60, max_entries=20, show_spinner=False)
def get_rubric_list(db: str) -> list[RubricInfo]:
    return rubrics.list_rubrics(sessions_for(db))


@st.cache_data(ttl=60, max_entries=100, show_spinner=False)
def get_versions(db: str, rubric_id: int) -> list[RubricVersionInfo]:
    return rubrics.list_versions(sessions_for(db), rubric_id)


@st.cache_data(ttl=60, max_entries=20, show_spinner=False)
def get_dataset_list(db: str) -> list[DatasetInfo]:
    return datasets.list_datasets(sessions_for(db))


@st.cache_data(ttl=60, max_entries=50, show_spinner=False)
def get_response_labels(db: str, dataset_id: int) -> list[tuple[int, str]]:
    return results.response_labels(sessions_for(db), dataset_id)


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_first_response_ids(db: str, dataset_id: int, count: int,
                           response_count: int) -> tuple[int, ...]:
    """The first ``count`` responses; ``response_count`` keys the cache to the dataset's size."""
    return tuple(rid for rid, _ in results.response_labels(
        sessions_for(db), dataset_id, limit=count))


@st.cache_data(ttl=2, max_entries=20, show_spinner=False)
def get_runs(db: str) -> list[RunInfo]:
    """All runs; a 2 s TTL because workers change their status and totals."""
    return runs.list_runs(sessions_for(db))


@st.cache_data(ttl=30, max_entries=20, show_spinner=False)
def get_result_sets(db: str) -> list[ResultSet]:
    return results.list_result_sets(sessions_for(db))


@st.cache_data(ttl=600, max_entries=20, show_spinner="Comparing the runs…")
def get_grade_facts(
    db: str, dataset_id: int, rubric_version_id: int, run_ids: tuple[int, ...],
    grades_stamp: tuple, score_gap: float = DEFAULT_SCORE_GAP,
) -> GradeFacts:
    """Failures and disagreements: recomputed only when a grade is stored. Without the
    judge scores: the SQL page reads its own, and the rare Python page reads them itself."""
    return results.grade_facts(sessions_for(db), dataset_id=dataset_id,
                               rubric_version_id=rubric_version_id, run_ids=run_ids,
                               score_gap=score_gap, with_scores=False)


@st.cache_data(ttl=600, max_entries=20, show_spinner=False)
def get_reviewed_scores(
    db: str, dataset_id: int, rubric_version_id: int, run_ids: tuple[int, ...],
    stamp: RunStamp, sight: Sight = blindness.EVERYTHING,
) -> Scores:
    """Effective scores of the reviewed responses as ``sight`` may see them: recomputed
    after a grade or a verdict."""
    return results.reviewed_effective_scores(
        sessions_for(db), dataset_id=dataset_id, rubric_version_id=rubric_version_id,
        run_ids=run_ids, sight=sight)


@st.cache_data(ttl=300, max_entries=200, show_spinner="Loading results…")
def get_results_page(
    db: str, dataset_id: int, rubric_version_id: int, run_ids: tuple[int, ...],
    filters: ResultsFilter, sort: SortKey, sort_run_id: int | None, descending: bool,
    offset: int, limit: int, stamp: RunStamp, score_gap: float = DEFAULT_SCORE_GAP,
    distribution_bins: int = 0, panel_ids: tuple[int, ...] = (), panel_stamp: tuple = (),
    sort_panel_id: int | None = None, sight: Sight = blindness.EVERYTHING,
) -> ResultsPage:
    """``panel_ids``: judge panels shown as columns (``panel_stamp``: their
    ``panel_readers.get_stamp``), filtered, sorted and counted like the runs. ``sight``:
    whose eyes (blind review: human verdicts it may not see yet do not move the scores)."""
    return table_reader(db, dataset_id, rubric_version_id, run_ids, filters, sort,
                        sort_run_id, descending, stamp, score_gap, distribution_bins,
                        panel_ids, panel_stamp, sort_panel_id, sight)(offset, limit)


def table_reader(
    db: str, dataset_id: int, rubric_version_id: int, run_ids: tuple[int, ...],
    filters: ResultsFilter, sort: SortKey, sort_run_id: int | None, descending: bool,
    stamp: RunStamp, score_gap: float = DEFAULT_SCORE_GAP, distribution_bins: int = 0,
    panel_ids: tuple[int, ...] = (), panel_stamp: tuple = (),
    sort_panel_id: int | None = None, sight: Sight = blindness.EVERYTHING,
) -> Callable[[int, int], ResultsPage]:
    """(offset, limit) -> a page of the table, not cached (what it reads once per page is):
    "This table (CSV)" reads every page once and keeps none."""
    facts = get_grade_facts(db, dataset_id, rubric_version_id, run_ids, stamp[0], score_gap)
    # Read from SQL (effective_run_scores, effective_panel_scores) for a viewer who sees
    # every verdict; the reviewed responses' scores are computed in Python for a blind one,
    # and for the Python page read while a panel shown has a member still grading.
    python = not sight.sees_all or (bool(panel_ids) and panel_readers.get_unsettled(
        db, panel_ids, panel_stamp))
    reviewed = (get_reviewed_scores(db, dataset_id, rubric_version_id, run_ids, stamp, sight)
                if python else None)
    columns = (panel_readers.get_panel_columns(db, dataset_id, rubric_version_id, panel_ids,
                                               panel_stamp, sight) if panel_ids else ())

    def read(offset: int, limit: int) -> ResultsPage:
        return results.results_page(
            sessions_for(db), dataset_id=dataset_id, rubric_version_id=rubric_version_id,
            run_ids=run_ids, filters=filters, sort=sort, sort_run_id=sort_run_id,
            descending=descending, offset=offset, limit=limit, facts=facts,
            reviewed_scores=reviewed, score_gap=score_gap,
            distribution_bins=distribution_bins, panels=columns,
            sort_panel_id=sort_panel_id, sight=sight)
    return read


@st.cache_data(ttl=60, max_entries=20, show_spinner=False)
def get_metadata_columns(db: str, dataset_id: int,
                         response_count: int) -> dict[str, tuple[str, ...] | None]:
    """Metadata columns to filter on; ``response_count`` keys the cache to the dataset's size."""
    return results.metadata_columns(sessions_for(db), dataset_id)


@st.cache_data(ttl=600, max_entries=50, show_spinner=False)
def get_version(db: str, version_id: int) -> RubricVersionInfo:
    """A rubric version with its criteria (frozen once graded, so a long TTL is safe)."""
    return rubrics.get_version(sessions_for(db), version_id)


@st.cache_data(ttl=300, max_entries=200, show_spinner=False)
def get_response_detail(
    db: str, response_id: int, rubric_version_id: int, run_ids: tuple[int, ...],
    stamp: RunStamp, viewer: str | None = None, see_all: bool = False,
    sight: Sight | None = None,
) -> ResponseDetail:
    """As ``sight`` may see it (storage/services/blindness.py); ``viewer`` (a reviewer key)
    does not see other reviewers' verdicts on a criterion before answering it, unless
    ``see_all``."""
    return review_queue.response_detail(sessions_for(db), response_id, rubric_version_id, run_ids,
                                        viewer=viewer, see_all=see_all, sight=sight)


def detail_stamp(db: str, response_id: int, run_ids: tuple[int, ...]) -> RunStamp:
    """What one response's detail depends on: the runs' grades and the verdicts on that
    response alone, so saving on one response leaves the others' details cached."""
    return (run_stamp(db, run_ids)[0], review_queue.verdict_stamp(sessions_for(db), response_id))


@st.cache_resource(ttl=600, max_entries=20, show_spinner=False)
def get_covered_responses(db: str, dataset_id: int, rubric_version_id: int,
                          run_ids: tuple[int, ...]) -> tuple[int, ...]:
    """The responses the runs cover (fixed when they were launched): the queue's ids."""
    return review_queue.covered_responses(sessions_for(db), dataset_id=dataset_id,
                                          rubric_version_id=rubric_version_id, run_ids=run_ids)


@st.cache_resource(ttl=600, max_entries=20, show_spinner="Building the review queue…")
def get_review_queue(
    db: str, dataset_id: int, rubric_version_id: int, run_ids: tuple[int, ...],
    unreviewed_only: bool, nonce: int, reviewer_key: str | None = None,
) -> ReviewQueue:
    """A snapshot: saving a verdict does not reorder it under the reviewer's feet; ``nonce``
    changes when they ask for a fresh queue. A resource, not data: every fragment run reads
    it, never copied (unpickled); it is immutable, and builds only the items read."""
    facts = get_grade_facts(db, dataset_id, rubric_version_id, run_ids,
                            run_stamp(db, run_ids)[0])
    return review_queue.review_queue(
        sessions_for(db), dataset_id=dataset_id, rubric_version_id=rubric_version_id,
        run_ids=run_ids, unreviewed_only=unreviewed_only, facts=facts,
        reviewer_key=reviewer_key,
        covered=get_covered_responses(db, dataset_id, rubric_version_id, run_ids))


@st.cache_data(ttl=60, max_entries=20, show_spinner=False)
def get_review_coverage(db: str, dataset_id: int, rubric_version_id: int,
                        stamp: RunStamp) -> review_sets.Coverage:
    return review_sets.coverage(sessions_for(db), dataset_id, rubric_version_id)


@st.cache_data(ttl=60, max_entries=20, show_spinner=False)
def get_adjudication_page(db: str, dataset_id: int, rubric_version_id: int,
                          stamp: RunStamp, limit: int,
                          keys: tuple[tuple[int, int], ...] = ()) -> review_queue.DisputePage:
    """The first ``limit`` disputes and the cards ``keys`` kept in place (not the whole
    queue: thousands of disputes at 100,000 responses)."""
    return review_queue.adjudication_page(sessions_for(db), dataset_id=dataset_id,
                                          rubric_version_id=rubric_version_id, limit=limit,
                                          keys=keys)


@st.cache_data(ttl=10, max_entries=5, show_spinner=False)
def get_model_presets(db: str) -> tuple[model_presets.ModelPreset, ...]:
    # ``db`` only keys the cache: the presets file lives beside the default database.
    return model_presets.list_model_presets()


def clear_after_review() -> None:
    """After a save on the Review page: details are keyed by their own verdicts
    (detail_stamp), so they stay; everything that sums over responses goes."""
    run_stamp.clear()
    get_results_page.clear()
    get_reviewed_scores.clear()
    get_review_coverage.clear()
    get_adjudication_page.clear()
    panel_readers.get_stamp.clear()  # panels' effective scores take the new verdicts at once


def clear_after_verdict() -> None:
    """A human verdict changes effective scores, review counts and the detail view."""
    panel_readers.get_stamp.clear()
    run_stamp.clear()
    get_response_detail.clear()
    get_results_page.clear()
    get_reviewed_scores.clear()
    get_review_coverage.clear()
    get_adjudication_page.clear()


def clear_after_launch() -> None:
    """New runs: the run list, the result sets and the (now frozen) rubric versions, here and
    on the Rubrics page (a frozen version is read-only there)."""
    from ui import catalog  # catalog imports this module

    catalog.clear_rubric_readers()
    get_runs.clear()
    run_stamp.clear()
    get_result_sets.clear()
    get_versions.clear()


@st.cache_data(ttl=2, max_entries=50, show_spinner=False)
def run_stamp(db: str, run_ids: tuple[int, ...]) -> RunStamp:
    """New grades and verdicts from anyone (other tabs, workers, reviewers) show within 2 s."""
    return results.results_stamp(sessions_for(db), run_ids)


@st.cache_data(ttl=600, max_entries=200, show_spinner="Estimating…")
def get_estimate(
    db: str, rubric_version_id: int, dataset_id: int, response_ids: tuple[int, ...] | None,
    grader: str, model: str, system_prompt: str | None, allow_cannot_assess: bool,
    price: tuple[float, float] | None = None, calibration: tuple[int, int] | None = None,
    samples: int = 1,
):
    """``price``: USD per million input / output tokens set in Settings, or None;
    ``calibration``: (k, seed) of a calibrated run, or None; ``samples`` per criterion."""
    from storage.jobs import estimate_run

    settings = {"system_prompt": system_prompt, "allow_cannot_assess": allow_cannot_assess}
    if price is not None:
        settings["price"] = {"input_per_million": price[0], "output_per_million": price[1]}
    if calibration is not None:
        settings["calibration"] = {"k": calibration[0], "seed": calibration[1]}
    if samples > 1:
        settings["extra"] = {"samples": samples}
    return estimate_run(
        sessions_for(db), rubric_version_id=rubric_version_id, dataset_id=dataset_id,
        grader=grader, model=model, response_ids=response_ids, settings=settings)


def get_progress(db: str, run: RunInfo):
    """Not cached: the Grade page's fragment polls it every few seconds while runs are active.
    The counts are ``run``'s (the poll's one read), so the card and the table agree."""
    from storage.jobs import run_progress

    return run_progress(sessions_for(db), run.id, seen=run)
