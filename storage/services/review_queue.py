"""The review queue and one response in detail (every run's effective grade, the human side)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

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
from storage.repositories import datasets as dataset_repo
from storage.repositories import results as repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.services import reviews
from storage.services.results import DEFAULT_SCORE_GAP, GradeFacts


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


def review_queue(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], unreviewed_only: bool = False,
    score_gap: float = DEFAULT_SCORE_GAP, facts: GradeFacts | None = None,
) -> list[QueueItem]:
    """Responses to review: not yet fully reviewed before fully reviewed; within each, judge
    disagreements and failures first, then dataset order."""
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        criteria_count = repo.criteria_count(session, rubric_version_id)
        if facts is None or facts.run_ids != tuple(runs):
            failed = repo.failed_ids(session, runs)
            disagree = repo.disagree_ids(session, runs, score_gap)
        else:
            failed, disagree = set(facts.failed), set(facts.disagree)
        counts = repo.review_counts(session, dataset_id, rubric_version_id)
        ids = (repo.run_response_ids(session, runs) if runs
               else dataset_repo.response_ids(session, dataset_id))
        external = repo.external_ids(session, dataset_id)
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
        wanted = None if run_ids is None else set(run_ids)
        runs = tuple(run_info(r) for r in run_repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=response.dataset_id)
            if wanted is None or r.id in wanted)
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
