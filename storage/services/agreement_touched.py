"""What the responses of appended verdicts hold now, for ``agreement_kept.advance``: their
verdicts in force, each reviewer's current verdicts, their human scores, and the judges'
verdicts of a response reviewed for the first time or graded again (read as
``gather_sources`` reads them)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from grading.types import Verdict
from storage import models as m
from storage.effective import compute_human_score
from storage.engine import SessionFactory
from storage.repositories import effective as effective_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories import verdicts as verdict_repo
from storage.repositories.datasets import response_texts
from storage.services import effective_reads

if TYPE_CHECKING:
    from storage.services.agreement_kept import KeptReport


@dataclass
class Touched:
    """What the appended verdicts' responses hold now."""

    touched: set[int]
    reviewed: frozenset[int]  # of them, with rows in effective_verdicts
    applied: list  # HumanVerdictInfo in force, by response then criterion
    own: list  # each reviewer's current verdicts, by response, criterion, then id
    # source -> verdicts of the first-reviewed ones and those ``again`` (not their reasons:
    # a counted report holds none of the judges')
    judges: dict[str, dict]
    human_scores: dict[str, dict[int, float]]  # scoring json -> response -> score
    whole: set[int]  # of the touched, fully decided
    newest: dict[str, int]


def read_touched(sessions: SessionFactory, kept: KeptReport, touched: list[int],
                 again: frozenset[int] = frozenset()) -> Touched:
    """``again``: reviewed responses of ``touched`` whose grades landed since (their judges'
    verdicts read again too)."""
    version_id, dataset_id = kept.rubric_version_id, kept.dataset_id
    data = kept.report.data
    ev = m.EffectiveVerdictRow
    with sessions() as session:
        keys = {(rid, cid) for rid, cid in session.execute(
            select(ev.response_id, ev.criterion_id)
            .where(ev.rubric_version_id == version_id, ev.dataset_id == dataset_id,
                   ev.response_id.in_(touched)))}
        reviewed = frozenset(rid for rid, _cid in keys)
        applied = [effective_repo.verdict_info(row[0], row[3:]) for row in session.execute(
            effective_repo.applied_query(version_id, dataset_id, touched))]
        sources = verdict_repo.carry_sources(session, version_id)
        own = sorted((h for h in map(
            lambda row: effective_repo.verdict_info(row[0], row[1:]), session.execute(
                effective_reads.current_streams_query(sources, (), sorted(reviewed))))
            if not h.adjudication and (h.response_id, h.criterion_id) in keys),
            key=lambda h: (h.response_id, h.criterion_id, h.id)) if reviewed else []
        first = sorted((reviewed - kept.reviewed) | (again & reviewed))
        judges = judge_verdicts(session, kept, first) if first else {}
        by_response: dict[int, dict] = defaultdict(dict)
        for h in applied:
            by_response[h.response_id][h.criterion_id] = h
        whole = {rid for rid, found in by_response.items() if len(found) == len(data.criteria)}
        needs_text = any(s.length_penalty is not None for s in kept.scorings.values())
        texts = response_texts(session, sorted(whole)) if needs_text and whole else {}
    scores: dict[str, dict[int, float]] = {}
    for scoring in kept.scorings.values():
        found = scores.setdefault(scoring.model_dump_json(), {})
        if found:
            continue
        for rid in sorted(whole):
            result = compute_human_score(
                response_id=rid, rubric_version_id=version_id, criteria=data.criteria,
                humans=by_response[rid], settings=scoring, to_grade=texts.get(rid))
            if result.score is not None:
                found[rid] = result.score
    newest = dict(kept.newest)
    for h in own:
        if h.id > newest.get(h.reviewer_key, -1):
            newest[h.reviewer_key] = h.id
    return Touched(set(touched), reviewed, applied, own, judges, scores, whole, newest)


def judge_verdicts(session, kept: KeptReport, first: list[int]) -> dict[str, dict]:
    """The judges' verdicts of responses reviewed for the first time, as ``gather_sources``
    reads them (runs by criterion position, panels by criterion)."""
    data = kept.report.data
    order = {c.id: i for i, c in enumerate(rubric_repo.criteria_of(
        session, kept.rubric_version_id))}
    found: dict[str, dict] = {}
    for source in data.sources:
        if source.is_human:
            continue
        left_out = kept.excluded.get(source.key, frozenset())
        if source.is_panel:
            v, g = m.PanelVerdictRow, m.PanelGradeRow
            graded = select(g.response_id).where(g.panel_id == source.panel_id,
                                                 g.response_id.in_(first))
            rows = session.execute(
                select(v.response_id, v.criterion_id, v.verdict, v.option)
                .where(v.panel_id == source.panel_id, v.response_id.in_(graded),
                       v.verdict.is_not(None) | v.option.is_not(None))).all()
            rows.sort(key=lambda r: (r[0], order.get(r[1], len(order))))
            choices = {(r[0], r[1]): r[3] if r[3] is not None else Verdict(r[2])
                       for r in rows}
        else:
            choices, _none = run_repo.run_choices(session, source.run_id, first,
                                                  reasons=False)
        found[source.key] = {k: c for k, c in choices.items() if k[0] not in left_out}
    return found
