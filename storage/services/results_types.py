"""The Results table's plain types (storage.services.results re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from storage.repositories.results import Scores
from storage.services.results_order import ScoreBin

ReviewedFilter = Literal["any", "reviewed", "not_reviewed"]
SortKey = Literal["response", "score", "spread", "reviewed", "people"]
SNIPPET_CHARS = 160
# Two judges whose comparable scores differ by more than this disagree even if no criterion
# differs (the only way to see two holistic RubricAsJudge runs disagree). Adjustable.
DEFAULT_SCORE_GAP = 0.2
VERDICTS = ("MET", "UNMET", "CANNOT_ASSESS")


@dataclass(frozen=True)
class VerdictFilter:
    """Responses whose *effective* verdict on a criterion (the current human verdict, else
    the judge's verdict in ``run_id``, or the verdict of the judge panel ``panel_id``) is
    ``verdict``: on a multi-choice criterion an option label (or CANNOT_ASSESS), see
    :func:`filter_choices`."""

    criterion_id: int
    verdict: str
    run_id: int | None
    panel_id: int | None = None


@dataclass(frozen=True)
class PanelColumn:
    """A judge panel shown as a column beside the runs (built by
    ``storage.services.panel_results.panel_columns``): per response some member graded, its
    effective score (people's verdicts in place of the panel's, through the one
    aggregation) and per (response, criterion) the panel's own verdict."""

    panel_id: int
    scores: dict[int, tuple[float | None, str | None]]  # response -> (score, error)
    verdicts: dict[tuple[int, int], str]
    # True (``panel_results.page_columns``): ``scores`` holds only the reviewed responses
    # and ``redone`` (whose stored decision is not the one read), ``verdicts`` only
    # ``redone``'s; every other response's are the stored ``panel_grades`` /
    # ``panel_verdicts`` (``panel_reads.whole_column`` reads them in).
    partial: bool = False
    redone: frozenset[int] = frozenset()


@dataclass(frozen=True)
class ResultsFilter:
    """What the results table shows; every field narrows the set of responses."""

    search: str = ""
    failed_only: bool = False
    disagree_only: bool = False
    reviewed: ReviewedFilter = "any"
    min_score: float | None = None
    max_score: float | None = None
    # Which run's (or panel's) effective score the range applies to; both None: any
    # selected run or panel.
    score_run_id: int | None = None
    score_panel_id: int | None = None
    # (metadata column, value as text) pairs, all of which must match.
    metadata: tuple[tuple[str, str], ...] = ()
    verdict: VerdictFilter | None = None


@dataclass(frozen=True)
class ResultsRow:
    response_id: int
    external_id: str | None
    query: str
    output: str
    # One entry per selected run, in the order of ``ResultsPage.run_ids``.
    scores: tuple[float | None, ...]
    judge_scores: tuple[float | None, ...]
    errors: tuple[str | None, ...]
    graded: tuple[bool, ...]
    failed: bool
    disagree: bool  # verdicts or comparable scores differ
    reviewed_count: int
    criteria_count: int
    verdicts_differ: bool = False
    scores_differ: bool = False
    # Labels of the criteria whose reviewers disagree with no adjudication yet (the judge's
    # verdict stands on them), in rubric order.
    disputed: tuple[str, ...] = ()
    # One effective score per panel shown, in the order of ``ResultsPage.panel_ids``.
    panel_scores: tuple[float | None, ...] = ()


def results_row(rid: int, text: tuple, runs, effective: dict, judged: dict, *,
                failed: bool, verdicts_differ: bool, scores_differ: bool,
                reviewed_count: int, criteria_count: int, disputed: tuple[str, ...],
                panel_scores: tuple[float | None, ...]) -> ResultsRow:
    """One row of the table, from the page's reads (``text``: external id, query, output;
    ``effective`` / ``judged``: (response, run) -> (score, error)) — one builder for the SQL
    page and the Python one."""
    return ResultsRow(
        response_id=rid, external_id=text[0], query=text[1], output=text[2],
        scores=tuple(effective.get((rid, run), (None, None))[0] for run in runs),
        judge_scores=tuple(judged.get((rid, run), (None, None))[0] for run in runs),
        errors=tuple(effective.get((rid, run), (None, None))[1] for run in runs),
        graded=tuple((rid, run) in judged for run in runs),
        failed=failed, disagree=verdicts_differ or scores_differ,
        reviewed_count=reviewed_count, criteria_count=criteria_count,
        verdicts_differ=verdicts_differ, scores_differ=scores_differ,
        disputed=disputed, panel_scores=panel_scores)


@dataclass(frozen=True)
class ResultsPage:
    run_ids: tuple[int, ...]
    rows: tuple[ResultsRow, ...]
    total: int  # responses matching the filter
    dataset_total: int
    failed_total: int  # of the whole dataset, for the summary
    disagree_total: int
    reviewed_total: int
    offset: int
    limit: int
    distribution: tuple[ScoreBin, ...] = ()  # only when asked for (``distribution_bins``)
    panel_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class ResultSet:
    """A dataset graded under one rubric version: what the Results and Review pages open."""

    dataset_id: int
    dataset_name: str
    rubric_version_id: int
    rubric_name: str
    version_number: int
    run_ids: tuple[int, ...]

    @property
    def label(self) -> str:
        runs = len(self.run_ids)
        return (f"{self.dataset_name} × {self.rubric_name} v{self.version_number} "
                f"({runs} run{'s' if runs != 1 else ''})")


@dataclass(frozen=True)
class GradeFacts:
    """What the table needs from the runs' grades alone (no human verdicts): it changes only
    when a grade is stored, so callers may cache it while the runs' graded counts stand."""

    run_ids: tuple[int, ...]
    failed: frozenset[int]
    disagree: frozenset[int]  # verdicts_differ | scores_differ
    judged: Scores | None  # None: not read (``grade_facts(with_scores=False)``)
    verdicts_differ: frozenset[int] = frozenset()
    scores_differ: frozenset[int] = frozenset()
    score_gap: float = DEFAULT_SCORE_GAP

