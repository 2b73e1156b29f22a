"""The review queue and one response in detail (every run's effective grade, the human side)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from sqlalchemy.orm import Session

from grading.types import ScoringSettings
from storage.convert import grade_info, response_info, run_info, version_info
from storage.dto import (
    EffectiveGrade,
    HumanDecision,
    HumanScore,
    HumanVerdictInfo,
    ResponseInfo,
    RubricVersionInfo,
    RunInfo,
)
from storage.effective import compute_effective_grade, compute_human_score
from storage.engine import SessionFactory
from storage.repositories import datasets as dataset_repo
from storage.repositories import effective as effective_repo
from storage.repositories import queue_ids
from storage.repositories import results as repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import blindness, effective_reads, review_sets, reviews
from storage.services.blindness import Sight
from storage.services.queue_items import QueueItem as QueueItem  # the page's items
from storage.services.queue_items import ReviewQueue, queue_order, standing
from storage.services.results import DEFAULT_SCORE_GAP, GradeFacts


@dataclass(frozen=True)
class ResponseDetail:
    """One response with every selected run's effective grade and the human verdicts, as one
    reviewer may see them (other reviewers' verdicts hidden until they have answered)."""

    response: ResponseInfo
    version: RubricVersionInfo
    runs: tuple[RunInfo, ...]
    # Aligned with ``runs``; None where the run has not graded this response (yet).
    grades: tuple[EffectiveGrade | None, ...]
    humans: dict[int, HumanDecision]  # the decision per criterion (hidden ones left out)
    history: tuple[HumanVerdictInfo, ...]
    human_score: HumanScore
    # Criteria on which the runs' judge verdicts differ.
    disagree_criteria: frozenset[int] = field(default_factory=frozenset)
    # The viewer's own current verdict per criterion.
    mine: dict[int, HumanVerdictInfo] = field(default_factory=dict)
    # Criteria with other reviewers' verdicts the viewer may not see yet (blind to each other).
    hidden: frozenset[int] = frozenset()

    @property
    def others_hidden(self) -> bool:
        return bool(self.hidden)


@dataclass(frozen=True)
class DisputeItem:
    """A disputed criterion of one response, waiting for an adjudicator."""

    response_id: int
    external_id: str | None
    criterion_id: int
    criterion_label: str
    decision: HumanDecision


def review_queue(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], unreviewed_only: bool = False,
    score_gap: float = DEFAULT_SCORE_GAP, facts: GradeFacts | None = None,
    reviewer_key: str | None = None, covered: Sequence[int] | None = None,
) -> ReviewQueue:
    """One reviewer's queue: the responses that still need reviewers and that they have not
    finished first; within them judge disagreements and failures, then the set's random
    sample, then dataset order. ``unreviewed_only`` keeps only those.

    Without ``reviewer_key`` the queue is the set's: responses with fewer complete reviews
    than the set asks for come first.

    The order is computed here (storage/services/queue_items.py); the items are built when
    read, so only the page's few become ``QueueItem``s. ``facts`` (``grade_facts``) and
    ``covered`` (``covered_responses``, fixed once the runs are launched) may come from a
    cache.
    """
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        criteria_count = repo.criteria_count(session, rubric_version_id)
        if facts is None or facts.run_ids != tuple(runs):
            failed = frozenset(repo.failed_ids(session, runs))
            disagree = frozenset(repo.disagree_ids(session, runs, score_gap))
        else:
            failed, disagree = frozenset(facts.failed), frozenset(facts.disagree)
        settings = review_sets.settings_of(session, dataset_id, rubric_version_id)
        # (not reviewed_by: the queue needs no reviewer names, a lookup over every reviewer)
        counts = review_sets.answered_counts(session, dataset_id, rubric_version_id)
        if covered is None:
            ids = _covered(session, dataset_id, runs)
        else:
            ids = list(covered)
    need = settings.reviewers_per_response
    sample = review_sets.sample_ids(dataset_id, rubric_version_id, ids, settings.sample_size)
    default = standing({}, criteria_count, need, reviewer_key).needs
    needs = {rid: found for rid, per in counts.items()
             if (found := standing(per, criteria_count, need, reviewer_key).needs) != default}
    order = queue_order(ids, needs=needs, default_needs=default, disagree=disagree,
                        failed=failed, sample=sample, unreviewed_only=unreviewed_only)
    return ReviewQueue(order, criteria_count=criteria_count, need=need,
                       reviewer_key=reviewer_key, counts=dict(counts), disagree=disagree,
                       failed=failed, sample=sample,
                       external_of=partial(_external_ids, sessions))


