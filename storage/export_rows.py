"""Results export records read as rows (issue 41): a run's grades, their criteria and the
responses as uploaded, then a panel's stored decisions (``panel_grades`` /
``panel_verdicts``), in large batches ordered by response id, as plain column tuples.

A response nobody reviewed under the version (no row in ``effective_verdicts``) has an
effective grade that is the judge's (or the panel's) own: its record is written straight
from the columns (storage/export_lines.py for JSONL), with no per-grade object and no
aggregation. The kept tables cannot answer the others, a batch's worth at a time:

- a reviewed response: the kept effective scores (``effective_run_scores``,
  ``effective_panel_scores``) hold the score and the error but not the effective raw score
  the record carries, so its grade is aggregated again from the rows just read and the
  kept decisions (storage/export_reviewed.py); for a viewer who may not see every verdict,
  through the per-grade builder (storage/export_records.py), which reads what they may see;
- a panel's unsettled response (``panels.unsettled``: a member still grading it, or stored
  under another tie rule): its stored decision is not the one read (``panel_results``).

The records are those of the per-grade builder, key for key (tests/storage/
test_export_rows.py compares the exports byte for byte)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from storage import export_lines as lines
from storage import export_records as old
from storage import export_reviewed as effective_rows
from storage import models as m
from storage.dto import CriterionInfo, RubricVersionInfo
from storage.engine import SessionFactory
from storage.export_names import response_key
from storage.services import calibration, panels, reviews
from storage.services import rubrics as rubric_service
from storage.services import runs as run_service
from storage.services.blindness import EVERYTHING, Sight
from storage.services.panel_results import member_models, panel_results
from storage.services.panel_upkeep import GRADES, VERDICTS

PAGE = 2000
# The batches are read through the session's connection: plain Core rows, without the ORM's
# per-row loading (the columns are all this reads).
_SEEN = 4096  # distinct vote patterns remembered per panel (memory stays flat)


class _Response(NamedTuple):
    """The response as uploaded, as the per-grade builder reads a ``ResponseInfo``."""

    id: int
    external_id: str | None
    query: str | None
    output: str
    thinking: str | None
    reference: str | None
    metadata: dict[str, Any] | None


_RESPONSE = (m.ResponseRow.id, m.ResponseRow.external_id, m.ResponseRow.query,
             m.ResponseRow.output, m.ResponseRow.thinking, m.ResponseRow.reference,
             m.ResponseRow.meta)


def _texts(record: dict[str, Any], response: _Response) -> dict[str, Any]:
    """``export_records.with_response`` for a record whose criteria come last."""
    criteria = record.pop("criteria")
    record["query"] = response.query
    record["response_text"] = response.output
    record["thinking"] = response.thinking
    record["reference"] = response.reference
    record["upload"] = dict(response.metadata or {})
    record["criteria"] = criteria
    return record


def _static(criteria: Sequence[CriterionInfo]) -> list[tuple[int, dict[str, Any]]]:
    """Per criterion of the version, in its order: its id and the record's fixed fields."""
    return [(c.id, {"criterion_id": c.id, "name": c.label, "requirement": c.requirement,
                    "weight": c.weight}) for c in criteria]


def _reviewed(session: Session, version_id: int, first: int, last: int) -> set[int]:
    """The responses in [first, last] with a decision under the version (any viewer's)."""
    ev = m.EffectiveVerdictRow
    return set(session.connection().scalars(
        select(ev.response_id).distinct()
        .where(ev.rubric_version_id == version_id, ev.response_id >= first,
               ev.response_id <= last)))


