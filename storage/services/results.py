"""Reading results: the responses x runs table, the review queue, one response in detail.

How this stays fast at 10,000 responses (see benchmarks/results_page.py for the figures):

- Everything that can be decided from stored columns runs in SQL, once per call, over the
  whole dataset: text search, judge failures, judge disagreements (two runs giving different
  verdicts on one criterion, or scores further apart than ``score_gap``), review counts, and
  the judge score of every (response, run) pair — a few narrow queries, no response texts.
- No score math here. An effective score differs from the judge's score only when a person
  has reviewed the response, so the judge's stored score *is* the effective score of every
  unreviewed response. Effective scores are computed (by ``storage.services.reviews``, which
  uses ``grading``'s one aggregation function) only for the reviewed responses among the
  candidates, which keeps score-range filters and score sorting exact at the cost of one
  aggregation per reviewed grade.
- Texts (snippets) are read only for the page being shown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import distinct, func, or_, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.convert import response_info, run_info, version_info
from storage.dto import (
    EffectiveGrade,
    HumanScore,
    HumanVerdictInfo,
    ResponseInfo,
    RubricVersionInfo,
    RunInfo,
)
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, NotFoundError
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.services import reviews

ReviewedFilter = Literal["any", "reviewed", "not_reviewed"]
SortKey = Literal["response", "score", "spread", "reviewed"]
SNIPPET_CHARS = 160
# Two judges whose scores differ by more than this disagree even if no criterion differs
# (the only way to see disagreement with a holistic RubricAsJudge run).
DEFAULT_SCORE_GAP = 0.2
_CHUNK = 500


@dataclass(frozen=True)
class ResultsFilter:
    """What the results table shows; every field narrows the set of responses."""

    search: str = ""
    failed_only: bool = False
    disagree_only: bool = False
    reviewed: ReviewedFilter = "any"
    min_score: float | None = None
    max_score: float | None = None
    # Which run's effective score the range applies to; None: any selected run.
    score_run_id: int | None = None


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
    disagree: bool
    reviewed_count: int
    criteria_count: int


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
class QueueItem:
    response_id: int
    external_id: str | None
    disagree: bool
    failed: bool
    reviewed_count: int
    criteria_count: int

    @property
    def fully_reviewed(self) -> bool:
        return self.criteria_count > 0 and self.reviewed_count >= self.criteria_count


@dataclass(frozen=True)
class ResponseDetail:
    """One response with every selected run's effective grade and the human verdicts."""

    response: ResponseInfo
    version: RubricVersionInfo
    runs: tuple[RunInfo, ...]
    # Aligned with ``runs``; None where the run has not graded this response (yet).
    grades: tuple[EffectiveGrade | None, ...]
    humans: dict[int, HumanVerdictInfo]
    history: tuple[HumanVerdictInfo, ...]
    human_score: HumanScore
    # Criteria on which the runs' judge verdicts differ.
    disagree_criteria: frozenset[int] = field(default_factory=frozenset)


Scores = dict[tuple[int, int], tuple[float | None, str | None]]  # (response, run) -> (score, error)


@dataclass(frozen=True)
class GradeFacts:
    """What the table needs from the runs' grades alone (no human verdicts): it changes only
    when a grade is stored, so callers may cache it while the runs' graded counts stand."""

    run_ids: tuple[int, ...]
    failed: frozenset[int]
    disagree: frozenset[int]
    judged: Scores


def list_result_sets(sessions: SessionFactory) -> list[ResultSet]:
    """Every (dataset, rubric version) pair that has at least one run, newest first."""
    with sessions() as session:
        rows = session.execute(
            select(m.RunRow.dataset_id, m.DatasetRow.name, m.RunRow.rubric_version_id,
                   m.RubricRow.name, m.RubricVersionRow.number, m.RunRow.id)
            .join(m.DatasetRow, m.DatasetRow.id == m.RunRow.dataset_id)
            .join(m.RubricVersionRow, m.RubricVersionRow.id == m.RunRow.rubric_version_id)
            .join(m.RubricRow, m.RubricRow.id == m.RubricVersionRow.rubric_id)
            .order_by(m.RunRow.id)
        ).all()
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


