"""Blind review: the one rule for who may see which reviewer's verdicts on which response.

Reviewers judge blind to each other: a reviewer sees other people's verdicts and notes on a
criterion of a response (each reviewer's, the adjudication, the decision they make) only once
they have answered that criterion themselves. Adjudicators and admins see everything (they
settle disputes); so do the command-line tools, which act for whoever holds the database.

Every reader that shows people's verdicts — the Results dialog and its history, the Review
page, the gold set, the verdict sheet, the results export, the command line — asks
:func:`sight_of` (or :func:`as_reviewer`) who is looking and filters through
:func:`visible_decisions` / :func:`may_see`. Nothing else decides it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from storage.dto import HumanDecision, HumanVerdictInfo
from storage.services.reviewers import Actor, Role


@dataclass(frozen=True)
class Sight:
    """Whose eyes a reader reads with: a reviewer's key, or everything."""

    viewer: str | None
    sees_all: bool = False


# Readers for people allowed to see every verdict (adjudicators, admins, the command line).
EVERYTHING = Sight(viewer=None, sees_all=True)
# Nobody identified: no person's verdict is shown.
NOBODY = Sight(viewer=None, sees_all=False)


def sight_of(actor: Actor | None) -> Sight:
    """What ``actor`` may see: an adjudicator or admin everything, a reviewer only what they
    answered themselves, nobody (no identity) nothing."""
    if actor is None or not actor.key:
        return NOBODY
    return Sight(viewer=actor.key, sees_all=actor.can(Role.ADJUDICATOR))


def as_reviewer(key: str) -> Sight:
    """The view of one reviewer, whatever their role (the Review form; a sheet to fill)."""
    return Sight(viewer=key.strip() or None, sees_all=False)


def may_see(sight: Sight, reviews: Iterable[HumanVerdictInfo]) -> bool:
    """May the viewer see people's verdicts on one criterion of one response, given each
    reviewer's current verdict on it?"""
    if sight.sees_all:
        return True
    return sight.viewer is not None and any(
        h.reviewer_key == sight.viewer and not h.adjudication for h in reviews)


def visible_decisions(
    sight: Sight, decisions: Mapping[int, Mapping[int, HumanDecision]],
) -> dict[int, dict[int, HumanDecision]]:
    """``decisions`` (response -> criterion -> decision) without those the viewer may not
    see yet; a hidden criterion reads as not reviewed."""
    if sight.sees_all:
        return {rid: dict(per) for rid, per in decisions.items()}
    return {rid: {cid: d for cid, d in per.items() if may_see(sight, d.reviews)}
            for rid, per in decisions.items()}


def hidden_criteria(sight: Sight, decisions: Mapping[int, HumanDecision]) -> frozenset[int]:
    """The criteria of one response whose verdicts the viewer may not see yet."""
    if sight.sees_all:
        return frozenset()
    return frozenset(cid for cid, d in decisions.items() if not may_see(sight, d.reviews))
