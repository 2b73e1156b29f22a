"""People review comparison pairs: each reviewer's preferences per criterion (append-only,
concurrency-safe), adjudication, and what a reviewer may see of a pair.

A reviewer is shown the pair's two responses with sides randomised for them
(storage.services.pair_sides) and answers in what they were shown; the answer is stored in
the comparison's own terms. Blindness, as for single verdicts (storage.services.blindness)
but per pair: until a reviewer has answered every criterion of a pair, they see neither the
judge's preferences nor other people's, nor which source is which; adjudicators and admins
see everything. The people's decision per criterion: storage.services.pair_consensus; the
pair's result with it: storage.services.pair_results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.pairwise import aggregation
from grading.pairwise.parsing import Side
from grading.types import Criterion
from storage import limits
from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, InvalidStateError, NotFoundError, StaleVerdictError
from storage.repositories import pair_reviews as repo
from storage.repositories import rubrics as rubric_repo
from storage.services import pair_consensus, pair_sides
from storage.services.blindness import Sight, as_reviewer, sight_of
from storage.services.pair_consensus import PairDecision, PairPreferenceInfo
from storage.services.reviewers import Actor, Role, require, require_shown
from storage.services.reviews import UNCHECKED
from storage.services.save_retry import Collision, is_unique_violation, retry_until_saved

ADJUDICATION = m.ADJUDICATION_STREAM
# A criterion as a caller names it: its id, its name, or None for a holistic comparison.
CriterionRef = int | str | None


@dataclass(frozen=True)
class PairCriterion:
    """One criterion of a comparison (holistic: the one whole-rubric question)."""

    position: int
    criterion_id: int | None
    criterion: Criterion


@dataclass(frozen=True)
class PairForReview:
    """A pair as one reviewer is shown it. ``left``/``right`` texts follow ``swapped``;
    ``mine``: the reviewer's current answers per position, as they were shown them.
    Everything under ``revealed`` is None until the viewer may see it."""

    pair_id: int
    comparison_id: int
    query: str
    left: str
    right: str
    swapped: bool
    criteria: tuple[PairCriterion, ...]
    mine: dict[int, Side]
    mine_ids: dict[int, int]  # position -> id of my current preference (for a stale check)
    answered: bool  # every criterion answered by this reviewer
    revealed: PairReveal | None


@dataclass(frozen=True)
class PairReveal:
    """What a reviewer sees once they have answered (adjudicators: always), in the
    comparison's own terms: the source names, the judge's preference per position, and
    every person's current preference with the decision they make."""

    a_label: str
    b_label: str
    judge: dict[int, Side | None]
    decisions: dict[int, PairDecision]


def comparison_criteria(session: Session, comparison: m.ComparisonRow
                        ) -> list[PairCriterion]:
    """The comparison's criteria by position, as the judge was asked them."""
    if comparison.holistic:
        return [PairCriterion(0, None, aggregation.HOLISTIC_CRITERION)]
    return [PairCriterion(n, row.id, criterion_info(row).to_criterion())
            for n, row in enumerate(rubric_repo.criteria_of(session, comparison.rubric_version_id))]


def load_pair(session: Session, pair_id: int) -> tuple[m.ComparisonPairRow, m.ComparisonRow]:
    pair = session.get(m.ComparisonPairRow, pair_id)
    if pair is None:
        raise NotFoundError(f"comparison pair {pair_id} does not exist")
    if pair.kind != "pair":
        raise InvalidStateError(
            f"comparison pair {pair_id} is not reviewed: it is listed as {pair.kind!r} "
            f"({pair.note or 'nothing to compare'})")
    return pair, session.get(m.ComparisonRow, pair.comparison_id)


