"""Judge panels, persisted: create, list, delete, and the panel's grades.

The voting rule is ``grading.panels``; the score is ``grading.aggregation.score_verdicts`` with
the panel's own scoring settings, both applied by ``storage.services.panel_decide``. The
decisions are stored when the members' grades land (``panel_upkeep``) and read from there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import select, update

from grading.panels import PANEL_RULES, check_weights
from grading.ties import UNDECIDED
from grading.types import ScoringSettings
from storage import models as m
from storage.convert import criterion_info, run_info
from storage.dto import RunInfo
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, InvalidStateError, NotFoundError
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.services import panel_reads, panel_recompute, panel_ties, panel_upkeep
from storage.services.panel_decide import PanelCriterion, PanelGrade
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require

__all__ = ["PanelCriterion", "PanelGrade"]  # re-exported: storage.services.panel_decide

# Krippendorff's own guidance: below 0.667 conclusions are not even tentative.
LOW_MEMBER_AGREEMENT = 0.667
HOLISTIC = "rubric_as_judge"
# A panel whose members hold at most this many grades is filled inside the request that
# makes it (well under a second); a bigger one by a worker (storage.jobs.panel_fills).
FILL_IN_REQUEST_GRADES = 2000
Fill = Literal["now", "later", "auto"]


class PanelBuildingError(InvalidStateError):
    """The panel's decisions are still being filled by a worker: no figure of it yet."""


@dataclass(frozen=True)
class Building:
    """A panel being filled by a worker: ``done`` of about ``total`` responses (None until
    a worker has counted them)."""

    done: int
    total: int | None

    @property
    def words(self) -> str:
        if self.total is None:
            return "waiting for a worker"
        return f"{min(self.done, self.total):,} of {self.total:,} responses combined"


@dataclass(frozen=True)
class PanelMember:
    run: RunInfo
    weight: float


@dataclass(frozen=True)
class PanelInfo:
    id: int
    name: str
    rubric_version_id: int
    dataset_id: int
    rule: str
    scoring: ScoringSettings
    members: tuple[PanelMember, ...]
    created_by: str
    created_at: datetime
    # how a MET/UNMET tie is decided (grading.ties): undecided, or the lower score for
    # panels created before that rule
    tie_rule: str = UNDECIDED
    # still being filled by a worker (storage.jobs.panel_fills): no figures until None
    building: Building | None = None

    @property
    def ready(self) -> bool:
        return self.building is None

    @property
    def label(self) -> str:
        return self.name or f"panel {self.id} ({self.rule} of {len(self.members)})"


def _scoring_of(runs: Sequence[m.RunRow]) -> ScoringSettings:
    from storage.run_settings import RunSettings

    return RunSettings.model_validate(runs[0].settings).scoring()


def create_panel(
    sessions: SessionFactory, *, run_ids: Sequence[int], rule: str, actor: Actor,
    weights: Sequence[float] | None = None, name: str = "",
    scoring: ScoringSettings | None = None, fill: Fill = "now",
) -> PanelInfo:
    """Combine existing runs into a panel, or return the panel that already combines them the
    same way (see :func:`ensure_panel`). Every problem is refused before anything is written."""
    return ensure_panel(sessions, run_ids=run_ids, rule=rule, actor=actor, weights=weights,
                        name=name, scoring=scoring, fill=fill)[0]


def ensure_panel(
    sessions: SessionFactory, *, run_ids: Sequence[int], rule: str, actor: Actor,
    weights: Sequence[float] | None = None, name: str = "",
    scoring: ScoringSettings | None = None, fill: Fill = "now",
) -> tuple[PanelInfo, bool]:
    """The panel of exactly these runs (in this order), rule, weights and scoring: the
    existing one when there is one (a double click, a second tab, a reload, the same command
    run again — also at the same moment), else a new one. Returns (panel, created).

    ``fill``: a new panel's decisions are filled from its members' grades in this
    transaction ("now": the command line, tests), by a worker ("later": the panel reads as
    ``building`` until then, storage.jobs.panel_fills), or "auto": now when the members
    hold at most ``FILL_IN_REQUEST_GRADES`` grades, else later (the app)."""
    return _create(sessions, run_ids=run_ids, rule=rule, actor=actor, weights=weights,
                   name=name, scoring=scoring, fill=fill)