def _check_runs(session: Session, dataset_id: int, rubric_version_id: int,
                run_ids: Sequence[int]) -> list[int]:
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return ids
    rows = session.execute(
        select(m.RunRow.id, m.RunRow.dataset_id, m.RunRow.rubric_version_id)
        .where(m.RunRow.id.in_(ids))
    ).all()
    found = {r.id: r for r in rows}
    for run_id in ids:
        run = found.get(run_id)
        if run is None:
            raise NotFoundError(f"grading run {run_id} does not exist")
        if run.dataset_id != dataset_id or run.rubric_version_id != rubric_version_id:
            raise InvalidInputError(
                f"run {run_id} graded another dataset or rubric version; compare runs of "
                "one dataset under one rubric version")
    return ids


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _candidate_ids(session: Session, dataset_id: int, search: str) -> list[int]:
    query = select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
    needle = search.strip()
    if needle:
        pattern = f"%{_escape_like(needle)}%"
        query = query.where(or_(
            m.ResponseRow.external_id.ilike(pattern, escape="\\"),
            m.ResponseRow.query.ilike(pattern, escape="\\"),
            m.ResponseRow.output.ilike(pattern, escape="\\"),
        ))
    return list(session.scalars(query.order_by(m.ResponseRow.id)))


def _failed_ids(session: Session, run_ids: list[int]) -> set[int]:
    """Responses on which a selected run failed, or fell back on a criterion."""
    if not run_ids:
        return set()
    whole = select(m.GradeRow.response_id).where(
        m.GradeRow.run_id.in_(run_ids),
        or_(m.GradeRow.score.is_(None), m.GradeRow.error.is_not(None)))
    partial = (
        select(m.GradeRow.response_id)
        .join(m.GradeCriterionRow, m.GradeCriterionRow.grade_id == m.GradeRow.id)
        .where(m.GradeRow.run_id.in_(run_ids), m.GradeCriterionRow.error.is_not(None))
    )
    return set(session.scalars(whole)) | set(session.scalars(partial.distinct()))


def _disagree_ids(session: Session, run_ids: list[int], score_gap: float) -> set[int]:
    """Responses on which two selected runs gave different verdicts or far-apart scores."""
    if len(run_ids) < 2:
        return set()
    verdicts = (
        select(m.GradeRow.response_id)
        .join(m.GradeCriterionRow, m.GradeCriterionRow.grade_id == m.GradeRow.id)
        .where(m.GradeRow.run_id.in_(run_ids), m.GradeCriterionRow.verdict.is_not(None))
        .group_by(m.GradeRow.response_id, m.GradeCriterionRow.criterion_id)
        .having(func.count(distinct(m.GradeCriterionRow.verdict)) > 1)
        .subquery()
    )
    scores = (
        select(m.GradeRow.response_id)
        .where(m.GradeRow.run_id.in_(run_ids), m.GradeRow.score.is_not(None))
        .group_by(m.GradeRow.response_id)
        .having(func.max(m.GradeRow.score) - func.min(m.GradeRow.score) > score_gap)
    )
    return set(session.scalars(select(verdicts.c.response_id).distinct())) | set(
        session.scalars(scores))


def _review_counts(session: Session, dataset_id: int, rubric_version_id: int) -> dict[int, int]:
    return dict(session.execute(
        select(m.HumanVerdictRow.response_id,
               func.count(distinct(m.HumanVerdictRow.criterion_id)))
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .where(m.HumanVerdictRow.rubric_version_id == rubric_version_id,
               m.ResponseRow.dataset_id == dataset_id)
        .group_by(m.HumanVerdictRow.response_id)
    ).all())


def _criteria_count(session: Session, rubric_version_id: int) -> int:
    rubric_repo.get_version(session, rubric_version_id)
    return session.scalar(
        select(func.count()).select_from(m.CriterionRow)
        .where(m.CriterionRow.version_id == rubric_version_id)) or 0


