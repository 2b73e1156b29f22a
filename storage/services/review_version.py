"""A save made from a page that showed an older rubric version than the newest one (e.g. a
wording trial was adopted while the reviewer was grading).

The verdicts are recorded against the version the page showed: that is the wording the
reviewer read, so it is the honest record; they are never moved to the newer version. The
save then says the rubric has moved on, and which of the verdicts also count under the newer
version (a criterion whose requirement text is unchanged carries forward) and which do not
(a reworded criterion has to be judged again on the new wording).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy.orm import Session

from storage import models as m
from storage.convert import criterion_info
from storage.errors import InvalidInputError, NotFoundError
from storage.repositories import rubrics as rubric_repo
from storage.repositories import verdicts as verdict_repo


@dataclass(frozen=True)
class NewerVersion:
    """The rubric has a newer version than the one the save was made on."""

    saved_version_id: int
    saved_number: int
    newer_version_id: int
    newer_number: int
    newer_note: str
    carried: tuple[str, ...]  # labels of saved criteria whose verdict also counts in newer
    not_carried: tuple[str, ...]  # labels of saved criteria reworded (or gone) in newer

    @property
    def message(self) -> str:
        why = f" ({self.newer_note})" if self.newer_note else ""
        text = (f"Saved on v{self.saved_number}, the version this page shows — but the rubric "
                f"now has a newer version, v{self.newer_number}{why}.")
        if self.not_carried:
            text += (f" Your verdict on {_names(self.not_carried)} counts for "
                     f"v{self.saved_number} only: the criterion changed in "
                     f"v{self.newer_number}; switch to v{self.newer_number} to judge the "
                     "new wording.")
        if self.carried:
            text += (f" Your verdict on {_names(self.carried)} also counts under "
                     f"v{self.newer_number} (same requirement).")
        return text


def _names(labels: tuple[str, ...]) -> str:
    quoted = [f"“{label}”" for label in labels]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def check_shown_version(session: Session, shown_version_id: int,
                        criterion_ids: Collection[int]) -> None:
    """Refuse criteria that are not of the version the page showed (never saved elsewhere)."""
    found = {c.id for c in rubric_repo.criteria_of(session, shown_version_id)}
    if not found:
        raise NotFoundError(f"rubric version {shown_version_id} does not exist")
    stray = sorted(set(criterion_ids) - found)
    if stray:
        raise InvalidInputError(
            f"criteria {', '.join(map(str, stray))} are not in the rubric version this page "
            "shows; nothing was saved — reload the page")


def newer_version(session: Session, shown_version_id: int,
                  criterion_ids: Collection[int]) -> NewerVersion | None:
    """None when the version the page showed is still the newest of its rubric."""
    shown = session.get(m.RubricVersionRow, shown_version_id)
    if shown is None:
        return None
    latest = rubric_repo.latest_version(session, shown.rubric_id)
    if latest.number <= shown.number:
        return None
    carries = verdict_repo.carry_sources(session, latest.id)
    labels = {c.id: criterion_info(c).label for c in rubric_repo.criteria_of(session, shown.id)}
    ordered = [cid for cid in labels if cid in set(criterion_ids)]
    return NewerVersion(
        saved_version_id=shown.id, saved_number=shown.number, newer_version_id=latest.id,
        newer_number=latest.number, newer_note=latest.note or "",
        carried=tuple(labels[c] for c in ordered if c in carries),
        not_carried=tuple(labels[c] for c in ordered if c not in carries))