def _create(
    sessions: SessionFactory, *, run_ids: Sequence[int], rule: str, actor: Actor,
    weights: Sequence[float] | None, name: str, scoring: ScoringSettings | None,
    fill: Fill,
) -> tuple[PanelInfo, bool]:
    require(actor, Role.ADMIN, "create a judge panel")
    if rule not in PANEL_RULES:
        raise InvalidInputError(f"unknown panel rule {rule!r}; use one of "
                                f"{', '.join(PANEL_RULES)}")
    ids = list(dict.fromkeys(run_ids))
    if len(ids) != len(list(run_ids)):
        raise InvalidInputError("a run can be a panel member only once")
    if len(ids) < 2:
        raise InvalidInputError("a panel needs at least two runs of the same rubric version "
                                "over the same dataset")
    if rule == "weighted":
        if weights is None:
            raise InvalidInputError("the weighted rule needs a weight for every member")
        try:
            member_weights = check_weights(list(weights), len(ids))
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None
    elif weights is not None and any(w != 1 for w in weights):
        raise InvalidInputError(f"weights are only for the weighted rule, not {rule}")
    else:
        member_weights = [1.0] * len(ids)
    name = name.strip()
    if len(name) > 200:
        raise InvalidInputError(f"panel name: at most 200 characters, got {len(name)}")
    with sessions.begin() as session:
        _hold_members(session, ids)
        runs = [run_repo.get_run(session, run_id) for run_id in ids]
        _check_members(runs)
        scoring = scoring or _scoring_of(runs)
        # Write first (as runs.launch_run does): SQLite's write lock or PostgreSQL's row lock
        # makes two concurrent creations check one after the other, so the second finds the
        # first's panel instead of making a copy.
        session.execute(update(m.RubricVersionRow)
                        .where(m.RubricVersionRow.id == runs[0].rubric_version_id)
                        .values(note=m.RubricVersionRow.note))
        same = _same_panel(session, runs[0].rubric_version_id, ids, rule, member_weights,
                           scoring)  # an older panel (another tie rule) is never the same
        if same is not None:
            return _info(session, same), False
        panel = m.PanelRow(
            name=name, rubric_version_id=runs[0].rubric_version_id,
            dataset_id=runs[0].dataset_id, rule=rule,
            scoring=panel_ties.stored(scoring), created_by=actor.key,
        )
        panel.members = [m.PanelMemberRow(run_id=run.id, position=i, weight=w)
                         for i, (run, w) in enumerate(zip(runs, member_weights, strict=True))]
        session.add(panel)
        session.flush()
        graded = sum(run.done_count + run.failed_count for run in runs)
        if fill == "now" or (fill == "auto" and graded <= FILL_IN_REQUEST_GRADES):
            panel_upkeep.fill(session, panel.id)
        else:  # a worker fills it (storage.jobs.panel_fills); grades landing meanwhile
            # recompute their responses here as soon as this commits (panel_upkeep.refresh)
            session.add(m.PanelFillRow(panel_id=panel.id, after_response_id=0, done=0))
            session.flush()
        return _info(session, panel), True


def _hold_members(session, run_ids: list[int]) -> None:
    """Hold the member runs until the panel is written, and name any that are gone.

    A form picked its runs a while ago; another tab may have deleted some since (with their
    dataset or rubric), even while this panel is being made. A no-op write takes SQLite's
    write lock and PostgreSQL's row locks first, so a deletion either finished before (the
    runs are missing here, and named) or waits until the panel is written (and then deletes
    it with them) - never a foreign-key error half way.
    """
    held = session.execute(update(m.RunRow).where(m.RunRow.id.in_(run_ids))
                           .values(status=m.RunRow.status)
                           .returning(m.RunRow.id)).scalars().all()
    missing = [run_id for run_id in run_ids if run_id not in set(held)]
    if missing:
        listed = ", ".join(f"#{run_id}" for run_id in missing)
        raise NotFoundError(
            f"run{'s' if len(missing) > 1 else ''} {listed} no longer exist"
            f"{'' if len(missing) > 1 else 's'} (deleted since the runs were picked, with "
            "their dataset or rubric); nothing was made: pick the member runs again")