def _judge_scores(
    session: Session, run_ids: list[int]
) -> dict[tuple[int, int], tuple[float | None, str | None]]:
    if not run_ids:
        return {}
    return {
        (response_id, run_id): (score, error)
        for response_id, run_id, score, error in session.execute(
            select(m.GradeRow.response_id, m.GradeRow.run_id, m.GradeRow.score,
                   m.GradeRow.error)
            .where(m.GradeRow.run_id.in_(run_ids)))
    }


def _effective_overlay(
    sessions: SessionFactory, run_ids: list[int], reviewed_ids: list[int]
) -> dict[tuple[int, int], tuple[float | None, str | None]]:
    """Effective scores of the reviewed responses, computed by the one aggregation path."""
    overlay: dict[tuple[int, int], tuple[float | None, str | None]] = {}
    if not reviewed_ids:
        return overlay
    for run_id in run_ids:
        for start in range(0, len(reviewed_ids), _CHUNK):
            for grade in reviews.effective_grades_for_run(
                    sessions, run_id, reviewed_ids[start:start + _CHUNK]):
                overlay[(grade.response_id, run_id)] = (grade.score, grade.error)
    return overlay


def _snippets(session: Session, ids: list[int]) -> dict[int, tuple[str | None, str, str]]:
    if not ids:
        return {}
    return {
        rid: (external_id, query or "", output or "")
        for rid, external_id, query, output in session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id,
                   func.substr(m.ResponseRow.query, 1, SNIPPET_CHARS),
                   func.substr(m.ResponseRow.output, 1, SNIPPET_CHARS))
            .where(m.ResponseRow.id.in_(ids)))
    }


def _in_range(value: float | None, low: float | None, high: float | None) -> bool:
    if low is None and high is None:
        return True
    if value is None:
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def grade_facts(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], score_gap: float = DEFAULT_SCORE_GAP,
) -> GradeFacts:
    """Failures, disagreements and judge scores of these runs (the slow, cacheable part)."""
    with sessions() as session:
        runs = _check_runs(session, dataset_id, rubric_version_id, run_ids)
        return GradeFacts(
            run_ids=tuple(runs), failed=frozenset(_failed_ids(session, runs)),
            disagree=frozenset(_disagree_ids(session, runs, score_gap)),
            judged=_judge_scores(session, runs))


def reviewed_effective_scores(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int],
) -> Scores:
    """Effective scores of every reviewed response of the dataset (cacheable until the next
    verdict or grade); every other response's effective score is its judge score."""
    with sessions() as session:
        runs = _check_runs(session, dataset_id, rubric_version_id, run_ids)
        reviewed = sorted(_review_counts(session, dataset_id, rubric_version_id))
    return _effective_overlay(sessions, runs, reviewed)