def run_records(sessions: SessionFactory, run_ids: Sequence[int], *,
                sight: Sight = EVERYTHING, page: int = PAGE, as_json: bool = False
                ) -> Iterator[dict[str, Any] | str]:
    """Every graded response's record of each run, in response order, ``page`` grades at a
    time (``export_records.iter_result_records``' records; ``as_json``: each as its JSON
    text, ``json.dumps`` of the record)."""
    for run_id in run_ids:
        run = run_service.get_run(sessions, run_id)
        version = rubric_service.get_version(sessions, run.rubric_version_id)
        used = {e.response_id for e in calibration.list_run_examples(sessions, run_id)}
        calibrated = run.settings.calibration
        head = {"run_id": run.id, "run_name": run.name}
        scope = {"dataset_id": run.dataset_id, "rubric_id": version.rubric_id,
                 "rubric_name": version.rubric_name, "rubric_version_id": version.id,
                 "rubric_version": version.number, "grader": run.grader, "model": run.model}
        static = _static(version.criteria)
        if as_json:
            prefixes = lines.criterion_prefixes(version.criteria)
            head_json, scope_json = "{" + lines.fields(head), lines.fields(scope)
            shown = {flag: ", " + lines.fields({
                "calibration_k": calibrated.k if calibrated else None,
                "calibration_seed": calibrated.seed if calibrated else None,
                "shown_as_example": flag if calibrated else None}) for flag in (False, True)}
        after = 0
        while True:
            with sessions() as session:
                grades = _grade_page(session, run_id, after, page)
                if not grades:
                    break
                first, last = grades[0][1], grades[-1][1]
                judged = _judged(session, run_id, first, last)
                reviewed = _reviewed(session, version.id, first, last)
                # Reviewed: no effective raw score is kept, so these few are aggregated
                # again (from the kept decisions; a blind viewer's through the old builder).
                if reviewed and sight.sees_all:
                    redone = effective_rows.run_grades(
                        session, run, version, [g for g in grades if g[1] in reviewed],
                        judged)
            if reviewed and not sight.sees_all:  # what this viewer may see of each
                redone = {e.response_id: e for e in reviews.effective_grades_for_run(
                    sessions, run_id, sorted(reviewed), sight=sight)}
            elif not reviewed:
                redone = {}
            for grade_id, rid, score, raw, error, _penalty, *texts in grades:
                response = _Response(rid, *texts)
                if rid in redone:
                    record = old.with_response(
                        old._record(run, version, response, redone[rid], used), response)
                    yield json.dumps(record, ensure_ascii=False) if as_json else record
                    continue
                per = judged.get(grade_id, {})
                if as_json:
                    ids, scores = lines.figures(response_key(rid, response.external_id), rid,
                                                score, raw, error)
                    yield "".join((head_json, ids, scope_json, scores, shown[rid in used],
                                   lines.texts(*texts[1:]), ', "criteria": [',
                                   ", ".join(_judge_line(prefix, per.get(cid))
                                             for cid, prefix in prefixes), "]}"))
                    continue
                record = {
                    **head, "response_id": response_key(rid, response.external_id),
                    "workbench_response_id": rid, **scope,
                    "score": score, "raw_score": raw, "effective_score": score,
                    "effective_raw_score": raw, "error": error, "reviewed_criteria": 0,
                    "disputed_count": 0, "disputed_criteria": [],
                    "calibration_k": calibrated.k if calibrated else None,
                    "calibration_seed": calibrated.seed if calibrated else None,
                    "shown_as_example": (rid in used) if calibrated else None,
                    "query": response.query, "response_text": response.output,
                    "thinking": response.thinking, "reference": response.reference,
                    "upload": dict(response.metadata or {}),
                    "criteria": [_judge_criterion(fixed, per.get(cid)) for cid, fixed in static],
                }
                yield record
            after = last


def _grade_page(session: Session, run_id: int, after: int, page: int) -> list[tuple]:
    """(grade id, response id, score, raw score, error, length penalty, then the response's
    columns) of the run's next ``page`` grades above response ``after``."""
    g = m.GradeRow
    return session.connection().execute(
        select(g.id, g.response_id, g.score, g.raw_score, g.error, g.length_penalty,
               *_RESPONSE[1:])
        .join(m.ResponseRow, m.ResponseRow.id == g.response_id)
        .where(g.run_id == run_id, g.response_id > after)
        .order_by(g.response_id).limit(page)).all()


def _judged(session: Session, run_id: int, first: int, last: int
            ) -> dict[int, dict[int, tuple]]:
    """Grade -> criterion -> (verdict, option, reason, error) of the run's grades of the
    responses in [first, last]."""
    g, gc = m.GradeRow, m.GradeCriterionRow
    found: dict[int, dict[int, tuple]] = {}
    for grade_id, cid, *judge in session.connection().execute(
            select(gc.grade_id, gc.criterion_id, gc.verdict, gc.option, gc.reason, gc.error)
            .join(g, g.id == gc.grade_id)
            .where(g.run_id == run_id, g.response_id >= first, g.response_id <= last)).all():
        found.setdefault(grade_id, {})[cid] = judge
    return found


def _judge_line(prefix: str, judge: tuple | None) -> str:
    if judge is None:
        return lines.judge_criterion(prefix, None, "", None)
    verdict, option, reason, error = judge
    return lines.judge_criterion(prefix, option if option is not None else verdict, reason,
                                 error)