def _same_panel(session, version_id: int, run_ids: list[int], rule: str,
                weights: list[float], scoring: ScoringSettings) -> m.PanelRow | None:
    for panel in session.scalars(select(m.PanelRow).where(
            m.PanelRow.rubric_version_id == version_id, m.PanelRow.rule == rule)):
        members = [(member.run_id, member.weight) for member in panel.members]
        if (members == list(zip(run_ids, weights, strict=True))
                and panel_ties.read(panel.scoring) == (scoring, UNDECIDED)):
            return panel
    return None


def _check_members(runs: Sequence[m.RunRow]) -> None:
    holistic = [r for r in runs if r.grader == HOLISTIC]
    if holistic:
        raise InvalidInputError(
            f"run {holistic[0].id} ({holistic[0].model}) is holistic: it gives one 0-100 score, "
            "not a verdict per criterion, so it cannot vote in a panel")
    first = runs[0]
    for run in runs[1:]:
        if run.rubric_version_id != first.rubric_version_id:
            raise InvalidInputError(
                f"run {run.id} graded another rubric version than run {first.id}: a panel "
                "combines runs of one rubric version (grade the same version, or pick other "
                "runs)")
        if run.dataset_id != first.dataset_id:
            raise InvalidInputError(
                f"run {run.id} graded another dataset than run {first.id}: a panel combines "
                "runs over the same dataset")


def _info(session, panel: m.PanelRow) -> PanelInfo:
    filling = session.get(m.PanelFillRow, panel.id, populate_existing=True)
    return PanelInfo(
        id=panel.id, name=panel.name, rubric_version_id=panel.rubric_version_id,
        dataset_id=panel.dataset_id, rule=panel.rule,
        scoring=panel_ties.read(panel.scoring)[0], tie_rule=panel_ties.read(panel.scoring)[1],
        members=tuple(PanelMember(run_info(run_repo.get_run(session, member.run_id)),
                                  member.weight) for member in panel.members),
        created_by=panel.created_by, created_at=panel.created_at,
        building=None if filling is None else Building(filling.done, filling.total),
    )


def _get(session, panel_id: int) -> m.PanelRow:
    panel = session.get(m.PanelRow, panel_id)
    if panel is None:
        raise NotFoundError(f"judge panel {panel_id} does not exist")
    return panel


def require_ready(session, panel_id: int) -> None:
    """Refuse a panel a worker is still filling: its stored rows are partial."""
    filling = session.get(m.PanelFillRow, panel_id)
    if filling is not None:
        building = Building(filling.done, filling.total)
        raise PanelBuildingError(
            f"judge panel P{panel_id} is still being built ({building.words}): its figures "
            "appear once it is ready; the pages show its progress")


def building_ids(session, panel_ids: Sequence[int] | None = None) -> list[int]:
    """Which of these panels (default: all) a worker is still filling."""
    query = select(m.PanelFillRow.panel_id).order_by(m.PanelFillRow.panel_id)
    if panel_ids is not None:
        query = query.where(m.PanelFillRow.panel_id.in_(list(panel_ids)))
    return list(session.scalars(query))


def get_panel(sessions: SessionFactory, panel_id: int) -> PanelInfo:
    with sessions() as session:
        return _info(session, _get(session, panel_id))


def list_panels(
    sessions: SessionFactory, *, dataset_id: int | None = None,
    rubric_version_id: int | None = None,
) -> list[PanelInfo]:
    with sessions() as session:
        query = select(m.PanelRow).order_by(m.PanelRow.id)
        if dataset_id is not None:
            query = query.where(m.PanelRow.dataset_id == dataset_id)
        if rubric_version_id is not None:
            query = query.where(m.PanelRow.rubric_version_id == rubric_version_id)
        return [_info(session, panel) for panel in session.scalars(query)]