def results_page(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], filters: ResultsFilter | None = None, sort: SortKey = "response",
    sort_run_id: int | None = None, descending: bool = False, offset: int = 0,
    limit: int = 50, score_gap: float = DEFAULT_SCORE_GAP, facts: GradeFacts | None = None,
    reviewed_scores: Scores | None = None,
) -> ResultsPage:
    """One page of the responses x runs table of effective scores.

    ``sort``: ``response`` (dataset order), ``score`` (effective score of ``sort_run_id``,
    default the first run), ``spread`` (largest gap between runs first when descending),
    ``reviewed`` (number of reviewed criteria). Responses without a score sort last.
    ``facts`` and ``reviewed_scores`` (from ``grade_facts`` and ``reviewed_effective_scores``)
    may be passed in from a cache; they are computed here otherwise.
    """
    filters = filters or ResultsFilter()
    if limit < 1 or offset < 0:
        raise InvalidInputError("page size must be at least 1 and the offset not negative")
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = _check_runs(session, dataset_id, rubric_version_id, run_ids)
        criteria_count = _criteria_count(session, rubric_version_id)
        dataset_total = dataset_repo.response_count(session, dataset_id)
        candidates = _candidate_ids(session, dataset_id, filters.search)
        review_counts = _review_counts(session, dataset_id, rubric_version_id)
    if facts is None or facts.run_ids != tuple(runs):
        facts = grade_facts(sessions, dataset_id=dataset_id,
                            rubric_version_id=rubric_version_id, run_ids=runs,
                            score_gap=score_gap)
    failed, disagree, judged = facts.failed, facts.disagree, facts.judged

    ids = candidates
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
    elif needs_scores:
        effective.update(_effective_overlay(sessions, runs, reviewed_here))

    def scores_of(rid: int) -> list[float | None]:
        return [effective.get((rid, run), (None, None))[0] for run in runs]

    if filters.min_score is not None or filters.max_score is not None:
        if filters.score_run_id is not None and filters.score_run_id not in runs:
            raise InvalidInputError("the score range applies to a run that is not selected")
        positions = ([runs.index(filters.score_run_id)] if filters.score_run_id is not None
                     else range(len(runs)))
        ids = [i for i in ids if any(
            _in_range(scores_of(i)[p], filters.min_score, filters.max_score)
            for p in positions)]

    ids = _sorted(ids, sort, sort_run_id, runs, scores_of, review_counts, descending)
    page_ids = ids[offset:offset + limit]
    if not needs_scores and reviewed_scores is None:
        effective.update(_effective_overlay(
            sessions, runs, [i for i in page_ids if review_counts.get(i, 0) > 0]))
    with sessions() as session:
        snippets = _snippets(session, page_ids)
    rows = tuple(
        ResultsRow(
            response_id=rid, external_id=snippets[rid][0], query=snippets[rid][1],
            output=snippets[rid][2],
            scores=tuple(effective.get((rid, run), (None, None))[0] for run in runs),
            judge_scores=tuple(judged.get((rid, run), (None, None))[0] for run in runs),
            errors=tuple(effective.get((rid, run), (None, None))[1] for run in runs),
            graded=tuple((rid, run) in judged for run in runs),
            failed=rid in failed, disagree=rid in disagree,
            reviewed_count=review_counts.get(rid, 0), criteria_count=criteria_count,
        )
        for rid in page_ids
    )
    return ResultsPage(
        run_ids=tuple(runs), rows=rows, total=len(ids), dataset_total=dataset_total,
        failed_total=len(failed), disagree_total=len(disagree),
        reviewed_total=len(review_counts), offset=offset, limit=limit,
    )


def _sorted(ids, sort, sort_run_id, runs, scores_of, review_counts, descending):
    if sort == "response":
        return list(reversed(ids)) if descending else ids
    if sort == "reviewed":
        return sorted(ids, key=lambda i: review_counts.get(i, 0), reverse=descending)
    if sort == "score":
        if not runs:
            return ids
        run = sort_run_id if sort_run_id in runs else runs[0]
        position = runs.index(run)

        def value(i: int) -> float | None:
            return scores_of(i)[position]
    elif sort == "spread":
        def value(i: int) -> float | None:
            known = [s for s in scores_of(i) if s is not None]
            return max(known) - min(known) if len(known) >= 2 else None
    else:
        raise InvalidInputError(f"unknown sort {sort!r}; use response, score, spread or reviewed")
    known = [i for i in ids if value(i) is not None]
    unknown = [i for i in ids if value(i) is None]
    return sorted(known, key=value, reverse=descending) + unknown


