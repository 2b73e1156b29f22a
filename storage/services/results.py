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
from dataclasses import dataclass
from typing import Literal

from storage.convert import criterion_info
from storage.dto import CriterionInfo
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.repositories import datasets as dataset_repo
from storage.repositories import effective as effective_repo
from storage.repositories import results as repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories.results import Scores
from storage.services import blindness, effective_reads, reviews
from storage.services.blindness import Sight
from storage.services.results_order import ScoreBin, histogram, score_range, sort_ids

ReviewedFilter = Literal["any", "reviewed", "not_reviewed"]
SortKey = Literal["response", "score", "spread", "reviewed"]
SNIPPET_CHARS = 160
# Two judges whose comparable scores differ by more than this disagree even if no criterion
# differs (the only way to see two holistic RubricAsJudge runs disagree). Adjustable.
DEFAULT_SCORE_GAP = 0.2
VERDICTS = ("MET", "UNMET", "CANNOT_ASSESS")
_CHUNK = 500


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
    judged: Scores
    verdicts_differ: frozenset[int] = frozenset()
    scores_differ: frozenset[int] = frozenset()
    score_gap: float = DEFAULT_SCORE_GAP


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


def _effective_overlay(
    sessions: SessionFactory, run_ids: list[int], reviewed_ids: list[int],
    sight: Sight = blindness.EVERYTHING,
) -> dict[tuple[int, int], tuple[float | None, str | None]]:
    """Effective scores of the reviewed responses, computed by the one aggregation path
    with the human verdicts ``sight`` may see (the judge's verdict where one is hidden)."""
    overlay: dict[tuple[int, int], tuple[float | None, str | None]] = {}
    if not reviewed_ids:
        return overlay
    for run_id in run_ids:
        for start in range(0, len(reviewed_ids), _CHUNK):
            for grade in reviews.effective_grades_for_run(
                    sessions, run_id, reviewed_ids[start:start + _CHUNK], sight=sight,
                    scores_only=True):
                overlay[(grade.response_id, run_id)] = (grade.score, grade.error)
    return overlay


