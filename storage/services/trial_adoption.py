"""Adopting a tried wording: a new rubric version with the criterion reworded, and people's
verdicts carried to it only when the person confirms they still apply."""

from __future__ import annotations

from typing import Any

from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.errors import InvalidStateError, NotFoundError
from storage.repositories import rubrics as rubric_repo
from storage.services import effective_upkeep
from storage.services.reviewers import Actor, Role, require


def adopt_wording(
    sessions: SessionFactory, trial_id: int, *, actor: Actor, carry_human_verdicts: bool,
    note: str = "",
) -> Any:
    """A new rubric version with the trial's wording. When the person confirms that people's
    verdicts still mean the same under the new wording, they are carried to it."""
    require(actor, Role.ADMIN, "adopt a criterion's new wording")
    from storage.services.save_retry import retry_until_saved

    # Two adoptions at once on SQLite (two tabs, two app processes): both read the same
    # newest version, the second to write collides on the version number (or finds its
    # snapshot stale: "locked"). Running it again reads the winner's version and refuses
    # in words; PostgreSQL already serialises them on the version row (FOR UPDATE).
    return retry_until_saved(lambda: _adopt(sessions, trial_id, actor=actor,
                                            carry_human_verdicts=carry_human_verdicts,
                                            note=note))


def _adopt(sessions: SessionFactory, trial_id: int, *, actor: Actor,
           carry_human_verdicts: bool, note: str) -> Any:
    from storage.convert import version_info
    from storage.repositories import verdicts as verdict_repo

    with sessions.begin() as session:
        trial = session.get(m.CriterionTrialRow, trial_id)
        if trial is None:
            raise NotFoundError(f"wording trial {trial_id} does not exist")
        old = session.get(m.CriterionRow, trial.criterion_id)
        version = rubric_repo.get_version(session, old.version_id, for_update=True)
        latest = rubric_repo.latest_version(session, version.rubric_id)
        if latest.id != version.id:
            raise InvalidStateError(
                f"the rubric has a newer version (v{latest.number}) than the one this trial "
                f"reworded (v{version.number}): try the wording again on the newest version")
        criteria = []
        for row in rubric_repo.criteria_of(session, version.id):
            info = criterion_info(row).to_criterion()
            if row.id == old.id:
                info = info.model_copy(update={"requirement": trial.requirement})
            criteria.append(info)
        new_version = rubric_repo.add_version(
            session, version.rubric, criteria,
            note or f"reworded '{criterion_info(old).label}' (trial {trial.id})", actor.key)
        session.flush()
        if carry_human_verdicts:
            rubric_repo.freeze(session, new_version.id)
            new_id = next(c.id for c in new_version.criteria if c.position == old.position)
            # Every reviewer's current verdict (and the adjudication) moves over, so the
            # human verdict under the new wording is decided as it was under the old one.
            # Each keeps the time the person answered (the note says when it was carried).
            for response_id, stream, verdict, option, key, name, answered in _current_streams(
                    session, old.id):
                verdict_repo.append(
                    session, response_id=response_id, rubric_version_id=new_version.id,
                    criterion_id=new_id, stream=stream, verdict=verdict, option=option,
                    reviewer_key=key, reviewer=name, answered_at=answered,
                    note=f"carried from v{version.number} after rewording (confirmed by "
                         f"{actor.label})", previous=None)
        effective_upkeep.refresh_versions(session, [new_version.id])
        trial.adopted_version_id = new_version.id
        return version_info(new_version)


def _current_streams(session, criterion_id: int
                     ) -> list[tuple[int, str, str, str | None, str, str, Any]]:
    """(response id, stream, verdict, option, reviewer key, name, answered at) of each
    reviewer's current verdict and the adjudication on this criterion (carried ones from
    earlier versions included)."""
    from storage.repositories import verdicts as verdict_repo
    from storage.services import consensus

    criterion = session.get(m.CriterionRow, criterion_id)
    ids = verdict_repo.response_ids_reviewed_on(session, criterion)
    reviews, adjudications, _numbers, _v = consensus.gather(session, ids, criterion.version_id)
    found = []
    for response_id in ids:
        for h in reviews.get(response_id, {}).get(criterion_id, []):
            found.append((response_id, h.reviewer_key, h.verdict.value, h.option,
                          h.reviewer_key, h.reviewer, h.created_at))
        adjudication = adjudications.get(response_id, {}).get(criterion_id)
        if adjudication is not None:
            found.append((response_id, m.ADJUDICATION_STREAM, adjudication.verdict.value,
                          adjudication.option, adjudication.reviewer_key,
                          adjudication.reviewer, adjudication.created_at))
    return found
