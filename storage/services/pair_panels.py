"""Panels of pairwise judges, persisted: make, list and delete them. A panel is two or more
finished comparisons of the same two sources on one rubric version, each by its own judge;
its results are read from the members' stored preferences (storage.services.pair_panel_results)
by the rule of ``grading.pairwise.panel``. Nothing here votes or scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update

from storage import limits
from storage import models as m
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, NotFoundError
from storage.repositories import comparisons as comparison_repo
from storage.services import comparisons
from storage.services.comparisons import ComparisonInfo
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require

RULE = "majority"  # grading.pairwise.panel's one rule


@dataclass(frozen=True)
class PairPanelInfo:
    id: int
    name: str
    rubric_version_id: int
    rule: str
    members: tuple[ComparisonInfo, ...]
    created_by: str
    created_at: datetime

    @property
    def a_label(self) -> str:
        return self.members[0].a_label

    @property
    def b_label(self) -> str:
        return self.members[0].b_label

    @property
    def holistic(self) -> bool:
        return self.members[0].holistic

    @property
    def label(self) -> str:
        """``Panel P2 trio · majority of #3 gpt-4.1-mini, #4 claude-haiku``."""
        name = f" {self.name}" if self.name else ""
        return (f"Panel P{self.id}{name} · {self.rule} of "
                + ", ".join(f"#{c.id} {c.model}" for c in self.members))

    @property
    def finished(self) -> bool:
        """No member is judging (again): the panel's figures will not move by themselves."""
        return all(c.finished for c in self.members)


def _judge(c: m.ComparisonRow) -> tuple[str, str | None]:
    return c.model, (c.settings or {}).get("api_base")


def _sources(c: m.ComparisonRow) -> tuple:
    return (c.a_dataset_id, c.b_dataset_id, c.split_column, c.a_value, c.b_value)


def _check_members(rows: Sequence[m.ComparisonRow]) -> None:
    """Every reason the comparisons cannot make one panel, the first one found, in words."""
    for c in rows:
        if c.status in comparisons.ACTIVE:
            raise InvalidInputError(
                f"comparison #{c.id} ({c.model}) is still {c.status}: a panel combines "
                "finished comparisons; wait until it is done (or cancel it), then make the "
                "panel")
        if not c.done_count:
            raise InvalidInputError(
                f"comparison #{c.id} ({c.model}) has no judged pair ({c.status}): it has no "
                "preference to vote with; resume it or pick another comparison")
    first = rows[0]
    for c in rows[1:]:
        if c.rubric_version_id != first.rubric_version_id:
            raise InvalidInputError(
                f"comparison #{c.id} used another rubric version than comparison #{first.id}: "
                "a panel combines comparisons on one rubric version (compare the same version, "
                "or pick other comparisons)")
        if _sources(c) != _sources(first):
            swapped = (c.a_dataset_id, c.b_dataset_id, c.a_value, c.b_value) == (
                first.b_dataset_id, first.a_dataset_id, first.b_value, first.a_value)
            raise InvalidInputError(
                f"comparison #{c.id} compares {c.b_label} (B) with {c.a_label} (A), "
                f"comparison #{first.id} {first.b_label} (B) with {first.a_label} (A): a "
                "panel combines comparisons of the same two sources"
                + (", each as the same side (start the comparison with A and B the other "
                   "way round)" if swapped else ""))
        if c.holistic != first.holistic:
            asked = {True: "one holistic question", False: "per criterion"}
            raise InvalidInputError(
                f"comparison #{c.id} asked {asked[c.holistic]}, comparison #{first.id} "
                f"{asked[first.holistic]}: a panel's judges must be asked the same way")
        if c.match_by != first.match_by:
            raise InvalidInputError(
                f"comparison #{c.id} paired the responses by {c.match_by}, comparison "
                f"#{first.id} by {first.match_by}: a panel's judges must compare the same pairs")
    seen: dict[tuple[str, str | None], int] = {}
    for c in rows:
        if _judge(c) in seen:
            raise InvalidInputError(
                f"comparisons #{seen[_judge(c)]} and #{c.id} were both judged by {c.model}: "
                "the same judge twice counts its answers twice (they come from the same "
                "cache); pick comparisons by different judges")
        seen[_judge(c)] = c.id


def _hold(session, ids: list[int]) -> list[m.ComparisonRow]:
    """The member comparisons, held (a no-op write: SQLite's write lock, PostgreSQL's row
    locks) until the panel is written, so a deletion in another tab happens wholly before
    (they are named as gone) or after (the panel goes with them); never half way."""
    held = set(session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id.in_(ids))
                               .values(status=m.ComparisonRow.status)
                               .returning(m.ComparisonRow.id)).scalars())
    missing = [i for i in ids if i not in held]
    if missing:
        listed = ", ".join(f"#{i}" for i in missing)
        raise NotFoundError(
            f"comparison{'s' if len(missing) > 1 else ''} {listed} no longer exist"
            f"{'' if len(missing) > 1 else 's'} (deleted since they were picked, with their "
            "dataset or rubric); nothing was made: pick the members again")
    return [comparison_repo.get(session, i) for i in ids]