def covered_responses(sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
                      run_ids: Sequence[int]) -> tuple[int, ...]:
    """The responses the queue of these runs holds, ascending: every response any of them
    covers (the dataset's, without runs). Fixed when the runs are launched."""
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        return tuple(_covered(session, dataset_id, runs))


def _covered(session: Session, dataset_id: int, runs: list[int]) -> list[int]:
    return (queue_ids.covered_ids(session, dataset_id, runs) if runs
            else queue_ids.dataset_ids(session, dataset_id))


def _external_ids(sessions: SessionFactory, response_ids: Sequence[int]
                  ) -> dict[int, str | None]:
    with sessions() as session:
        return queue_ids.external_ids_of(session, response_ids)


def response_detail(
    sessions: SessionFactory, response_id: int, rubric_version_id: int,
    run_ids: Sequence[int] | None = None, *, viewer: str | None = None,
    see_all: bool = False, sight: Sight | None = None,
) -> ResponseDetail:
    """The response, the rubric version, each run's effective grade and the human side,
    as ``sight`` may see them (storage/services/blindness.py): hidden criteria read as not
    reviewed, in the grades, the human score and the history alike.

    ``viewer`` (a reviewer key; ``see_all`` for an adjudicator) is the Review page's short
    form of ``sight``; with neither, everything is shown (the command line's view).
    """
    if sight is None:
        sight = blindness.EVERYTHING if viewer is None else Sight(viewer, see_all)
    with sessions() as session:  # one session, the decisions computed once
        response = response_info(dataset_repo.get_response(session, response_id))
        version = version_info(rubric_repo.get_version(session, rubric_version_id))
        wanted = None if run_ids is None else set(run_ids)
        runs = tuple(run_info(r) for r in run_repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=response.dataset_id)
            if wanted is None or r.id in wanted)
        everyone = effective_reads.decisions(session, rubric_version_id, [response_id]).get(
            response_id, {})
        graded = {grade.run_id: grade_info(grade) for grade, _run in
                  run_repo.grades_for_response(session, response_id, rubric_version_id)}
        everything = reviews.history_in(session, response_id,
                                        rubric_version_id=rubric_version_id)
    hidden = blindness.hidden_criteria(sight, everyone)
    decisions = {cid: d for cid, d in everyone.items() if cid not in hidden}
    criteria = list(version.criteria)
    grades = tuple(
        compute_effective_grade(criteria=criteria, grade=graded[run.id],
                                settings=run.settings.scoring(), to_grade=response.to_grade,
                                humans=decisions)
        if run.id in graded else None
        for run in runs)
    mine = {cid: own[0] for cid, d in decisions.items()
            if (own := [h for h in d.reviews if h.reviewer_key == sight.viewer])}
    history = tuple(h for h in everything if h.criterion_id not in hidden)
    settings = runs[0].settings.scoring() if runs else ScoringSettings()
    human = compute_human_score(
        response_id=response_id, rubric_version_id=rubric_version_id, criteria=criteria,
        humans=decisions, settings=settings, to_grade=response.to_grade)
    judged: dict[int, set] = defaultdict(set)
    for grade in grades:
        for criterion in grade.criteria if grade else ():
            if criterion.judge_choice is not None:  # an option label on a rating
                judged[criterion.criterion_id].add(criterion.judge_choice)
    return ResponseDetail(
        response=response, version=version, runs=runs, grades=grades,
        humans=decisions, history=history, human_score=human,
        disagree_criteria=frozenset(c for c, seen in judged.items() if len(seen) > 1),
        mine=mine, hidden=frozenset(hidden),
    )


