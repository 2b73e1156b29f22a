"""Storing the judges' grades: one, or a batch of them in one transaction.

The job runner stores its grades a few at a time (``storage.jobs.grade_writer``): one
transaction per batch instead of one per response. A batch is stored whole or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from grading.types import CriterionReport, EvaluationReport, Verdict
from storage import limits
from storage import models as m
from storage.dto import CriterionGradeInfo, GradeInfo
from storage.engine import SessionFactory
from storage.errors import GradeExistsError, NotFoundError, RunCancelledError
from storage.repositories import runs as repo
from storage.run_settings import TokenPrice
from storage.services import panel_upkeep, people_scores, verdict_keys


@dataclass(frozen=True)
class NewGrade:
    """A completed grade, not stored yet. ``transient``: it failed only transiently (a
    later pass of the run grades the response again, see ``storage.jobs.passes``)."""

    response_id: int
    report: EvaluationReport
    latency_s: float | None = None
    transient: bool = False


def record_grade(
    sessions: SessionFactory, run_id: int, response_id: int, report: EvaluationReport,
    latency_s: float | None = None, *, transient: bool = False,
) -> GradeInfo:
    """Store one completed grade and add it to the run's totals, in one transaction.

    ``report.report`` (when present) lists one CriterionReport per criterion of the run's
    rubric version, in order. A second grade for the same (run, response) raises
    GradeExistsError, so a resumed or doubly-claimed run never stores a duplicate.
    """
    return record_grades(sessions, run_id, [NewGrade(response_id, report, latency_s,
                                                     transient)])[0]


def record_grades(sessions: SessionFactory, run_id: int,
                  grades: Sequence[NewGrade]) -> list[GradeInfo]:
    """Store completed grades of one run and add them to its totals, in one transaction:
    all of them, or none (GradeExistsError when any response already has a grade,
    NotFoundError / ValueError when one is not part of the run or does not match its
    rubric version; RunCancelledError once the run is cancelled: nothing is stored after a
    cancel returns).

    A response whose grade failed only transiently (``transient``: a later pass grades it
    again) has that grade replaced in the same transaction, so the run's counts never drop
    between passes: the failure counts until the grade that replaces it does.
    """
    if not grades:
        return []
    # Core statements, not ORM objects: the job runner stores every grade through here, and
    # the unit of work made it ~5 ms of CPU per grade (a fifth of a run's overhead at scale).
    ids = [grade.response_id for grade in grades]
    if len(set(ids)) != len(ids):
        raise GradeExistsError(f"run {run_id}: a batch holds two grades for one response")
    values = [_grade_values(run_id, g.response_id, g.report, g.latency_s) for g in grades]
    try:
        with sessions.begin() as session:
            # Write first (a no-op update of the run's row): on SQLite that takes the
            # database's write lock before the status is read (the driver begins the
            # transaction at the first write), on PostgreSQL the run's row lock. A cancel
            # then waits for this batch, and a batch after the cancel sees it.
            found = session.execute(
                update(m.RunRow).where(m.RunRow.id == run_id).values(status=m.RunRow.status)
                .returning(m.RunRow.rubric_version_id, m.RunRow.settings, m.RunRow.status)
            ).first()
            if found is None:
                raise NotFoundError(f"grading run {run_id} does not exist")
            if found.status == "cancelled":
                raise RunCancelledError(f"run {run_id} was cancelled: its grades in flight "
                                        "are not stored (their answers are in the cache)")
            members = set(session.scalars(
                select(m.RunResponseRow.response_id).where(
                    m.RunResponseRow.run_id == run_id, m.RunResponseRow.response_id.in_(ids))))
            outsider = next((i for i in ids if i not in members), None)
            if outsider is not None:
                raise NotFoundError(f"response {outsider} is not part of run {run_id}")
            criteria = session.execute(
                select(m.CriterionRow.id, m.CriterionRow.requirement, m.CriterionRow.weight,
                       m.CriterionRow.options)
                .where(m.CriterionRow.version_id == found.rubric_version_id)
                .order_by(m.CriterionRow.position)).all()
            verdicts = [_criterion_values(g.report, criteria) for g in grades]
            for grade, row in zip(grades, values, strict=True):
                row["cost"] = priced_cost(grade.report, found.settings)
            replaced = session.execute(delete(m.GradeRow).where(
                m.GradeRow.run_id == run_id, m.GradeRow.response_id.in_(ids),
                m.GradeRow.transient.is_(True))).rowcount or 0
            # One executemany, then the ids by the (run, response) key: cheaper than a
            # RETURNING per row, which is what SQLite gets for ordered RETURNING.
            criterion_ids = [c.id for c in criteria]
            session.execute(insert(m.GradeRow.__table__), [
                {**row, "transient": g.transient,
                 "verdict_key": verdict_keys.key_of_rows(per_grade, criterion_ids)}
                for row, g, per_grade in zip(values, grades, verdicts, strict=True)])
            by_response = dict(session.execute(
                select(m.GradeRow.response_id, m.GradeRow.id).where(
                    m.GradeRow.run_id == run_id, m.GradeRow.response_id.in_(ids))).all())
            grade_ids = [by_response[i] for i in ids]
            rows = [{**verdict, "grade_id": grade_id}
                    for grade_id, per_grade in zip(grade_ids, verdicts, strict=True)
                    for verdict in per_grade]
            if rows:
                session.execute(insert(m.GradeCriterionRow.__table__), rows)
            # The panels' lock first: it is the stronger one (see panel_upkeep.lock).
            panels = panel_upkeep.lock(session, run_id, ids)
            people_scores.after_grades(session, run_id, found.rubric_version_id, ids)
            totals = _totals(grades, values)
            totals["failed_count"] -= replaced  # a replaced grade had failed (transiently)
            repo.add_totals(session, run_id, **totals)
            # the decisions of the panels the run is a member of, on these responses
            panel_upkeep.refresh(session, run_id, ids, panels)
    except IntegrityError:
        raise GradeExistsError(
            f"run {run_id} already has a grade for response "
            f"{ids[0] if len(ids) == 1 else 'one of ' + ', '.join(map(str, ids))}") from None
    return [
        GradeInfo(id=grade_id, **row, criteria=tuple(
            CriterionGradeInfo(
                criterion_id=v["criterion_id"], position=v["position"],
                verdict=None if v["verdict"] is None else Verdict(v["verdict"]),
                reason=v["reason"], error=v["error"], option=v["option"],
                shuffle_order=None if v["shuffle_order"] is None else tuple(v["shuffle_order"]),
                samples=None if v["samples"] is None else tuple(v["samples"]),
                prompt_position=v["prompt_position"])
            for v in per_grade))
        for grade_id, row, per_grade in zip(grade_ids, values, verdicts, strict=True)
    ]


def _totals(grades: Sequence[NewGrade], values: Sequence[Mapping[str, Any]]
            ) -> dict[str, float]:
    totals = dict.fromkeys(("done_count", "failed_count", "prompt_tokens", "completion_tokens",
                            "total_tokens", "cost", "unknown_cost_count"), 0)
    for grade, row in zip(grades, values, strict=True):
        report, usage = grade.report, grade.report.token_usage
        failed = report.score is None and report.error is not None
        totals["done_count" if not failed else "failed_count"] += 1
        if usage:
            totals["prompt_tokens"] += usage.prompt_tokens
            totals["completion_tokens"] += usage.completion_tokens
            totals["total_tokens"] += usage.total_tokens
        if row["cost"] is None:
            totals["unknown_cost_count"] += 1
        else:
            totals["cost"] += row["cost"]
    return totals


def priced_cost(report: EvaluationReport, settings: Mapping[str, Any] | None) -> float | None:
    """The grade's cost (``settings``: the run's, as stored): from the price the run was
    launched with when there is one (a local or unpriced model), else litellm's; None when
    unknown."""
    price = (settings or {}).get("price")
    if not price:
        return report.completion_cost
    usage = report.token_usage
    if usage is None:
        return None
    return TokenPrice.model_validate(price).cost(usage.prompt_tokens, usage.completion_tokens)


def _grade_values(
    run_id: int, response_id: int, report: EvaluationReport, latency_s: float | None,
) -> dict[str, Any]:
    usage = report.token_usage
    return {
        "run_id": run_id, "response_id": response_id, "score": report.score,
        "raw_score": report.raw_score, "llm_raw_score": report.llm_raw_score,
        "reason": limits.storable(report.reason),
        "error": limits.storable(report.error), "cannot_assess_count": report.cannot_assess_count,
        "length_penalty": report.length_penalty,
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "completion_tokens": usage.completion_tokens if usage else None,
        "total_tokens": usage.total_tokens if usage else None,
        "cost": report.completion_cost, "latency_s": latency_s, "created_at": m.utcnow(),
    }


def _criterion_values(report: EvaluationReport, criteria: Sequence[Any]) -> list[dict[str, Any]]:
    """One grade_criteria row per criterion (without grade_id); checks the report matches."""
    if report.report is None:
        return []
    if len(report.report) != len(criteria):
        raise ValueError(
            f"the report has {len(report.report)} criteria but the rubric version has "
            f"{len(criteria)}")
    rows = []
    for position, (item, criterion) in enumerate(zip(report.report, criteria, strict=True)):
        stored_options = None if item.options is None else [o.model_dump() for o in item.options]
        if (item.requirement != criterion.requirement or item.weight != criterion.weight
                or stored_options != criterion.options):
            raise ValueError(
                f"report criterion {position + 1} does not match the rubric version "
                f"({item.requirement[:60]!r} vs {criterion.requirement[:60]!r})")
        verdict, option = _stored_choice(item)
        rows.append({
            "criterion_id": criterion.id, "position": position, "verdict": verdict,
            "option": option, "reason": limits.storable(item.reason or ""),
            "error": limits.storable(item.error),
            "shuffle_order": None if item.shuffle_order is None else list(item.shuffle_order),
            "samples": None if item.samples is None else list(item.samples),
            "prompt_position": item.prompt_position,
        })
    return rows


def _stored_choice(item: CriterionReport) -> tuple[str | None, str | None]:
    """(verdict, option) as grade_criteria keeps them (models.GradeCriterionRow): a chosen
    option's label beside MET, or CANNOT_ASSESS for an NA option or an abstention."""
    if item.options is None:
        return (None if item.verdict is None else item.verdict.value), None
    chosen = item.multi_choice_verdict
    if chosen is None:
        return None, None
    if chosen.selected_index is None:
        return Verdict.CANNOT_ASSESS.value, None
    option = item.options[chosen.selected_index]
    return (Verdict.CANNOT_ASSESS if option.na else Verdict.MET).value, option.label