def review_queue(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], unreviewed_only: bool = False,
    score_gap: float = DEFAULT_SCORE_GAP, facts: GradeFacts | None = None,
) -> list[QueueItem]:
    """Responses to review: not yet fully reviewed before fully reviewed; within each, judge
    disagreements and failures first, then dataset order."""
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = _check_runs(session, dataset_id, rubric_version_id, run_ids)
        criteria_count = _criteria_count(session, rubric_version_id)
        if facts is None or facts.run_ids != tuple(runs):
            failed = _failed_ids(session, runs)
            disagree = _disagree_ids(session, runs, score_gap)
        else:
            failed, disagree = set(facts.failed), set(facts.disagree)
        counts = _review_counts(session, dataset_id, rubric_version_id)
        if runs:
            ids = list(session.scalars(
                select(m.RunResponseRow.response_id)
                .where(m.RunResponseRow.run_id.in_(runs)).distinct()))
        else:
            ids = dataset_repo.response_ids(session, dataset_id)
        external = dict(session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id)
            .where(m.ResponseRow.dataset_id == dataset_id)).all())
    items = [
        QueueItem(response_id=rid, external_id=external.get(rid), disagree=rid in disagree,
                  failed=rid in failed, reviewed_count=counts.get(rid, 0),
                  criteria_count=criteria_count)
        for rid in ids
    ]
    if unreviewed_only:
        items = [i for i in items if not i.fully_reviewed]
    return sorted(items, key=lambda i: (
        i.fully_reviewed, not i.disagree, not i.failed, i.response_id))


def response_detail(
    sessions: SessionFactory, response_id: int, rubric_version_id: int,
    run_ids: Sequence[int] | None = None,
) -> ResponseDetail:
    """The response, the rubric version, each run's effective grade and the human side."""
    with sessions() as session:
        response = response_info(dataset_repo.get_response(session, response_id))
        version = version_info(rubric_repo.get_version(session, rubric_version_id))
        query = select(m.RunRow).where(m.RunRow.rubric_version_id == rubric_version_id,
                                       m.RunRow.dataset_id == response.dataset_id)
        if run_ids is not None:
            query = query.where(m.RunRow.id.in_(list(run_ids)))
        runs = tuple(run_info(r) for r in session.scalars(query.order_by(m.RunRow.id)))
    by_run = {g.run_id: g for g in reviews.effective_grades_for_response(
        sessions, response_id, rubric_version_id)}
    grades = tuple(by_run.get(run.id) for run in runs)
    humans = reviews.current_verdicts(sessions, response_id, rubric_version_id)
    history = tuple(reviews.verdict_history(
        sessions, response_id, rubric_version_id=rubric_version_id))
    settings = runs[0].settings.scoring() if runs else None
    human = reviews.human_score(sessions, response_id, rubric_version_id, settings)
    judged: dict[int, set] = defaultdict(set)
    for grade in grades:
        for criterion in grade.criteria if grade else ():
            if criterion.judge_verdict is not None:
                judged[criterion.criterion_id].add(criterion.judge_verdict)
    return ResponseDetail(
        response=response, version=version, runs=runs, grades=grades, humans=humans,
        history=history, human_score=human,
        disagree_criteria=frozenset(c for c, seen in judged.items() if len(seen) > 1),
    )


def response_labels(
    sessions: SessionFactory, dataset_id: int, *, limit: int = 2000
) -> list[tuple[int, str]]:
    """(id, short label) of a dataset's first responses, to pick a selection from; no texts
    beyond a snippet are read."""
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        rows = session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id,
                   func.substr(m.ResponseRow.query, 1, 60),
                   func.substr(m.ResponseRow.output, 1, 60))
            .where(m.ResponseRow.dataset_id == dataset_id)
            .order_by(m.ResponseRow.id).limit(limit)).all()
    return [
        (rid, f"{external or f'#{rid}'} — {(query or output or '').strip()}".strip(" —"))
        for rid, external, query, output in rows
    ]


def results_stamp(sessions: SessionFactory, run_ids: Sequence[int]) -> tuple:
    """Changes whenever the results of these runs may have: a new grade, a status change,
    any new human verdict. Two cheap queries; lets callers cache results until it changes."""
    with sessions() as session:
        runs = tuple((rid, int(graded), status) for rid, graded, status in session.execute(
            select(m.RunRow.id, m.RunRow.done_count + m.RunRow.failed_count, m.RunRow.status)
            .where(m.RunRow.id.in_(list(run_ids))).order_by(m.RunRow.id)).all())
        newest_verdict = session.scalar(select(func.max(m.HumanVerdictRow.id)))
    return (runs, newest_verdict)
