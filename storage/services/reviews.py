"""Human verdicts (append-only per reviewer, concurrency-safe) and the effective scores they
produce (through storage.services.consensus and grading's one aggregation function)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.types import ScoringSettings, Verdict
from storage import limits
from storage import models as m
from storage.convert import criterion_info, grade_info
from storage.dto import EffectiveGrade, HumanScore, HumanVerdictInfo
from storage.effective import compute_effective_grade, compute_human_score
from storage.engine import SessionFactory
from storage.errors import (
    InvalidInputError,
    NotFoundError,
    StaleVerdictError,
)
from storage.id_chunks import id_chunks
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories import verdicts as repo
from storage.repositories.datasets import response_texts
from storage.run_settings import RunSettings
from storage.services import (
    adjudication_check,
    blindness,
    consensus,
    effective_reads,
    effective_upkeep,
    review_version,
)
from storage.services.blindness import Sight
from storage.services.review_version import NewerVersion
from storage.services.reviewers import Actor, Role, require, require_shown
from storage.services.save_retry import (
    Collision,
    is_unique_violation,
    retry_until_saved,
)
from storage.services.verdict_append import UNCHECKED as UNCHECKED
from storage.services.verdict_append import ReadAhead as ReadAhead
from storage.services.verdict_append import _Unchecked, read_ahead, stale_error
from storage.services.verdict_append import append_verdict as append_verdict
from storage.services.verdict_history import history_in as history_in
from storage.services.verdict_history import verdict_history as verdict_history

ADJUDICATION = m.ADJUDICATION_STREAM





def _parse(verdict: Verdict | str) -> Verdict | str:
    """A verdict, or text kept as it is: an option label is only known to be one once its
    criterion is read (``storage.choices.stored_choice``, inside the transaction)."""
    if isinstance(verdict, Verdict):
        return verdict
    if not isinstance(verdict, str) or not verdict.strip():
        raise InvalidInputError(
            f"a verdict must be MET, UNMET, CANNOT_ASSESS or an option label, got {verdict!r}")
    try:
        return Verdict.parse(verdict)
    except ValueError:
        return verdict.strip()


def set_human_verdict(
    sessions: SessionFactory, *, actor: Actor, response_id: int, criterion_id: int,
    verdict: Verdict | str, note: str = "",
    expected_current_id: int | _Unchecked | None = UNCHECKED,
    review_seconds: float | None = None,
) -> HumanVerdictInfo:
    """Append ``actor``'s own verdict on one criterion of one response.

    ``expected_current_id`` is the id of the actor's current verdict the form showed (None:
    the form showed none). If it changed since (another tab), StaleVerdictError is raised
    and nothing is written. Without it, concurrent writers are serialised: every verdict
    lands in the history (retrying with backoff), the last one written is current.
    """
    require(actor, Role.REVIEWER, "save a verdict")
    parsed = _parse(verdict)
    result = save_review(sessions, actor=actor, response_id=response_id,
                         verdicts={criterion_id: (parsed, note)},
                         expected={criterion_id: expected_current_id},
                         review_seconds=review_seconds)
    if result.stale:
        raise result.stale[0][1]
    return result.saved[0]


def adjudicate(
    sessions: SessionFactory, *, actor: Actor, response_id: int, criterion_id: int,
    verdict: Verdict | str, note: str = "",
    expected_current_id: int | _Unchecked | None = UNCHECKED,
    expected_reviews: Mapping[str, int] | None = None,
) -> HumanVerdictInfo:
    """Record an adjudicator's verdict: it decides the criterion whatever the reviewers said.

    ``expected_current_id`` is the current adjudication the adjudicator saw (None: none);
    ``expected_reviews`` each reviewer's current verdict id the adjudicator saw (reviewer key
    -> id; ``adjudication_check.shown_reviews``). Either changed: StaleVerdictError, nothing
    written.
    """
    require(actor, Role.ADJUDICATOR, "adjudicate a verdict")
    parsed = _parse(verdict)
    limits.check([("the adjudicator's name", _who(actor)[1], limits.NAME_MAX),
                  ("the note", note, None)])

    def work() -> HumanVerdictInfo:
        try:
            with sessions.begin() as session:
                if expected_reviews is not None:
                    adjudication_check.check_reviews(session, response_id, criterion_id,
                                                     expected_reviews)
                saved = append_verdict(session, response_id, criterion_id, parsed,
                                       _who(actor), note or "", expected_current_id,
                                       stream=ADJUDICATION)
                effective_upkeep.refresh_verdicts(session, [(response_id, criterion_id)])
                return saved
        except IntegrityError as exc:
            if not is_unique_violation(exc):
                raise
            if not isinstance(expected_current_id, _Unchecked):
                with sessions() as session:
                    raise stale_error(repo.latest(session, response_id, criterion_id,
                                             ADJUDICATION)) from None
            raise Collision from None

    return retry_until_saved(work)


@dataclass(frozen=True)
class SaveResult:
    saved: tuple[HumanVerdictInfo, ...]
    stale: tuple[tuple[int, StaleVerdictError], ...]  # (criterion id, why), nothing written
    # With ``shown_version_id``: the rubric's newer version, when the page showed an older one
    newer: NewerVersion | None = None


def save_review(
    sessions: SessionFactory, *, actor: Actor, response_id: int,
    verdicts: Mapping[int, tuple[Verdict | str, str]],
    expected: Mapping[int, int | _Unchecked | None] | None = None,
    review_seconds: float | None = None, shown_as: str | None = None,
    shown_version_id: int | None = None,
) -> SaveResult:
    """Save a reviewer's verdicts on several criteria of one response in one transaction.

    ``verdicts``: criterion id -> (verdict, note). A criterion whose current verdict (of this
    reviewer) is no longer the one in ``expected`` is reported as stale and not written; the
    others are written together. ``shown_as``: the identity the reviewer's page showed when
    they saved; if another one acts now, IdentityChangedError and nothing is written.
    ``shown_version_id``: the rubric version the page showed; the verdicts are recorded on it,
    and ``newer`` says when the rubric has moved on (storage.services.review_version).
    """
    require(actor, Role.REVIEWER, "save a verdict")
    require_shown(actor, shown_as)
    parsed = {cid: (_parse(v), (note or "").strip()) for cid, (v, note) in verdicts.items()}
    wanted = dict(expected or {})
    who = _who(actor)
    limits.check([("the reviewer name", who[1], limits.NAME_MAX),
                  *(("the note", note, None) for _v, note in parsed.values())])

    def work() -> SaveResult:
        stale: list[tuple[int, StaleVerdictError]] = []
        saved: list[HumanVerdictInfo] = []
        try:
            with sessions.begin() as session:
                if shown_version_id is not None:
                    review_version.check_shown_version(session, shown_version_id, parsed)
                ahead = read_ahead(session, response_id, list(parsed), who[0])
                for cid, (verdict, note) in parsed.items():
                    try:  # a stale criterion is refused before anything is written for it
                        saved.append(append_verdict(
                            session, response_id, cid, verdict, who, note,
                            wanted.get(cid, UNCHECKED), review_seconds=review_seconds,
                            ahead=ahead))
                    except StaleVerdictError as exc:
                        stale.append((cid, exc))
                # After every append: its locks come after the verdicts' own writes.
                effective_upkeep.refresh_verdicts(
                    session, [(response_id, h.criterion_id) for h in saved])
                newer = None if shown_version_id is None else review_version.newer_version(
                    session, shown_version_id, [h.criterion_id for h in saved])
        except IntegrityError as exc:
            if not is_unique_violation(exc):
                raise
            raise Collision from None
        return SaveResult(saved=tuple(saved), stale=tuple(stale), newer=newer)

    return retry_until_saved(work)


def _who(actor: Actor) -> tuple[str, str]:
    key = actor.key.strip()
    if not key:
        raise InvalidInputError("enter your name as reviewer before saving a verdict")
    return key, (actor.name or actor.key).strip()


def current_verdicts(
    sessions: SessionFactory, response_id: int, rubric_version_id: int,
    reviewer_key: str | None = None,
) -> dict[int, HumanVerdictInfo]:
    """The human verdict applied per criterion id (adjudicated or agreed; carried over
    included), or with ``reviewer_key`` that reviewer's own current verdicts."""
    with sessions() as session:
        if reviewer_key is None:
            found = effective_reads.score_decisions(session, rubric_version_id, [response_id])
            return {cid: d.applied for cid, d in found.get(response_id, {}).items()
                    if d.applied is not None}
        reviews, _adj, _n, _v = consensus.gather(session, [response_id], rubric_version_id)
        return {cid: h for cid, items in reviews.get(response_id, {}).items()
                for h in items if h.reviewer_key == reviewer_key}