def _judge_criterion(fixed: dict[str, Any], judge: tuple | None) -> dict[str, Any]:
    """A criterion nobody reviewed: the judge's verdict (or option) is the one in effect."""
    if judge is None:
        choice, reason, error = None, "", None
    else:
        verdict, option, reason, error = judge
        choice = option if option is not None else verdict
    return {**fixed, "judge_verdict": choice, "reason": reason, "judge_error": error,
            "human_verdict": None, "human_note": None, "effective_verdict": choice,
            "reviewer": None, "human_status": "not_reviewed"}


def panel_records(sessions: SessionFactory, panel_ids: Sequence[int], *,
                  sight: Sight = EVERYTHING, page: int = PAGE, as_json: bool = False
                  ) -> Iterator[dict[str, Any] | str]:
    """Every response some member graded, per panel, from the stored decisions
    (``export_records.iter_panel_records``' records; ``as_json``: as their JSON text)."""
    for panel_id in panel_ids:
        panel = panels.get_panel(sessions, panel_id)
        version = rubric_service.get_version(sessions, panel.rubric_version_id)
        with sessions() as session:
            unsettled = set(panels.unsettled(session, panel_id))  # refuses one being built
        fixed = _panel_fixed(panel, version)
        static = _static(version.criteria)
        members = [member.run.id for member in panel.members]
        seen: dict[Any, str] = {}  # stored votes -> the members' verdicts as written
        if as_json:
            prefixes = lines.criterion_prefixes(version.criteria)
            head_json = "{" + lines.fields(fixed["head"])
            scope_json = lines.fields(fixed["scope"])
            members_json = ", " + lines.fields(fixed["members"]) + ', "ties": '
            calibration_json = (", " + lines.fields(fixed["calibration"])
                                if fixed["calibration"] else "")
        after = 0
        while True:
            with sessions() as session:
                grades = _panel_page(session, panel_id, after, page)
                if not grades:
                    break
                first, last = grades[0][0], grades[-1][0]
                decided = _panel_verdicts(session, panel_id, first, last)
                redo = _reviewed(session, version.id, first, last)
                redone = {}
                # Reviewed (no effective raw score kept) and settled: aggregated again from
                # the stored decisions and people's kept ones; unsettled ones (a member
                # still grading: ``panel_results.any_unsettled``) and a blind viewer's
                # reviewed ones through ``panel_results``, which decides them as read.
                if sight.sees_all:
                    redone = effective_rows.panel_results(
                        session, panel, version, sorted(redo - unsettled))
            redo = (redo | {g[0] for g in grades if g[0] in unsettled}) - set(redone)
            if redo:
                redone.update((r.response_id, r) for r in panel_results(
                    sessions, panel_id, sorted(redo), sight=sight))
            for rid, score, raw, error, cost, *texts in grades:
                response = _Response(rid, *texts)
                if rid in redone:
                    record = old.with_response(
                        old._panel_record(redone[rid], version, response), response)
                    yield json.dumps(record, ensure_ascii=False) if as_json else record
                    continue
                per = decided[rid]
                rows = [per[cid] for cid, _fixed in static]
                if as_json:
                    ids, scores = lines.figures(response_key(rid, response.external_id), rid,
                                                score, raw, error)
                    yield "".join((
                        head_json, ids, scope_json, scores, members_json,
                        str(sum(1 for row in rows if row[2])), ', "cost": ', lines.value(cost),
                        ', "complete": true, "pending_members": ""', calibration_json,
                        lines.texts(*texts[1:]), ', "criteria": [',
                        ", ".join(_panel_line(prefix, row, members, seen)
                                  for (_cid, prefix), row in zip(prefixes, rows, strict=True)),
                        "]}"))
                    continue
                record = {
                    **fixed["head"], "response_id": response_key(rid, response.external_id),
                    "workbench_response_id": rid, **fixed["scope"],
                    "score": score, "raw_score": raw, "effective_score": score,
                    "effective_raw_score": raw, "error": error, "reviewed_criteria": 0,
                    "disputed_count": 0, "disputed_criteria": [], **fixed["members"],
                    "ties": sum(1 for row in rows if row[2]), "cost": cost,
                    "complete": True, "pending_members": "", **fixed["calibration"],
                    "query": response.query, "response_text": response.output,
                    "thinking": response.thinking, "reference": response.reference,
                    "upload": dict(response.metadata or {}),
                    "criteria": [_panel_criterion(item[1], row, members, seen)
                                 for item, row in zip(static, rows, strict=True)],
                }
                yield record
            after = last


