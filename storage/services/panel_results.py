"""A panel read like a run: its grades with people's verdicts in place, per response.

The panel's verdicts (storage.services.panels, grading.panels' rule) become a grade whose
criteria carry the panel's verdict and the sentence saying how it was reached; the human
verdicts then replace them exactly as they replace a run's (storage.effective, which scores
through grading.aggregation with the panel's own scoring settings). So the Results page, the
Review page, the Agreement page and the exports read a panel the way they read a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Select, select

from grading.types import Verdict
from storage import models as m
from storage.convert import criterion_info
from storage.dto import Choice, EffectiveGrade, GradeInfo
from storage.effective import compute_effective_grade
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.plain_rows import plain_rows
from storage.repositories import results as results_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories.datasets import response_texts
from storage.services import (
    blindness,
    effective_reads,
    panel_reads,
    panel_scores,
    panels,
    results,
)
from storage.services.blindness import Sight


@dataclass(frozen=True)
class PanelResult:
    """One response under a panel: how the panel decided, and its effective grade."""

    panel: panels.PanelInfo
    grade: panels.PanelGrade  # the panel's own verdicts, ties and members' verdicts
    effective: EffectiveGrade  # people's verdicts in place of the panel's

    @property
    def response_id(self) -> int:
        return self.grade.response_id

    @property
    def ties(self) -> int:
        return sum(1 for row in self.grade.criteria if row.decision.tie)


def panel_grade_info(panel: panels.PanelInfo, grade: panels.PanelGrade) -> GradeInfo:
    """The panel's grade in the shape of a judge's grade (``panel_scores.grade_info``)."""
    return panel_scores.grade_info(grade, panel.created_at)


def panel_results(
    sessions: SessionFactory, panel_id: int, response_ids: Sequence[int] | None = None,
    *, sight: Sight = blindness.EVERYTHING, scores_only: bool = False,
) -> list[PanelResult]:
    """The panel's result for every response a member graded (or for ``response_ids``),
    with the human verdicts ``sight`` may see in place (read from ``effective_verdicts``;
    ``scores_only``: without each reviewer's verdict in the decisions, for a reader of the
    scores alone)."""
    panel = panels.get_panel(sessions, panel_id)
    grades = panels.panel_grades(sessions, panel_id, response_ids)
    ids = [g.response_id for g in grades]
    with sessions() as session:
        criteria = [criterion_info(c) for c in
                    rubric_repo.criteria_of(session, panel.rubric_version_id)]
        if scores_only:
            humans = effective_reads.score_decisions(
                session, panel.rubric_version_id, ids, dataset_id=panel.dataset_id,
                sight=sight)
        else:
            humans = effective_reads.decisions(session, panel.rubric_version_id, ids,
                                               sight=sight)
        texts = response_texts(session, ids) if panel.scoring.length_penalty is not None else {}
    return [
        PanelResult(panel, grade, compute_effective_grade(
            criteria=criteria, grade=panel_grade_info(panel, grade), settings=panel.scoring,
            to_grade=texts.get(grade.response_id, ""),
            humans=humans.get(grade.response_id, {})))
        for grade in grades
    ]


def panel_columns(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    panel_ids: Sequence[int], sight: Sight = blindness.EVERYTHING,
) -> tuple[results.PanelColumn, ...]:
    """The panels as columns of the Results table (``results.results_page(panels=...)``):
    every graded response's effective score (with the human verdicts ``sight`` may see)
    and the panel's verdicts. Refuses a panel of another result set.

    Read from the stored decisions: a response nobody reviewed scores what the panel scored
    (people's verdicts are what changes an effective score), a reviewed one what
    ``effective_panel_scores`` keeps for a viewer who sees every verdict; the others (a
    blind viewer's reviewed ones, those a member still grading has not graded yet) go
    through ``panel_results``."""
    columns = page_columns(sessions, dataset_id=dataset_id,
                           rubric_version_id=rubric_version_id, panel_ids=panel_ids,
                           sight=sight)
    with sessions() as session:
        return tuple(panel_reads.whole_column(session, column) for column in columns)


def page_columns(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    panel_ids: Sequence[int], sight: Sight = blindness.EVERYTHING,
) -> tuple[results.PanelColumn, ...]:
    """``panel_columns`` with only what the stored tables do not hold (``PanelColumn.
    partial``): the reviewed responses' effective scores and those of the responses whose
    stored decision is not the one read. The Results page reads the rest in SQL (and the
    Python page reads it in, ``panel_reads.whole_column``): no read of every response."""
    columns = []
    for panel_id in dict.fromkeys(panel_ids):
        panel = panels.get_panel(sessions, panel_id)
        if (panel.dataset_id, panel.rubric_version_id) != (dataset_id, rubric_version_id):
            raise InvalidInputError(
                f"judge panel {panel_id} combines runs of another dataset or rubric version "
                "than the results shown")
        with sessions() as session:
            panels.require_ready(session, panel_id)
            unsettled = set(panels.unsettled(session, panel_id))
            # The kept effective scores, but where the viewer may not see some decision
            # (storage/services/blindness.py): those are aggregated with what they see.
            hidden = effective_reads.hidden_responses(session, rubric_version_id,
                                                      dataset_id, sight)
            scores = {rid: found for rid, found in
                      panel_scores.kept_scores(session, panel_id).items()
                      if rid not in hidden}
            redo = hidden | unsettled
            # only the responses some member graded (a stored panel grade)
            redo = set(panel_reads.graded_among(session, panel_id, sorted(redo)))
        found = panel_results(sessions, panel_id, sorted(redo), sight=sight,
                              scores_only=True) if redo else []
        verdicts: dict[tuple[int, int], str] = {}
        for r in found:
            scores[r.response_id] = (r.effective.score, r.effective.error)
            if r.response_id in unsettled:
                for row in r.grade.criteria:
                    if row.decision.choice is not None:
                        verdicts[r.response_id, row.criterion_id] = str(row.decision.choice)
        columns.append(results.PanelColumn(
            panel_id=panel_id, scores=scores, verdicts=verdicts, partial=True,
            redone=frozenset(r.response_id for r in found if r.response_id in unsettled)))
    return tuple(columns)


def recomputed_columns(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    panel_ids: Sequence[int], sight: Sight = blindness.EVERYTHING,
) -> tuple[results.PanelColumn, ...]:
    """``panel_columns`` as it was read before the stored decisions: every response through
    ``panel_results`` (tests and the benchmark compare the two)."""
    columns = []
    for panel_id in dict.fromkeys(panel_ids):
        found = panel_results(sessions, panel_id, sight=sight, scores_only=True)
        columns.append(results.PanelColumn(
            panel_id=panel_id,
            scores={r.response_id: (r.effective.score, r.effective.error) for r in found},
            verdicts={(r.response_id, row.criterion_id): str(row.decision.choice)
                      for r in found for row in r.grade.criteria
                      if row.decision.choice is not None}))
    return tuple(columns)


def any_unsettled(sessions: SessionFactory, panel_ids: Sequence[int]) -> bool:
    """Whether one of these panels has a response whose stored decision is not the one
    read (``panels.unsettled``): a member still grading, another tie rule."""
    with sessions() as session:
        return any(panels.unsettled(session, pid) for pid in dict.fromkeys(panel_ids))


def panel_stamp(sessions: SessionFactory, panel_ids: Sequence[int]) -> tuple:
    """Changes whenever these panels' results may have: a member's new grade or status, a
    new human verdict, a panel made, removed or filled. Cheap; lets pages cache until it
    changes."""
    if not panel_ids:
        return ()
    infos = [panels.get_panel(sessions, pid) for pid in panel_ids]
    members = sorted({m.run.id for info in infos for m in info.members})
    building = tuple(info.id for info in infos if not info.ready)
    return tuple(panel_ids), results.results_stamp(sessions, members), building



def current_member_stamp(sessions: SessionFactory, panel_ids: Sequence[int]) -> tuple:
    """``member_stamp(panel_stamp(sessions, panel_ids))``, without reading what it drops:
    the newest human verdict and the datasets' responses (a count over every response of
    the dataset: ~50 ms at 100,000 on PostgreSQL)."""
    if not panel_ids:
        return ()
    infos = [panels.get_panel(sessions, pid) for pid in panel_ids]
    members = sorted({m.run.id for info in infos for m in info.members})
    building = tuple(info.id for info in infos if not info.ready)
    with sessions() as session:
        runs = results_repo.run_mark_rows(session, members)
    return tuple(panel_ids), runs, building


def member_stamp(stamp: tuple) -> tuple:
    """The members' part of ``panel_stamp``: their grades and statuses, the panels made,
    removed or filled. A person's verdict does not move it: the members' alpha, which
    reads the members' grades alone, is cached by it."""
    if not stamp:
        return ()
    panel_ids, (runs, _newest_verdict, _responses), building = stamp
    return panel_ids, runs, building


def panel_label(panel: panels.PanelInfo) -> str:
    """``Panel P2 trio · majority of #3, #4, #5``: short enough for a chart's axis."""
    name = f" {panel.name}" if panel.name else ""
    return (f"Panel P{panel.id}{name} · {panel.rule} of "
            + ", ".join(f"#{m.run.id}" for m in panel.members))


def member_models(panel: panels.PanelInfo) -> str:
    """``majority of #3 gpt-4.1-mini, #4 claude-haiku, #5 llama3``."""
    return f"{panel.rule} of " + ", ".join(
        f"#{m.run.id} {m.run.model}" + (f" ×{m.weight:g}" if panel.rule == "weighted" else "")
        for m in panel.members)


@dataclass(frozen=True)
class PanelSource:
    """What the Agreement page needs of one panel: its verdicts, how each was reached, its
    own scores, its scoring settings, and the members' cost."""

    panel: panels.PanelInfo
    # (response, criterion) -> decided verdict, or option label on a multi-choice criterion
    verdicts: dict[tuple[int, int], Choice]
    reasons: dict[tuple[int, int], str]
    scores: dict[int, float]
    grades: int
    total_tokens: int
    cost: float | None  # the members' costs over the responses whose cost is known
    unknown_cost_count: int  # responses where some member's cost is unknown
    status: str


def panel_sources(sessions: SessionFactory, rubric_version_id: int,
                  dataset_id: int, within: Select | None = None,
                  stored: Mapping | None = None, key=None) -> list[PanelSource]:
    """Every panel of the set as the Agreement page reads it: the stored decisions as plain
    columns (``panel_verdicts``, ``panel_grades``); only the responses whose stored
    decision is not the one read (a member still grading, another tie rule) go through
    ``panels.panel_grades``. A panel still being filled by a worker is left out until whole.
    ``within``: a query of response ids; only their verdicts and notes are read (scores and
    costs of every response). ``stored``: source key -> the panel's grades kept by the
    judges' stamp (``agreement_inputs.SourceGrades``): its scores and costs not read.
    ``key``: makes a (response, criterion) key (storage.key_pool.KeyPool)."""
    found = []
    stored = stored or {}
    verdict_of = {v.value: v for v in Verdict}
    for panel in panels.list_panels(sessions, dataset_id=dataset_id,
                                    rubric_version_id=rubric_version_id):
        if not panel.ready:  # being filled by a worker: a source once it is whole
            continue
        with sessions() as session:
            order = {c.id: i for i, c in enumerate(
                rubric_repo.criteria_of(session, panel.rubric_version_id))}
            redo = panels.unsettled(session, panel.id)
            kept = None if redo else stored.get(f"panel:{panel.id}")
            # Core rows, not ORM ones: a grade per response (100,000s)
            grades = {} if kept is not None else {
                rid: (score, cost) for rid, score, cost in plain_rows(session.connection(),
                    select(m.PanelGradeRow.response_id, m.PanelGradeRow.score,
                           m.PanelGradeRow.cost)
                    .where(m.PanelGradeRow.panel_id == panel.id)
                    .order_by(m.PanelGradeRow.response_id))}
            decided: dict[int, list[tuple[int, Choice, str]]] = {}
            v = m.PanelVerdictRow
            query = (select(v.response_id, v.criterion_id, v.verdict, v.option, v.note)
                     .where(v.panel_id == panel.id,
                            v.verdict.is_not(None) | v.option.is_not(None)))
            if within is not None:
                query = query.where(v.response_id.in_(within))
            for rid, cid, verdict, option, note in plain_rows(session.connection(), query):
                decided.setdefault(rid, []).append(  # a dict, not Verdict(): 40,000 at 100k
                    (cid, option if option is not None else verdict_of[verdict], note))
        for grade in (panels.panel_grades(sessions, panel.id, redo) if redo else []):
            grades[grade.response_id] = (grade.score, grade.cost)
            decided[grade.response_id] = [
                (row.criterion_id, row.decision.choice, row.decision.note)
                for row in grade.criteria if row.decision.choice is not None]
        verdicts: dict[tuple[int, int], Choice] = {}
        reasons: dict[tuple[int, int], str] = {}
        # as the panel's grades list them: by response (the graded ones), then criterion
        listed = grades if kept is None else _graded(kept.ids, decided)
        for rid in listed:
            if (rows := decided.get(rid)) is None:
                continue  # not read (``within``) or no decision: most of 100,000
            for cid, choice, note in sorted(rows, key=lambda row: order.get(row[0],
                                                                            len(order))):
                found_key = (rid, cid) if key is None else key(rid, cid)  # one in both
                verdicts[found_key] = choice
                reasons[found_key] = note
        if kept is None:
            found.append(_source(panel, grades, verdicts, reasons))
        else:
            found.append(_kept_source(panel, kept, verdicts, reasons))
    return found


def _graded(ids, decided: dict[int, list]) -> list[int]:
    """The responses of ``decided`` that have a grade (``ids``, ascending), ascending."""
    import numpy as np

    wanted = np.fromiter(sorted(decided), dtype=np.int64, count=len(decided))
    return wanted[np.isin(wanted, ids)].tolist()


def _kept_source(panel: panels.PanelInfo, kept, verdicts: dict[tuple[int, int], Choice],
                 reasons: dict[tuple[int, int], str]) -> PanelSource:
    """``_source`` with the panel's grades kept (``agreement_inputs.SourceGrades``)."""
    statuses = [member.run.status for member in panel.members]
    return PanelSource(
        panel=panel, verdicts=verdicts, reasons=reasons, scores=kept.column(),
        grades=kept.graded,
        total_tokens=sum(member.run.total_tokens for member in panel.members),
        cost=kept.cost, unknown_cost_count=kept.unknown_cost_count,
        status=next((s for s in statuses if s != "done"), "done"))


def _source(panel: panels.PanelInfo, grades: dict[int, tuple[float | None, float | None]],
            verdicts: dict[tuple[int, int], Choice],
            reasons: dict[tuple[int, int], str]) -> PanelSource:
    """``grades``: response -> (score, cost) of every response some member graded."""
    known = [cost for _score, cost in grades.values() if cost is not None]
    statuses = [member.run.status for member in panel.members]
    return PanelSource(
        panel=panel, verdicts=verdicts, reasons=reasons,
        scores={rid: score for rid, (score, _cost) in grades.items() if score is not None},
        grades=len(grades),
        total_tokens=sum(member.run.total_tokens for member in panel.members),
        cost=sum(known) if known else None, unknown_cost_count=len(grades) - len(known),
        status=next((s for s in statuses if s != "done"), "done"))


def recomputed_sources(sessions: SessionFactory, rubric_version_id: int,
                       dataset_id: int, within: Select | None = None) -> list[PanelSource]:
    """``panel_sources`` as it read before: every panel grade built as ``PanelGrade``s
    (tests and the benchmark compare the two). It read every response (``within`` None)."""
    if within is not None:
        raise ValueError("the panels' sources as read before cover every response")
    found = []
    for panel in panels.list_panels(sessions, dataset_id=dataset_id,
                                    rubric_version_id=rubric_version_id):
        if not panel.ready:  # being filled by a worker: a source once it is whole
            continue
        grades = panels.panel_grades(sessions, panel.id)
        verdicts: dict[tuple[int, int], Choice] = {}
        reasons: dict[tuple[int, int], str] = {}
        for grade in grades:
            for row in grade.criteria:
                if row.decision.choice is not None:
                    verdicts[grade.response_id, row.criterion_id] = row.decision.choice
                    reasons[grade.response_id, row.criterion_id] = row.decision.note
        found.append(_source(panel, {g.response_id: (g.score, g.cost) for g in grades},
                             verdicts, reasons))
    return found