def effective_grades_for_response(
    sessions: SessionFactory, response_id: int, rubric_version_id: int | None = None
) -> list[EffectiveGrade]:
    """Every run's grade of this response with current human verdicts applied."""
    with sessions() as session:
        pairs = run_repo.grades_for_response(session, response_id, rubric_version_id)
        if not pairs:
            dataset_repo.require_response(session, response_id)
            return []
        by_version: dict[int, list[tuple[m.GradeRow, RunSettings]]] = defaultdict(list)
        for grade, run in pairs:
            by_version[run.rubric_version_id].append(
                (grade, RunSettings.model_validate(run.settings)))
        # The (possibly large) text is only read when a length penalty needs it.
        needs_text = any(s.length_penalty is not None for items in by_version.values()
                         for _g, s in items)
        to_grade = response_texts(session, [response_id]).get(response_id, "") if needs_text else ""
        results: list[EffectiveGrade] = []
        for version_id, items in by_version.items():
            criteria = [criterion_info(c) for c in rubric_repo.criteria_of(session, version_id)]
            humans = effective_reads.decisions(session, version_id, [response_id]).get(
                response_id, {})
            for grade, settings in items:
                results.append(compute_effective_grade(
                    criteria=criteria, grade=grade_info(grade), settings=settings.scoring(),
                    to_grade=to_grade, humans=humans,
                ))
        return sorted(results, key=lambda g: g.run_id)