def grade_facts(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], score_gap: float = DEFAULT_SCORE_GAP,
) -> GradeFacts:
    """Failures, disagreements and judge scores of these runs (the slow, cacheable part)."""
    if not 0 <= score_gap <= 1e9:
        raise InvalidInputError("the score gap must be a number of 0 or more")
    with sessions() as session:
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        verdicts = frozenset(repo.verdict_disagree_ids(session, runs))
        scores = frozenset(repo.score_disagree_ids(session, runs, score_gap))
        return GradeFacts(
            run_ids=tuple(runs), failed=frozenset(repo.failed_ids(session, runs)),
            disagree=verdicts | scores, judged=repo.judge_scores(session, runs),
            verdicts_differ=verdicts, scores_differ=scores, score_gap=score_gap)


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
    return _effective_overlay(sessions, runs, reviewed, sight)


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
    ``reviewed`` (number of reviewed criteria). Responses without a score sort last.
    ``facts`` and ``reviewed_scores`` (from ``grade_facts`` and ``reviewed_effective_scores``)
    may be passed in from a cache; they are computed here otherwise.
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
    """
    filters = filters or ResultsFilter()
    if limit < 1 or offset < 0:
        raise InvalidInputError("page size must be at least 1 and the offset not negative")
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        criteria_count = repo.criteria_count(session, rubric_version_id)
        dataset_total = dataset_repo.response_count(session, dataset_id)
        candidates = repo.candidate_ids(session, dataset_id, filters.search, filters.metadata)
        review_counts = repo.review_counts(session, dataset_id, rubric_version_id)
        wanted = (_verdict_matches(session, dataset_id, rubric_version_id, runs,
                                   filters.verdict, panels, sight)
                  if filters.verdict else None)
    if facts is None or facts.run_ids != tuple(runs) or facts.score_gap != score_gap:
        facts = grade_facts(sessions, dataset_id=dataset_id,
                            rubric_version_id=rubric_version_id, run_ids=runs,
                            score_gap=score_gap)
    failed, disagree, judged = facts.failed, facts.disagree, facts.judged

    ids = candidates
    if wanted is not None:
        ids = [i for i in ids if i in wanted]
    if filters.failed_only:
        ids = [i for i in ids if i in failed]
    if filters.disagree_only:
        ids = [i for i in ids if i in disagree]
    if filters.reviewed == "reviewed":
        ids = [i for i in ids if review_counts.get(i, 0) > 0]
    elif filters.reviewed == "not_reviewed":
        ids = [i for i in ids if review_counts.get(i, 0) == 0]

    needs_scores = (sort in ("score", "spread") or filters.min_score is not None
                    or filters.max_score is not None)
    reviewed_here = [i for i in ids if review_counts.get(i, 0) > 0]
    effective = dict(judged)
    if reviewed_scores is not None:
        effective.update(reviewed_scores)
    elif needs_scores or distribution_bins:
        effective.update(_effective_overlay(sessions, runs, reviewed_here, sight))

    def scores_of(rid: int) -> list[float | None]:
        return [effective.get((rid, run), (None, None))[0] for run in runs]

    panel_ids = [p.panel_id for p in panels]

    def panel_scores_of(rid: int) -> list[float | None]:
        return [p.scores.get(rid, (None, None))[0] for p in panels]

    if filters.min_score is not None or filters.max_score is not None:
        ids = score_range(ids, filters, runs, panel_ids, scores_of, panel_scores_of)

    if sort == "score" and sort_panel_id is not None:
        if sort_panel_id not in panel_ids:
            raise InvalidInputError("the sort applies to a judge panel that is not shown")
        position = panel_ids.index(sort_panel_id)
        ids = sort_ids(ids, sort, None, [0], lambda i: [panel_scores_of(i)[position]],
                      review_counts, descending)
    else:
        ids = sort_ids(ids, sort, sort_run_id, runs, scores_of, review_counts, descending)
    page_ids = ids[offset:offset + limit]
    if not needs_scores and reviewed_scores is None:
        effective.update(_effective_overlay(
            sessions, runs, [i for i in page_ids if review_counts.get(i, 0) > 0], sight))
    with sessions() as session:
        texts = repo.snippets(session, page_ids, SNIPPET_CHARS)
        disputed = _disputed(session, [i for i in page_ids if review_counts.get(i, 0) > 0],
                             rubric_version_id, sight)
    rows = tuple(
        ResultsRow(
            response_id=rid, external_id=texts[rid][0], query=texts[rid][1],
            output=texts[rid][2],
            scores=tuple(effective.get((rid, run), (None, None))[0] for run in runs),
            judge_scores=tuple(judged.get((rid, run), (None, None))[0] for run in runs),
            errors=tuple(effective.get((rid, run), (None, None))[1] for run in runs),
            graded=tuple((rid, run) in judged for run in runs),
            failed=rid in failed, disagree=rid in disagree,
            reviewed_count=review_counts.get(rid, 0), criteria_count=criteria_count,
            verdicts_differ=rid in facts.verdicts_differ,
            scores_differ=rid in facts.scores_differ,
            disputed=disputed.get(rid, ()),
            panel_scores=tuple(panel_scores_of(rid)),
        )
        for rid in page_ids
    )
    return ResultsPage(
        run_ids=tuple(runs), rows=rows, total=len(ids), dataset_total=dataset_total,
        failed_total=len(failed), disagree_total=len(disagree),
        reviewed_total=len(review_counts), offset=offset, limit=limit,
        distribution=(histogram(runs, ids, scores_of, distribution_bins)
                      + histogram(panel_ids, ids, panel_scores_of, distribution_bins,
                                   panels=True)),
        panel_ids=tuple(panel_ids),
    )


def _disputed(session, response_ids: list[int], rubric_version_id: int,
              sight: Sight = blindness.EVERYTHING) -> dict[int, tuple[str, ...]]:
    """The disputed criteria's labels per response (only the page's reviewed responses)
    that ``sight`` may see."""
    if not response_ids:
        return {}
    criteria = [criterion_info(c) for c in rubric_repo.get_version(session, rubric_version_id)
                .criteria]
    order = {c.id: (c.position, c.label) for c in criteria}
    found = effective_reads.score_decisions(session, rubric_version_id, response_ids,
                                            sight=sight)
    return {rid: tuple(order[cid][1] for cid in sorted(
        (cid for cid, d in per.items() if d.disputed and cid in order),
        key=lambda cid: order[cid][0])) for rid, per in found.items()}


def _verdict_matches(session, dataset_id: int, rubric_version_id: int, runs: list[int],
                     wanted: VerdictFilter, panels: Sequence[PanelColumn] = (),
                     sight: Sight = blindness.EVERYTHING) -> set[int]:
    criterion = next((criterion_info(c) for c in rubric_repo.criteria_of(
        session, rubric_version_id) if c.id == wanted.criterion_id), None)
    if criterion is None:
        raise InvalidInputError(f"criterion {wanted.criterion_id} is not in the rubric version "
                                "shown; pick the criterion again")
    allowed = filter_choices(criterion)
    if wanted.verdict not in allowed:
        raise InvalidInputError(
            f"unknown verdict {wanted.verdict!r} for criterion {criterion.label!r}; use "
            + ", ".join(allowed))
    panel = next((p for p in panels if p.panel_id == wanted.panel_id), None)
    if wanted.panel_id is not None and panel is None:
        raise InvalidInputError("the verdict filter applies to a judge panel that is not "
                                "shown")
    if panel is None and wanted.run_id not in runs:
        raise InvalidInputError("the verdict filter applies to a run that is not selected")
    # The decided human verdict (storage.services.consensus): a disputed criterion keeps
    # the judge's.
    humans = effective_repo.decided_choices(session, rubric_version_id, dataset_id,
                                            wanted.criterion_id)
    if not sight.sees_all and humans:
        seen = effective_reads.score_decisions(session, rubric_version_id, list(humans),
                                               dataset_id=dataset_id, sight=sight)
        humans = {rid: v for rid, v in humans.items()
                  if wanted.criterion_id in seen.get(rid, {})}
    if panel is not None:
        judged = {rid for (rid, cid), verdict in panel.verdicts.items()
                  if cid == wanted.criterion_id and verdict == wanted.verdict}
    else:
        judged = repo.judge_verdict_ids(session, wanted.run_id, wanted.criterion_id,
                                        wanted.verdict, by_option=criterion.is_multi_choice)
    return ({rid for rid, choice in humans.items() if choice == wanted.verdict}
            | (judged - humans.keys()))


def filter_choices(criterion: CriterionInfo) -> tuple[str, ...]:
    """What the verdict filter offers on a criterion: MET / UNMET / CANNOT_ASSESS, or a
    multi-choice criterion's option labels and CANNOT_ASSESS (an abstention naming no
    option), each compared with the stored choice."""
    if criterion.options is None:
        return VERDICTS
    return (*(o.label for o in criterion.options), "CANNOT_ASSESS")


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