def verdict_stamp(sessions: SessionFactory, response_id: int) -> tuple[int, int]:
    """(count, newest id) of the human verdicts on one response: what a cached detail of it
    is keyed on, so a save on another response leaves it cached."""
    with sessions() as session:
        return verdict_repo.response_stamp(session, response_id)


@dataclass(frozen=True)
class DisputePage:
    """The first disputes of the adjudication queue, and how many there are in all."""

    disputed: int  # disputed criteria in the set
    items: tuple[DisputeItem, ...]  # in queue order


def adjudication_page(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int, limit: int,
    keys: Sequence[tuple[int, int]] = (),
) -> DisputePage:
    """The first ``limit`` disputed criteria of the adjudication queue, and the
    (response, criterion) ``keys`` asked for by name while they are disputed or adjudicated
    disagreements (the cards a page keeps in place), in the queue's order. The disputes come
    from ``effective_verdicts`` (an indexed COUNT and ``ORDER BY ... LIMIT``); only these
    items are built."""
    with sessions() as session:
        version = version_info(rubric_repo.get_version(session, rubric_version_id))
        total, first, kept = effective_repo.dispute_page(
            session, rubric_version_id, dataset_id, limit, keys)
        asked = set(first) | set(kept)
        responses = sorted({rid for rid, _cid in asked})
        # The page's few responses x its criteria: two queries, not two per criterion.
        decisions = effective_reads.decisions(session, rubric_version_id, responses,
                                              {cid for _rid, cid in asked})
        external = queue_ids.external_ids_of(session, responses)
    found = _dispute_items(version, decisions, external, include_resolved=True)
    return DisputePage(disputed=total, items=tuple(
        d for d in found if (d.response_id, d.criterion_id) in asked))


def _dispute_items(version: RubricVersionInfo, decisions: effective_reads.Decisions,
                   external: dict[int, str | None], *, include_resolved: bool,
                   ) -> list[DisputeItem]:
    """The queue's items among these decisions, in its order: disputes first, then by
    response and the criterion's position."""
    labels = {c.id: c.label for c in version.criteria}
    order = {c.id: c.position for c in version.criteria}
    found = [
        DisputeItem(response_id=rid, external_id=external.get(rid), criterion_id=cid,
                    criterion_label=labels.get(cid, str(cid)), decision=decision)
        for rid, per in decisions.items() for cid, decision in per.items()
        if decision.disputed or (include_resolved and decision.status == "adjudicated"
                                 and len({h.choice for h in decision.reviews}) > 1)
    ]
    return sorted(found, key=lambda d: (not d.decision.disputed, d.response_id,
                                        order.get(d.criterion_id, 0)))


def adjudication_queue(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    include_resolved: bool = False,
) -> list[DisputeItem]:
    """Disputed criteria (reviewers who answered disagree, no adjudication yet), each with
    every reviewer's verdict and note; ``include_resolved`` adds the adjudicated ones."""
    with sessions() as session:
        version = version_info(rubric_repo.get_version(session, rubric_version_id))
        # Only the disputed (and adjudicated) criteria, from effective_verdicts: each
        # reviewer's verdict is read for those few.
        keys = effective_repo.dispute_keys(
            session, rubric_version_id, dataset_id,
            ("disputed", "adjudicated") if include_resolved else ("disputed",))
        decisions = effective_reads.decisions_of(session, rubric_version_id, keys)
        external = queue_ids.external_ids_of(session, sorted({rid for rid, _cid in keys}))
    return _dispute_items(version, decisions, external, include_resolved=include_resolved)