def _position(criteria: Sequence[PairCriterion], ref: CriterionRef) -> PairCriterion:
    for c in criteria:
        if ref is None and c.criterion_id is None:
            return c
        if isinstance(ref, int) and not isinstance(ref, bool) and ref == c.criterion_id:
            return c
        if isinstance(ref, str) and c.criterion_id is not None and (
                ref.strip().casefold() == c.criterion.name.casefold()):
            return c
    known = ", ".join(f"{c.criterion_id} ({c.criterion.name!r})" if c.criterion_id is not None
                      else "None (holistic)" for c in criteria)
    raise InvalidInputError(
        f"criterion {ref!r} is not a criterion of this comparison; its criteria are: {known}")


def _who(actor: Actor) -> tuple[str, str]:
    key = actor.key.strip()
    if not key:
        raise InvalidInputError("enter your name as reviewer before saving a preference")
    return key, (actor.name or actor.key).strip()


def _stale(current: m.PairReviewRow | None) -> StaleVerdictError:
    if current is None:
        return StaleVerdictError("this preference changed while you were reviewing; reload",
                                 current_id=None)
    return StaleVerdictError(
        f"{current.reviewer} changed this preference to {current.side} at "
        f"{current.created_at:%Y-%m-%d %H:%M} UTC while you were reviewing; reload to see it "
        "and decide again", current_id=current.id)


def save_pair_review(
    sessions: SessionFactory, *, actor: Actor, pair_id: int,
    preferences: Mapping[CriterionRef, str | tuple[str, str]], shown_swapped: bool,
    expected: Mapping[CriterionRef, int | None] | None = None, shown_as: str | None = None,
) -> tuple[PairPreferenceInfo, ...]:
    """Save a reviewer's preferences on criteria of one pair, in one transaction.

    ``preferences``: criterion (id, name, or None when holistic) -> side or (side, note),
    the side AS SHOWN to the reviewer (A = left, B = right, T / TIE, CANNOT_ASSESS);
    ``shown_swapped``: the sides the page showed (``pair_for_review(...).swapped``). Every
    criterion and side is checked before anything is written. ``expected``: per criterion,
    the id of the reviewer's current preference the form showed (None: none); if one
    changed since (another tab), StaleVerdictError and nothing is written.
    """
    require(actor, Role.REVIEWER, "review a comparison pair")
    require_shown(actor, shown_as)
    key, name = _who(actor)
    if not preferences:
        raise InvalidInputError("give a preference on at least one criterion of the pair")
    if shown_swapped != pair_sides.shown_swapped(key, pair_id):
        raise InvalidInputError(
            "these answers were given on sides that are not the ones shown to you for this "
            "pair; reload the pair and answer again (nothing was saved)")
    answers = {ref: (value, "") if isinstance(value, str) else value
               for ref, value in preferences.items()}
    limits.check([("the reviewer name", name, limits.NAME_MAX),
                  *(("the note", note or "", None) for _side, note in answers.values())])
    wanted = dict(expected or {})

    def work() -> tuple[PairPreferenceInfo, ...]:
        try:
            with sessions.begin() as session:
                _pair, comparison = load_pair(session, pair_id)
                criteria = comparison_criteria(session, comparison)
                parsed = []
                for ref, (value, note) in answers.items():
                    c = _position(criteria, ref)
                    if any(done.position == c.position for done, *_rest in parsed):
                        raise InvalidInputError(
                            f"criterion {c.criterion.name!r} is given twice (as "
                            f"{ref!r} and by another name); give each criterion once")
                    where = f"criterion {c.criterion.name!r}"
                    side = pair_sides.to_comparison(
                        pair_sides.parse_side(value, where=where), shown_swapped)
                    parsed.append((c, side, (note or "").strip(), wanted.get(ref, UNCHECKED)))
                saved = []
                for c, side, note, expected_id in parsed:
                    current = repo.latest(session, pair_id, c.position, key)
                    if expected_id is not UNCHECKED and (
                            current.id if current else None) != expected_id:
                        raise _stale(current)
                    row = repo.append(
                        session, pair_id=pair_id, position=c.position,
                        criterion_id=c.criterion_id, stream=key, side=side,
                        swapped=shown_swapped, reviewer_key=key, reviewer=name, note=note,
                        previous=current)
                    saved.append(pair_consensus.info(row))
                return tuple(saved)
        except IntegrityError as exc:
            if not is_unique_violation(exc):
                raise
            raise Collision from None

    return retry_until_saved(work)


