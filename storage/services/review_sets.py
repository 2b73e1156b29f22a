"""Review sets (a dataset under a rubric version): how many reviewers each response needs,
the random sample, who has reviewed what, and the set's coverage."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage import models as m
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import verdicts as repo
from storage.services import people
from storage.services.reviewers import Actor, Role, require

MAX_REVIEWERS_PER_RESPONSE = 20


@dataclass(frozen=True)
class ReviewSetSettings:
    dataset_id: int
    rubric_version_id: int
    reviewers_per_response: int = 1
    sample_size: int = 0
    # The version number these settings were set on, when they carry from an earlier version
    # of the rubric (none were set on this one yet); None: set on this version, or defaults.
    carried_from: int | None = None


@dataclass(frozen=True)
class ReviewerProgress:
    reviewer_key: str
    reviewer: str  # the name shown (the newest one they saved with)
    responses_done: int  # every criterion answered
    responses_started: int  # at least one criterion answered


@dataclass(frozen=True)
class Coverage:
    """How many responses have 0, 1, 2, ... complete reviews, and each reviewer's progress."""

    settings: ReviewSetSettings
    response_count: int
    by_reviewers: dict[int, int]  # number of complete reviews -> responses
    reviewers: tuple[ReviewerProgress, ...]

    @property
    def complete(self) -> int:
        """Responses with as many complete reviews as the set asks for."""
        need = self.settings.reviewers_per_response
        return sum(n for count, n in self.by_reviewers.items() if count >= need)


def get_settings(sessions: SessionFactory, dataset_id: int,
                 rubric_version_id: int) -> ReviewSetSettings:
    with sessions() as session:
        return settings_of(session, dataset_id, rubric_version_id)


def settings_of(session: Session, dataset_id: int, rubric_version_id: int) -> ReviewSetSettings:
    """This version's settings; without any, the newest earlier version's of the same rubric
    (a new version — edited, imported or adopted from a wording trial — keeps how the set is
    reviewed until someone changes it there); else the defaults."""
    row = repo.get_review_set(session, dataset_id, rubric_version_id)
    if row is not None:
        return ReviewSetSettings(dataset_id, rubric_version_id, row.reviewers_per_response,
                                 row.sample_size)
    carried = _earlier_settings(session, dataset_id, rubric_version_id)
    if carried is None:
        return ReviewSetSettings(dataset_id, rubric_version_id)
    row, number = carried
    return ReviewSetSettings(dataset_id, rubric_version_id, row.reviewers_per_response,
                             row.sample_size, carried_from=number)


def _earlier_settings(session: Session, dataset_id: int, rubric_version_id: int
                      ) -> tuple[m.ReviewSetRow, int] | None:
    version = session.get(m.RubricVersionRow, rubric_version_id)
    if version is None:
        return None
    found = session.execute(
        select(m.ReviewSetRow, m.RubricVersionRow.number)
        .join(m.RubricVersionRow, m.RubricVersionRow.id == m.ReviewSetRow.rubric_version_id)
        .where(m.ReviewSetRow.dataset_id == dataset_id,
               m.RubricVersionRow.rubric_id == version.rubric_id,
               m.RubricVersionRow.number < version.number)
        .order_by(m.RubricVersionRow.number.desc()).limit(1)).first()
    return (found[0], found[1]) if found is not None else None


def update_settings(
    sessions: SessionFactory, *, actor: Actor, dataset_id: int, rubric_version_id: int,
    reviewers_per_response: int, sample_size: int = 0,
) -> ReviewSetSettings:
    """Set how many reviewers each response needs and the size of the random sample."""
    require(actor, Role.ADMIN, "change how many reviewers a response needs")
    if not 1 <= int(reviewers_per_response) <= MAX_REVIEWERS_PER_RESPONSE:
        raise InvalidInputError(
            f"reviewers per response must be between 1 and {MAX_REVIEWERS_PER_RESPONSE}, "
            f"got {reviewers_per_response}")
    if int(sample_size) < 0:
        raise InvalidInputError(f"the random sample cannot be negative, got {sample_size}")
    with sessions.begin() as session:
        dataset = dataset_repo.get_dataset(session, dataset_id)
        version = rubric_repo.get_version(session, rubric_version_id)
        row = repo.get_review_set(session, dataset_id, rubric_version_id)
        if row is None:
            row = m.ReviewSetRow(dataset_id=dataset_id, rubric_version_id=rubric_version_id)
            session.add(row)
        before = (row.reviewers_per_response, row.sample_size)
        row.reviewers_per_response = int(reviewers_per_response)
        row.sample_size = int(sample_size)
        row.updated_by = actor.key
        row.updated_at = m.utcnow()
        if before != (row.reviewers_per_response, row.sample_size):
            sample = (f"a random sample of {row.sample_size}" if row.sample_size
                      else "every response")
            people.record(session, actor, "set review set", "dataset", dataset_id,
                          dataset.name,
                          f"{version.rubric.name} v{version.number}: "
                          f"{row.reviewers_per_response} reviewer(s) per response, {sample}")
    return ReviewSetSettings(dataset_id, rubric_version_id, int(reviewers_per_response),
                             int(sample_size))


def sample_ids(dataset_id: int, rubric_version_id: int, response_ids: list[int],
               size: int) -> list[int]:
    """The random sample, the same draw for every reviewer (so their reviews overlap)."""
    if size <= 0 or not response_ids:
        return []
    draw = random.Random(f"review-sample:{dataset_id}:{rubric_version_id}")
    return draw.sample(sorted(response_ids), min(size, len(response_ids)))


def answered_counts(session: Session, dataset_id: int, rubric_version_id: int,
                    sources: dict | None = None) -> dict[int, dict[str, int]]:
    """Per response, each reviewer's number of answered criteria of this version (carried
    verdicts included), counted by the database."""
    sources = repo.carry_sources(session, rubric_version_id) if sources is None else sources
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    if sources:
        for rid, stream, n in session.execute(repo.answered_counts_query(dataset_id, sources)):
            counts[rid][stream] = int(n)
    return counts


def reviewed_by(session: Session, dataset_id: int, rubric_version_id: int
                ) -> tuple[dict[int, dict[str, int]], dict[str, str], int]:
    """``answered_counts``; the reviewers' names; the number of criteria."""
    sources = repo.carry_sources(session, rubric_version_id)
    criteria = {target for target, _n in sources.values()}
    counts = answered_counts(session, dataset_id, rubric_version_id, sources)
    names = repo.reviewer_names(session, dataset_id, list(sources))
    return counts, names, len(criteria)


def coverage(sessions: SessionFactory, dataset_id: int, rubric_version_id: int) -> Coverage:
    with sessions() as session:
        settings = settings_of(session, dataset_id, rubric_version_id)
        ids = dataset_repo.response_ids(session, dataset_id)
        counts, names, criteria = reviewed_by(session, dataset_id, rubric_version_id)
    complete = Counter()
    done: Counter[str] = Counter()
    started: Counter[str] = Counter()
    for rid in ids:
        per = counts.get(rid, {})
        complete[sum(1 for n in per.values() if criteria and n >= criteria)] += 1
        for stream, n in per.items():
            started[stream] += 1
            if criteria and n >= criteria:
                done[stream] += 1
    reviewers = tuple(sorted(
        (ReviewerProgress(reviewer_key=k, reviewer=names.get(k, k), responses_done=done[k],
                          responses_started=started[k]) for k in started),
        key=lambda p: (-p.responses_done, p.reviewer)))
    return Coverage(settings=settings, response_count=len(ids),
                    by_reviewers=dict(sorted(complete.items())), reviewers=reviewers)