def effective_grade(sessions: SessionFactory, grade_id: int) -> EffectiveGrade:
    with sessions() as session:
        grade = run_repo.get_grade(session, grade_id)
        run_id = grade.run_id
    [result] = effective_grades_for_run(sessions, run_id, [grade.response_id])
    return result


def effective_grades_for_run(
    sessions: SessionFactory, run_id: int, response_ids: Sequence[int] | None = None,
    *, sight: Sight = blindness.EVERYTHING, scores_only: bool = False,
) -> list[EffectiveGrade]:
    """A run's grades (all, or for these responses) with the human verdicts ``sight`` may
    see applied; a handful of queries whatever the number of grades.

    The decisions are read from ``effective_verdicts`` (storage.services.effective_reads),
    not recomputed. ``scores_only``: for a reader of the scores and errors alone (Results):
    the decisions carry no reviewer's verdicts (each criterion's ``decision.reviews`` is
    empty)."""
    with sessions() as session:
        run = run_repo.get_run(session, run_id)
        settings = RunSettings.model_validate(run.settings).scoring()
        criteria = [criterion_info(c) for c in rubric_repo.criteria_of(
            session, run.rubric_version_id)]
        grades = run_repo.grade_infos_for_run(session, run_id, response_ids)
        ids = [g.response_id for g in grades]
        if scores_only:
            humans = effective_reads.score_decisions(
                session, run.rubric_version_id, ids, dataset_id=run.dataset_id, sight=sight)
        else:
            humans = effective_reads.decisions(session, run.rubric_version_id, ids,
                                               sight=sight)
        texts = response_texts(session, ids) if settings.length_penalty is not None else {}
        return [
            compute_effective_grade(
                criteria=criteria, grade=g, settings=settings,
                to_grade=texts.get(g.response_id, ""), humans=humans.get(g.response_id, {}),
            )
            for g in grades
        ]


def human_score(
    sessions: SessionFactory, response_id: int, rubric_version_id: int,
    settings: ScoringSettings | None = None,
) -> HumanScore:
    """The score of a response from human verdicts alone (None until all are reviewed)."""
    [result] = human_scores(sessions, rubric_version_id, [response_id], settings)
    return result


def human_scores(
    sessions: SessionFactory, rubric_version_id: int, response_ids: Sequence[int],
    settings: ScoringSettings | None = None, *, sight: Sight = blindness.EVERYTHING,
) -> list[HumanScore]:
    """Each response's score from the human verdicts ``sight`` may see."""
    settings = settings or ScoringSettings()
    ids = list(response_ids)
    with sessions() as session:
        rubric_repo.get_version(session, rubric_version_id)  # NotFoundError if missing
        criteria = [criterion_info(c) for c in rubric_repo.criteria_of(
            session, rubric_version_id)]
        humans = effective_reads.score_decisions(session, rubric_version_id, ids,
                                                 sight=sight)
        texts = response_texts(session, ids) if settings.length_penalty is not None else {}
        missing = set(ids) - set(_existing_ids(session, ids))
        if missing:
            raise NotFoundError(f"responses do not exist: {sorted(missing)[:10]}")
        return [
            compute_human_score(
                response_id=rid, rubric_version_id=rubric_version_id, criteria=criteria,
                humans=humans.get(rid, {}), settings=settings, to_grade=texts.get(rid),
            )
            for rid in ids
        ]


def _existing_ids(session: Session, ids: list[int]) -> list[int]:
    found: list[int] = []
    for chunk in id_chunks(ids):
        found.extend(session.scalars(
            select(m.ResponseRow.id).where(m.ResponseRow.id.in_(chunk))))
    return found