def adjudicate_pair(
    sessions: SessionFactory, *, actor: Actor, pair_id: int, criterion: CriterionRef,
    side: str, note: str = "", expected_current_id: Any = UNCHECKED,
    expected_reviews: Mapping[str, int] | None = None,
) -> PairPreferenceInfo:
    """An adjudicator's preference (in the comparison's own terms: A, B, TIE or
    CANNOT_ASSESS): it decides the criterion whatever the reviewers said.

    What the adjudicator saw, checked in the same transaction (StaleVerdictError and nothing
    written when it changed — another tab, another adjudicator, a reviewer meanwhile):
    ``expected_current_id``, the current adjudication's id (None: none); ``expected_reviews``,
    each reviewer's current preference id on the criterion (reviewer key -> id)."""
    require(actor, Role.ADJUDICATOR, "adjudicate a comparison pair")
    key, name = _who(actor)
    limits.check([("the adjudicator's name", name, limits.NAME_MAX), ("the note", note, None)])

    def work() -> PairPreferenceInfo:
        try:
            with sessions.begin() as session:
                _pair, comparison = load_pair(session, pair_id)
                c = _position(comparison_criteria(session, comparison), criterion)
                chosen = pair_sides.parse_side(side, where=f"criterion {c.criterion.name!r}")
                current = repo.latest(session, pair_id, c.position, ADJUDICATION)
                if expected_current_id is not UNCHECKED and (
                        current.id if current else None) != expected_current_id:
                    raise _stale(current)
                if expected_reviews is not None:
                    _check_reviews(session, pair_id, c, expected_reviews)
                return pair_consensus.info(repo.append(
                    session, pair_id=pair_id, position=c.position, criterion_id=c.criterion_id,
                    stream=ADJUDICATION, side=chosen, swapped=False, reviewer_key=key,
                    reviewer=name, note=(note or "").strip(), previous=current))
        except IntegrityError as exc:
            if not is_unique_violation(exc):
                raise
            raise Collision from None

    return retry_until_saved(work)


def _check_reviews(session: Session, pair_id: int, c: PairCriterion,
                   seen: Mapping[str, int]) -> None:
    """The reviewers' current preferences on the criterion are the ones the adjudicator
    saw; otherwise StaleVerdictError naming who answered meanwhile."""
    reviews, _adjudications = pair_consensus.current(session, [pair_id])
    now = {p.reviewer_key: p for p in reviews.get(pair_id, {}).get(c.position, ())}
    changed = sorted((p for key, p in now.items() if seen.get(key) != p.id),
                     key=lambda p: p.id)
    if changed or set(seen) - set(now):
        who = changed[-1] if changed else None
        where = c.criterion.name or "the pair"
        what = (f"{who.reviewer} answered {who.side} on {where} at "
                f"{who.created_at:%Y-%m-%d %H:%M} UTC" if who
                else f"a reviewer's answer on {where} changed")
        raise StaleVerdictError(
            f"{what} while you were deciding; reload to see the reviewers' answers as they "
            "are now and decide again", current_id=None)


def answered_all(sight: Sight, reviews: Mapping[int, Sequence[PairPreferenceInfo]],
                 positions: Sequence[int]) -> bool:
    """Has the viewer answered every criterion of the pair themselves?"""
    return sight.viewer is not None and all(
        any(p.reviewer_key == sight.viewer for p in reviews.get(n, ())) for n in positions)


def may_see_pair(sight: Sight, reviews: Mapping[int, Sequence[PairPreferenceInfo]],
                 positions: Sequence[int]) -> bool:
    """May the viewer see the judge's and other people's preferences on this pair (and
    which source is which)? Adjudicators and admins always; a reviewer once they answered
    every criterion of it."""
    return sight.sees_all or answered_all(sight, reviews, positions)