def _panel_fixed(panel: panels.PanelInfo, version: RubricVersionInfo) -> dict[str, dict]:
    """The fields every record of the panel shares, in the per-grade builder's order."""
    calibration_of = {}
    calibrations = {member.run.settings.calibration for member in panel.members}
    if len(calibrations) == 1 and (calibrated := calibrations.pop()) is not None:
        calibration_of = {"calibration_k": calibrated.k, "calibration_seed": calibrated.seed}
    return {
        "head": {"run_id": None, "run_name": panel.label},
        "scope": {"dataset_id": panel.dataset_id, "rubric_id": version.rubric_id,
                  "rubric_name": version.rubric_name, "rubric_version_id": version.id,
                  "rubric_version": version.number, "grader": "panel",
                  "model": member_models(panel)},
        "members": {"panel_id": panel.id,
                    "member_runs": " ".join(str(member.run.id) for member in panel.members)},
        "calibration": calibration_of,
    }


def _panel_page(session: Session, panel_id: int, after: int, page: int) -> list[tuple]:
    """(response id, score, raw score, error, cost, then the response's columns) of the
    panel's next ``page`` stored grades above response ``after``."""
    g = GRADES.c
    return session.connection().execute(
        select(g.response_id, g.score, g.raw_score, g.error, g.cost, *_RESPONSE[1:])
        .join(m.ResponseRow, m.ResponseRow.id == g.response_id)
        .where(g.panel_id == panel_id, g.response_id > after)
        .order_by(g.response_id).limit(page)).all()


def _panel_verdicts(session: Session, panel_id: int, first: int, last: int
                    ) -> dict[int, dict[int, tuple]]:
    """Response -> criterion -> (verdict, option, tie, note, votes) in [first, last]."""
    v = VERDICTS.c
    found: dict[int, dict[int, tuple]] = {}
    for rid, cid, *decision in session.connection().execute(
            select(v.response_id, v.criterion_id, v.verdict, v.option, v.tie, v.note,
                   cast(v.votes, Text))
            .where(v.panel_id == panel_id, v.response_id >= first, v.response_id <= last)
            ).all():
        found.setdefault(rid, {})[cid] = decision
    return found


def _vote(vote: Any) -> str | None:
    """A member's stored choice as the record shows it (``panel_upkeep.decode_vote``)."""
    if vote is None:
        return None
    return str(vote[0] if isinstance(vote, list) else vote)


def _members(members: list[int], votes: Any, seen: dict[Any, str]) -> str:
    """``#3:MET #4:failed``: each member's stored choice (``votes``: as stored, JSON text
    on most drivers, so the few distinct patterns are decoded once each)."""
    found = seen.get(votes) if type(votes) is str else None
    if found is None:
        decoded = json.loads(votes) if type(votes) is str else votes
        found = " ".join(f"#{run_id}:{_vote(vote) or 'failed'}"
                         for run_id, vote in zip(members, decoded, strict=True))
        if type(votes) is str and len(seen) < _SEEN:
            seen[votes] = found
    return found


def _panel_line(prefix: str, row: tuple, members: list[int], seen: dict[Any, str]) -> str:
    verdict, option, tie, note, votes = row
    return lines.panel_criterion(
        prefix, option if option is not None else verdict, note,
        None if verdict is not None else "every member failed: no verdict", tie,
        _members(members, votes, seen))


def _panel_criterion(fixed: dict[str, Any], row: tuple, members: list[int],
                     seen: dict[Any, str]) -> dict[str, Any]:
    """A settled decision nobody reviewed: the panel's verdict is the one in effect; a
    member without a verdict failed (none is still grading a settled response)."""
    verdict, option, tie, note, votes = row
    choice = option if option is not None else verdict
    return {**fixed, "judge_verdict": choice, "reason": note,
            "judge_error": None if verdict is not None else "every member failed: no verdict",
            "human_verdict": None, "human_note": None, "effective_verdict": choice,
            "reviewer": None, "human_status": "not_reviewed", "tie": tie,
            "members": _members(members, votes, seen)}


def records(sessions: SessionFactory, run_ids: Sequence[int], panel_ids: Sequence[int],
            sight: Sight = EVERYTHING, page: int = PAGE, *, as_json: bool = False
            ) -> Iterator[dict[str, Any] | str]:
    """Every record of the export: the runs', then the panels' (``as_json``: as the JSON
    text ``json.dumps`` gives of each)."""
    yield from run_records(sessions, run_ids, sight=sight, page=page, as_json=as_json)
    yield from panel_records(sessions, panel_ids, sight=sight, page=page, as_json=as_json)
