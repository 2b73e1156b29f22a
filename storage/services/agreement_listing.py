"""The judges' share of a counted report's disagreement list (issue 41), kept by the judges'
stamp.

A disagreement of some sources on one criterion is a response where they gave both MET and
UNMET. When people are among the sources, it is either a response where the judges already
disagree among themselves, or a response someone reviewed (people's verdicts are on those
only). The counted report holds every verdict of the reviewed responses, people's and the
judges'; what it lacks is the judges' verdicts elsewhere. ``judge_listing`` reads those of
the responses where the judges disagree among themselves (found by the database:
``agreement_sides.disagreeing_query``), with their reasons: nothing a person writes changes
it, so the page keeps it until a judge's stamp moves (a grade lands, a run is added, a panel
is filled), and a saved verdict then lists from memory, reading only the judges' reasons of
the items listed on responses people answered (``with_judge_reasons``: a counted report
holds people's notes, not the judges' reasons).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sqlalchemy import select

from grading.types import Verdict
from storage import models as m
from storage.engine import SessionFactory
from storage.id_chunks import id_chunks
from storage.services import agreement_sides, panels
from storage.services.agreement_sources import HUMAN, AgreementData, Key

if TYPE_CHECKING:
    from storage.services.agreement import Disagreement


@dataclass(frozen=True)
class JudgeListing:
    """The judges' verdicts and reasons on one criterion of the responses where they gave
    both MET and UNMET (response ids ascending), as the full gather reads them."""

    keys: tuple[str, ...]  # the judges' source keys
    criterion_id: int
    response_ids: tuple[int, ...]
    verdicts: dict[str, dict[Key, Verdict | str]]
    reasons: dict[str, dict[Key, str | None]]


def judge_keys(source_keys: Sequence[str]) -> tuple[str, ...]:
    return tuple(key for key in source_keys if key != HUMAN)


def judge_listing(sessions: SessionFactory, data: AgreementData, keys: Sequence[str],
                  criterion_id: int, first: int | None = None) -> JudgeListing | None:
    """The judges' (``keys``, no people) share of the list. None when a panel among them has
    responses whose stored decision is not the one read (a member still grading, another tie
    rule): the list is then read through the full gather. ``first``: only the first so many
    responses where the judges disagree (by id), enough for the list's first ``first``
    items (each of those the judges disagree on is among the judges' first ``first``)."""
    keys = tuple(keys)
    sources = [data.source(key) for key in keys]
    empty = JudgeListing(keys, criterion_id, (), {key: {} for key in keys},
                         {key: {} for key in keys})
    if any(not s.per_criterion or (s.run_id is None and not s.is_panel) for s in sources):
        return None
    with sessions() as session:
        if any(panels.unsettled(session, s.panel_id) for s in sources if s.is_panel):
            return None
        if len(keys) < 2:  # one verdict per key: one source never disagrees with itself
            return empty
        sides = [agreement_sides.side_of(data, key) for key in keys]
        ids = (_all_ids(session, sides, criterion_id) if first is None
               else _first_ids(session, data.dataset_id, sides, criterion_id, first))
        verdicts, reasons = {}, {}
        for key, source in zip(keys, sources, strict=True):
            if source.is_panel:
                found = _panel_rows(session, source.panel_id, source.member_run_ids,
                                    criterion_id, ids)
            else:
                found = _run_rows(session, source.run_id, criterion_id, ids)
            verdicts[key] = {(rid, criterion_id): choice for rid, choice, _ in found}
            reasons[key] = {(rid, criterion_id): reason for rid, _, reason in found}
    return JudgeListing(keys, criterion_id, tuple(ids), verdicts, reasons)


def _all_ids(session, sides, criterion_id: int, below: int | None = None) -> list[int]:
    """The responses where the judges disagree, ascending (those with an id up to ``below``)."""
    if below is not None:
        sides = [side.where(side.selected_columns.response_id <= below) for side in sides]
    return sorted(session.scalars(
        agreement_sides.disagreeing_query(sides, criterion_id).order_by(None)))


def _first_ids(session, dataset_id: int, sides, criterion_id: int, first: int) -> list[int]:
    """The first ``first`` of ``_all_ids``: looked for among the dataset's first responses,
    four times as many each time until enough are found (at 100,000 responses a judges'
    disagreement list of 22,000 is found in its first few thousand responses)."""
    reach = 4 * first
    while True:
        bound = session.scalar(
            select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
            .order_by(m.ResponseRow.id).offset(reach).limit(1))
        if bound is None:  # the whole dataset
            return _all_ids(session, sides, criterion_id)[:first]
        ids = _all_ids(session, sides, criterion_id, below=bound)
        if len(ids) >= first:
            return ids[:first]
        reach *= 4


def _shown(session, run_ids: Sequence[int]) -> set[int]:
    """The responses these runs showed as examples (a calibrated source leaves them out)."""
    return set(session.scalars(select(m.RunExampleRow.response_id)
                               .where(m.RunExampleRow.run_id.in_(list(run_ids)))))


def _run_rows(session, run_id: int, criterion_id: int,
              ids: Sequence[int]) -> list[tuple[int, Verdict | str, str | None]]:
    """(response, choice, reason) as ``run_repo.run_verdicts`` reads them."""
    shown = _shown(session, [run_id])
    g, c = m.GradeRow, m.GradeCriterionRow
    found = []
    for chunk in id_chunks(ids):
        for rid, verdict, option, reason in session.execute(
                select(g.response_id, c.verdict, c.option, c.reason)
                .join(g, g.id == c.grade_id)
                .where(g.run_id == run_id, g.response_id.in_(chunk),
                       c.criterion_id == criterion_id)):
            choice = option if option is not None else (
                None if verdict is None else Verdict(verdict))
            if choice is not None and rid not in shown:
                found.append((rid, choice, reason))
    return found


def _panel_rows(session, panel_id: int, member_run_ids: Sequence[int], criterion_id: int,
                ids: Sequence[int]) -> list[tuple[int, Verdict | str, str | None]]:
    """(response, choice, note) as ``panel_results.panel_sources`` reads a settled panel's
    stored decisions: of the responses the panel graded, less those a member showed."""
    shown = _shown(session, member_run_ids)
    v, grade = m.PanelVerdictRow, m.PanelGradeRow
    found = []
    for chunk in id_chunks(ids):
        graded = set(session.scalars(select(grade.response_id).where(
            grade.panel_id == panel_id, grade.response_id.in_(chunk))))
        for rid, verdict, option, note in session.execute(
                select(v.response_id, v.verdict, v.option, v.note)
                .where(v.panel_id == panel_id, v.response_id.in_(chunk),
                       v.criterion_id == criterion_id,
                       v.verdict.is_not(None) | v.option.is_not(None))):
            if rid in graded and rid not in shown:
                found.append((rid, option if option is not None else Verdict(verdict), note))
    return found


def listed_data(data: AgreementData, listing: JudgeListing,
                source_keys: Sequence[str]) -> AgreementData:
    """``data`` narrowed to the responses where ``source_keys`` may disagree on the
    listing's criterion, holding every verdict of theirs there: the judges' disagreements
    (from ``listing``) and, with people among the sources, the responses people answered
    (the report holds every source's verdicts of those). The judges' reasons are the
    listing's: on a response only people answered they are read for the items listed
    (``with_judge_reasons``), as a counted report does not hold them."""
    cid = listing.criterion_id
    people = HUMAN in source_keys
    answered = sorted({rid for rid, c in data.verdicts.get(HUMAN, {}) if c == cid}
                      ) if people else []
    ids = sorted(set(listing.response_ids).union(answered))
    verdicts: dict[str, dict] = {}
    reasons: dict[str, dict] = {}
    for key in listing.keys:
        held = data.verdicts.get(key, {})
        verdicts[key] = dict(listing.verdicts[key])
        reasons[key] = dict(listing.reasons[key])
        for rid in answered:
            if (rid, cid) in held:
                verdicts[key][rid, cid] = held[rid, cid]
    if people:
        verdicts[HUMAN] = data.verdicts.get(HUMAN, {})
        reasons[HUMAN] = data.reasons.get(HUMAN, {})
    return AgreementData(
        rubric_version_id=data.rubric_version_id, dataset_id=data.dataset_id,
        criteria=data.criteria,
        response_labels={rid: data.response_labels[rid] for rid in ids},
        sources=data.sources, verdicts=verdicts, reasons=reasons, judge_scores={},
        human_scores={}, reviewed_responses=data.reviewed_responses,
        fully_reviewed_responses=data.fully_reviewed_responses, complete=False)


def with_judge_reasons(sessions: SessionFactory, data: AgreementData, listing: JudgeListing,
                       items: Sequence[Disagreement]) -> list[Disagreement]:
    """``items`` (listed from ``listed_data``) with the judges' reasons read for those on a
    response the judges do not disagree on (one people answered: the listing has no reasons
    there), as the full gather reads them: the reason of a verdict given (None when it gave
    none), "" where the judge gave no verdict."""
    cid, listed = listing.criterion_id, set(listing.response_ids)
    wanted = sorted({d.response_id for d in items if d.response_id not in listed})
    if not wanted or not listing.keys:
        return list(items)
    found: dict[str, dict[int, str | None]] = {}
    with sessions() as session:
        for key in listing.keys:
            source = data.source(key)
            rows = (_panel_rows(session, source.panel_id, source.member_run_ids, cid, wanted)
                    if source.is_panel else _run_rows(session, source.run_id, cid, wanted))
            found[key] = {rid: reason for rid, _choice, reason in rows}
    return [d if d.response_id in listed else replace(d, reasons={
        k: found[k].get(d.response_id, "") if k in found else why
        for k, why in d.reasons.items()}) for d in items]