def pair_for_review(sessions: SessionFactory, *, actor: Actor, pair_id: int,
                    blind: bool = True) -> PairForReview:
    """The pair as ``actor`` is shown it (sides randomised for them), with what they may
    see of the judge and other people. ``blind`` (the review form): whatever their role,
    the reviewer sees nothing of others until they answered the whole pair (as
    ``blindness.as_reviewer``); without it, an adjudicator or admin sees everything."""
    require(actor, Role.REVIEWER, "review a comparison pair")
    key = actor.key.strip()
    swapped = pair_sides.shown_swapped(key, pair_id)
    sight = as_reviewer(key) if blind else sight_of(actor)
    with sessions() as session:
        pair, comparison = load_pair(session, pair_id)
        criteria = comparison_criteria(session, comparison)
        a, b = session.get(m.ResponseRow, pair.response_a_id), session.get(
            m.ResponseRow, pair.response_b_id)
        reviews, _adjudications = pair_consensus.current(session, [pair_id])
        mine_rows = {n: p for n, per in reviews.get(pair_id, {}).items() for p in per
                     if p.reviewer_key == key}
        positions = [c.position for c in criteria]
        revealed = None
        if may_see_pair(sight, reviews.get(pair_id, {}), positions):
            judge = {row.position: row.preference for row in session.scalars(
                select(m.ComparisonPreferenceRow)
                .where(m.ComparisonPreferenceRow.pair_id == pair_id))}
            found = pair_consensus.decisions(session, [pair_id]).get(pair_id, {})
            revealed = PairReveal(comparison.a_label, comparison.b_label, judge, found)
        left, right = (b, a) if swapped else (a, b)
        return PairForReview(
            pair_id=pair_id, comparison_id=comparison.id, query=a.query or "", left=left.output,
            right=right.output, swapped=swapped, criteria=tuple(criteria),
            mine={n: pair_sides.to_shown(p.side, swapped) for n, p in mine_rows.items()},
            mine_ids={n: p.id for n, p in mine_rows.items()},
            answered=answered_all(sight, reviews.get(pair_id, {}), positions),
            revealed=revealed)


def reviewable_pairs(sessions: SessionFactory, comparison_id: int) -> list[int]:
    """The ids of the comparison's matched pairs (those people may review), in order."""
    with sessions() as session:
        return repo.judged_pair_ids(session, comparison_id)


def review_stamp(sessions: SessionFactory, comparison_id: int) -> tuple[int, int]:
    """(count, newest id) of the people's preferences on the comparison: changes with every
    save, so readers cached on it are read again after one."""
    with sessions() as session:
        count, newest = session.execute(
            select(func.count(m.PairReviewRow.id), func.max(m.PairReviewRow.id))
            .join(m.ComparisonPairRow, m.ComparisonPairRow.id == m.PairReviewRow.pair_id)
            .where(m.ComparisonPairRow.comparison_id == comparison_id)).one()
    return count, newest or 0


def pair_history(sessions: SessionFactory, *, actor: Actor, pair_id: int
                 ) -> list[PairPreferenceInfo]:
    """Every preference given on the pair in saving order (adjudicators and admins: all;
    a reviewer: their own, and everyone's once they answered the whole pair)."""
    require(actor, Role.REVIEWER, "read a pair's review history")
    sight = sight_of(actor)
    with sessions() as session:
        _pair, comparison = load_pair(session, pair_id)
        positions = [c.position for c in comparison_criteria(session, comparison)]
        reviews, _adj = pair_consensus.current(session, [pair_id])
        every = [pair_consensus.info(r) for r in repo.history(session, pair_id)]
    if may_see_pair(sight, reviews.get(pair_id, {}), positions):
        return every
    return [p for p in every if p.reviewer_key == sight.viewer and not p.adjudication]