def delete_panel(sessions: SessionFactory, panel_id: int, *, actor: Actor) -> None:
    """Remove a panel; its member runs and their grades stay."""
    require(actor, Role.ADMIN, "delete a judge panel")
    with sessions.begin() as session:
        panel = _get(session, panel_id)
        members = ", ".join(str(member.run_id) for member in panel.members)
        record(session, actor, "delete", "judge panel", panel.id,
               panel.name or f"panel {panel.id}",
               f"{panel.rule} of runs {members}; the runs and their grades are kept")
        session.delete(panel)


def panel_grades(
    sessions: SessionFactory, panel_id: int, response_ids: Sequence[int] | None = None,
) -> list[PanelGrade]:
    """The panel's grade of every response (or of ``response_ids``) some member graded:
    the stored decisions (``panel_verdicts``), and for a response a member still grading has
    not graded yet, the decision recomputed with that member pending."""
    with sessions() as session:
        panel = _get(session, panel_id)
        require_ready(session, panel_id)
        criteria = [criterion_info(c) for c in
                    rubric_repo.criteria_of(session, panel.rubric_version_id)]
        stored = panel_reads.stored_grades(session, panel.id, criteria, response_ids)
        # Stored under another tie rule than the panel's (its settings were changed since,
        # without the rebuild): read as the panel decides now.
        redo = set(panel_reads.other_tie_rule(session, panel.id,
                                              panel_ties.read(panel.scoring)[1], response_ids))
        members = [member.run_id for member in panel.members]
        grading = panel_recompute.still_grading(session, members)
        if grading:
            redo.update(panel_reads.waiting_for(session, panel.id, sorted(grading),
                                                response_ids))
        if not redo:
            return stored
        redone = {g.response_id: g for g in
                  panel_recompute.recompute(session, panel, criteria, sorted(redo))}
        return [redone.get(g.response_id, g) for g in stored]


def iter_graded_ids(sessions: SessionFactory, panel_id: int, page: int = 500
                    ) -> Iterator[list[int]]:
    """The ids of the responses the panel has a grade of (``panel_grades`` reads them all),
    in order, a page at a time. Refused while the panel is being built."""
    with sessions() as session:
        _get(session, panel_id)
        require_ready(session, panel_id)
    after = 0
    while True:
        with sessions() as session:
            ids = list(session.scalars(
                select(m.PanelGradeRow.response_id)
                .where(m.PanelGradeRow.panel_id == panel_id,
                       m.PanelGradeRow.response_id > after)
                .order_by(m.PanelGradeRow.response_id).limit(page)))
        if not ids:
            return
        yield ids
        after = ids[-1]


def unsettled(session, panel_id: int) -> list[int]:
    """The panel's responses whose stored decision is not the one read: a member still
    grading has not graded them yet, or they were stored under another tie rule."""
    panel = _get(session, panel_id)
    require_ready(session, panel_id)
    found = set(panel_reads.other_tie_rule(session, panel.id,
                                           panel_ties.read(panel.scoring)[1]))
    grading = panel_recompute.still_grading(session, [member.run_id for member in panel.members])
    if grading:
        found.update(panel_reads.waiting_for(session, panel.id, sorted(grading)))
    return sorted(found)


def recomputed_grades(
    sessions: SessionFactory, panel_id: int, response_ids: Sequence[int] | None = None,
) -> list[PanelGrade]:
    """``panel_grades`` recomputed from the members' grades, as every read did before the
    decisions were stored (tests and the benchmark compare the two)."""
    with sessions() as session:
        panel = _get(session, panel_id)
        criteria = [criterion_info(c) for c in
                    rubric_repo.criteria_of(session, panel.rubric_version_id)]
        return panel_recompute.recompute(session, panel, criteria, response_ids)


def member_agreement(sessions: SessionFactory, panel_id: int) -> list:
    """Per criterion, how far the members agree (storage.services.panel_agreement)."""
    from storage.services.panel_agreement import member_agreement as agreement

    return agreement(sessions, panel_id)
