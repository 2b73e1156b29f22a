"""What an adjudicator saw, checked again inside the adjudication's transaction: each
reviewer's current verdict on the disputed criterion. A reviewer who changed their answer (or
a reviewer who answered for the first time) after the card was shown makes the decision stale:
nothing is written and the adjudicator is told who answered what, and when."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from storage.errors import NotFoundError, StaleVerdictError
from storage.repositories import rubrics as rubric_repo
from storage.services import consensus


def shown_reviews(reviews) -> dict[str, int]:
    """reviewer key -> id of that reviewer's current verdict, as a card shows them."""
    return {h.reviewer_key: h.id for h in reviews}


def check_reviews(session: Session, response_id: int, criterion_id: int,
                  seen: Mapping[str, int]) -> None:
    """StaleVerdictError when the reviewers' current verdicts on (response, criterion) are
    not the ``seen`` ones (reviewer key -> verdict id); carried verdicts count as the
    consensus rule counts them."""
    found = rubric_repo.criterion_with_frozen(session, criterion_id)
    if found is None:
        raise NotFoundError(f"criterion {criterion_id} does not exist")
    criterion, _frozen = found
    decision = consensus.decisions_of(
        session, [(response_id, criterion_id)], criterion.version_id,
    ).get(response_id, {}).get(criterion_id)
    now = {h.reviewer_key: h for h in (decision.reviews if decision else ())}
    changed = sorted((h for key, h in now.items() if seen.get(key) != h.id),
                     key=lambda h: h.id)
    gone = set(seen) - set(now)
    if not changed and not gone:
        return
    if changed:
        who = changed[-1]
        what = (f"{who.reviewer} answered {who.option or who.verdict.value} at "
                f"{who.created_at:%Y-%m-%d %H:%M} UTC")
    else:
        what = "a reviewer's answer was withdrawn"
    raise StaleVerdictError(
        f"Not saved: {what} while you were deciding; reload to see every reviewer's "
        "current answer and decide again. Nothing was written.",
        current_id=decision.adjudication.id if decision and decision.adjudication else None,
    )