def panel_info(session, panel: m.PairPanelRow) -> PairPanelInfo:
    return PairPanelInfo(
        id=panel.id, name=panel.name, rubric_version_id=panel.rubric_version_id,
        rule=panel.rule,
        members=tuple(comparisons.comparison_info(session, comparison_repo.get(
            session, member.comparison_id)) for member in panel.members),
        created_by=panel.created_by, created_at=panel.created_at)


def create_pair_panel(sessions: SessionFactory, *, comparison_ids: Sequence[int], actor: Actor,
                      name: str = "") -> PairPanelInfo:
    """Make a panel of these comparisons, or return the panel of exactly these members (a
    double click, a second tab, a reload). Every problem is refused before anything is
    written."""
    return ensure_pair_panel(sessions, comparison_ids=comparison_ids, actor=actor,
                             name=name)[0]


def ensure_pair_panel(sessions: SessionFactory, *, comparison_ids: Sequence[int],
                      actor: Actor, name: str = "") -> tuple[PairPanelInfo, bool]:
    """(the panel, whether it was made now): see :func:`create_pair_panel`."""
    require(actor, Role.ADMIN, "make a panel of pairwise judges")
    ids = list(dict.fromkeys(comparison_ids))
    if len(ids) != len(list(comparison_ids)):
        raise InvalidInputError("a comparison can be a panel member only once")
    if len(ids) < 2:
        raise InvalidInputError(
            "a panel needs at least two finished comparisons of the same two sources on the "
            "same rubric version, each by another judge")
    name = name.strip()
    limits.check([("the panel name", name, limits.NAME_MAX)])
    with sessions.begin() as session:
        rows = _hold(session, ids)
        _check_members(rows)
        same = _same_panel(session, rows[0].rubric_version_id, ids)
        if same is not None:
            return panel_info(session, same), False
        panel = m.PairPanelRow(name=name, rubric_version_id=rows[0].rubric_version_id,
                               rule=RULE, created_by=actor.key, created_at=m.utcnow())
        panel.members = [m.PairPanelMemberRow(comparison_id=c.id, position=n)
                         for n, c in enumerate(rows)]
        session.add(panel)
        session.flush()
        record(session, actor, "create pair panel", "pair panel", panel.id,
               name or f"panel P{panel.id}",
               f"{RULE} of comparisons " + ", ".join(f"#{c.id} ({c.model})" for c in rows))
        return panel_info(session, panel), True


def _same_panel(session, version_id: int, ids: list[int]) -> m.PairPanelRow | None:
    """The panel of exactly these members, whatever their order (a majority ignores it)."""
    for panel in session.scalars(select(m.PairPanelRow)
                                 .where(m.PairPanelRow.rubric_version_id == version_id)
                                 .order_by(m.PairPanelRow.id)):
        if sorted(member.comparison_id for member in panel.members) == sorted(ids):
            return panel
    return None


def load_panel(session, panel_id: int) -> m.PairPanelRow:
    panel = session.get(m.PairPanelRow, panel_id)
    if panel is None:
        raise NotFoundError(f"panel P{panel_id} of pairwise judges does not exist (deleted, "
                            "with it or one of its comparisons); pick another")
    return panel


def get_pair_panel(sessions: SessionFactory, panel_id: int) -> PairPanelInfo:
    with sessions() as session:
        return panel_info(session, load_panel(session, panel_id))


def list_pair_panels(sessions: SessionFactory, *,
                     rubric_version_id: int | None = None) -> list[PairPanelInfo]:
    """Newest first, as comparisons are listed."""
    with sessions() as session:
        query = select(m.PairPanelRow).order_by(m.PairPanelRow.id.desc())
        if rubric_version_id is not None:
            query = query.where(m.PairPanelRow.rubric_version_id == rubric_version_id)
        return [panel_info(session, panel) for panel in session.scalars(query)]


def delete_pair_panel(sessions: SessionFactory, panel_id: int, *, actor: Actor) -> None:
    """Remove a panel; its comparisons, their preferences and people's reviews stay."""
    require(actor, Role.ADMIN, "delete a panel of pairwise judges")
    with sessions.begin() as session:
        panel = load_panel(session, panel_id)
        members = ", ".join(f"#{member.comparison_id}" for member in panel.members)
        record(session, actor, "delete", "pair panel", panel.id,
               panel.name or f"panel P{panel.id}",
               f"{panel.rule} of comparisons {members}; the comparisons are kept")
        session.delete(panel)
