"""Results export records read as rows (issue 41): a run's grades and the responses as
uploaded, with their criteria pivoted per grade, then a panel's stored decisions
(``panel_grades`` / ``panel_verdicts``) likewise, in large batches ordered by response id
(storage/export_sql.py).

A response nobody reviewed under the version (no row in ``effective_verdicts``) has an
effective grade that is the judge's (or the panel's) own: its record is written straight
from the columns, with no per-grade object and no aggregation: for JSONL from the texts the
database wrote as JSON (storage/export_lines.py), for CSV as its row
(storage/export_csv.py). The kept tables cannot answer the others, a batch's worth at a
time:

- a reviewed response: the kept effective scores (``effective_run_scores``,
  ``effective_panel_scores``) hold the score and the error but not the effective raw score
  the record carries, so its grade is aggregated again from its rows and the kept decisions
  (storage/export_reviewed.py); for a viewer who may not see every verdict, through the
  per-grade builder (storage/export_records.py), which reads what they may see;
- a panel's unsettled response (``panels.unsettled``: a member still grading it, or stored
  under another tie rule): its stored decision is not the one read (``panel_results``).

The records are those of the per-grade builder, key for key (tests/storage/
test_export_rows.py compares the exports byte for byte)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage import export_csv, export_sql
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

PAGE = 2000
# The batches are read through the session's connection: plain Core rows, without the ORM's
# per-row loading (the columns are all this reads).


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
                sight: Sight = EVERYTHING, page: int = PAGE, as_json: bool = False,
                csv: export_csv.Cells | None = None) -> Iterator[dict[str, Any] | str]:
    """Every graded response's record of each run, in response order, ``page`` grades at a
    time (``export_records.iter_result_records``' records; ``as_json``: each as its JSON
    text, ``json.dumps`` of the record; ``csv``: a record nobody reviewed as its CSV line,
    spreadsheet-safe)."""
    dialect = export_sql.dialect_of(sessions)
    for run_id in run_ids:
        run = run_service.get_run(sessions, run_id)
        version = rubric_service.get_version(sessions, run.rubric_version_id)
        used = {e.response_id for e in calibration.list_run_examples(sessions, run_id)}
        calibrated = run.settings.calibration
        head = {"run_id": run.id, "run_name": run.name}
        scope = {"dataset_id": run.dataset_id, "rubric_id": version.rubric_id,
                 "rubric_name": version.rubric_name, "rubric_version_id": version.id,
                 "rubric_version": version.number, "grader": run.grader, "model": run.model}
        shown = {flag: {"calibration_k": calibrated.k if calibrated else None,
                        "calibration_seed": calibrated.seed if calibrated else None,
                        "shown_as_example": flag if calibrated else None}
                 for flag in (False, True)}
        criteria = version.criteria
        batches = export_sql.RunBatches(dialect, run_id, criteria, as_json=as_json)
        if as_json:
            head_json, scope_json = "{" + lines.fields(head), lines.fields(scope)
            shown_json = {flag: ", " + lines.fields(fields) for flag, fields in shown.items()}
        elif csv is not None:
            rows = {flag: csv.run({**head, **scope, **fields}, criteria)
                    for flag, fields in shown.items()}
        static = _static(criteria)
        after = 0
        while True:
            with sessions() as session:
                grades = batches.next_page(session, after, page)
                if not grades:
                    break
                first, last = grades[0][0], grades[-1][0]
                reviewed = _reviewed(session, version.id, first, last)
                judged = batches.criteria_of(session, first, last)
                # Reviewed: no effective raw score is kept, so these few are aggregated
                # again (from the kept decisions; a blind viewer's through the old builder),
                # from their rows as read before.
                redone, responses = {}, {}
                if reviewed:
                    rows_of = _grade_rows(session, run_id, reviewed)
                    responses = {row[1]: _Response(row[1], *row[6:]) for row in rows_of}
                    if sight.sees_all:
                        redone = effective_rows.run_grades(
                            session, run, version, rows_of,
                            _judged(session, [row[0] for row in rows_of]))
            if reviewed and not sight.sees_all:  # what this viewer may see of each
                redone = {e.response_id: e for e in reviews.effective_grades_for_run(
                    sessions, run_id, sorted(reviewed), sight=sight)}
            for rid, score, raw, error, *texts in grades:
                if rid in redone:
                    response = responses[rid]
                    record = old.with_response(
                        old._record(run, version, response, redone[rid], used), response)
                    yield lines.dumps(record) if as_json else record
                elif as_json:
                    key, quoted_texts, upload = texts
                    yield lines.run_line(head_json, key, rid, scope_json, score, raw, error,
                                         shown_json[rid in used], quoted_texts, upload,
                                         judged.get(rid, batches.missing))
                elif csv is not None:
                    external, *uploaded, meta = texts
                    yield rows[rid in used].line(
                        (response_key(rid, external), rid, score, raw, error, *uploaded),
                        meta, judged.get(rid, batches.missing))
                else:
                    yield _run_record(head, scope, shown[rid in used], static,
                                      _Response(rid, *texts), score, raw, error,
                                      judged.get(rid, batches.missing))
            after = last


def _run_record(head: dict, scope: dict, shown: dict, static: list, response: _Response,
                score: Any, raw: Any, error: Any, cells: Sequence[Any]) -> dict[str, Any]:
    """A run's record nobody reviewed, from its columns (``cells``: ``run_cells``')."""
    return {
        **head, "response_id": response_key(response.id, response.external_id),
        "workbench_response_id": response.id, **scope,
        "score": score, "raw_score": raw, "effective_score": score,
        "effective_raw_score": raw, "error": error, "reviewed_criteria": 0,
        "disputed_count": 0, "disputed_criteria": [], **shown,
        "query": response.query, "response_text": response.output,
        "thinking": response.thinking, "reference": response.reference,
        "upload": dict(response.metadata or {}),
        "criteria": [_judge_criterion(fixed, *cells[3 * n:3 * n + 3])
                     for n, (_cid, fixed) in enumerate(static)],
    }


def _grade_rows(session: Session, run_id: int, response_ids: Iterable[int]) -> list[tuple]:
    """(grade id, response id, score, raw score, error, length penalty, then the response's
    columns) of the run's grades of these responses, in response order."""
    g = m.GradeRow
    return session.connection().execute(
        select(g.id, g.response_id, g.score, g.raw_score, g.error, g.length_penalty,
               *_RESPONSE[1:])
        .join(m.ResponseRow, m.ResponseRow.id == g.response_id)
        .where(g.run_id == run_id, g.response_id.in_(sorted(response_ids)))
        .order_by(g.response_id)).all()


def _judged(session: Session, grade_ids: Sequence[int]) -> dict[int, dict[int, tuple]]:
    """Grade -> criterion -> (verdict, option, reason, error) of these grades."""
    gc = m.GradeCriterionRow
    found: dict[int, dict[int, tuple]] = {}
    for grade_id, cid, *judge in session.connection().execute(
            select(gc.grade_id, gc.criterion_id, gc.verdict, gc.option, gc.reason, gc.error)
            .where(gc.grade_id.in_(grade_ids))).all():
        found.setdefault(grade_id, {})[cid] = judge
    return found


def _judge_criterion(fixed: dict[str, Any], choice: str | None, reason: Any,
                     error: Any) -> dict[str, Any]:
    """A criterion nobody reviewed: the judge's verdict (or option) is the one in effect."""
    return {**fixed, "judge_verdict": choice, "reason": reason, "judge_error": error,
            "human_verdict": None, "human_note": None, "effective_verdict": choice,
            "reviewer": None, "human_status": "not_reviewed"}


def panel_records(sessions: SessionFactory, panel_ids: Sequence[int], *,
                  sight: Sight = EVERYTHING, page: int = PAGE, as_json: bool = False,
                  csv: export_csv.Cells | None = None
                  ) -> Iterator[dict[str, Any] | str]:
    """Every response some member graded, per panel, from the stored decisions
    (``export_records.iter_panel_records``' records; ``as_json`` and ``csv`` as in
    ``run_records``)."""
    dialect = export_sql.dialect_of(sessions)
    for panel_id in panel_ids:
        panel = panels.get_panel(sessions, panel_id)
        version = rubric_service.get_version(sessions, panel.rubric_version_id)
        with sessions() as session:
            unsettled = set(panels.unsettled(session, panel_id))  # refuses one being built
        fixed = _panel_fixed(panel, version)
        criteria = version.criteria
        members = [member.run.id for member in panel.members]
        batches = export_sql.PanelBatches(dialect, panel_id, criteria, members,
                                          as_json=as_json)
        if as_json:
            head_json = "{" + lines.fields(fixed["head"])
            scope_json = lines.fields(fixed["scope"])
            members_json = ", " + lines.fields(fixed["members"]) + ', "ties": '
            calibration_json = (", " + lines.fields(fixed["calibration"])
                                if fixed["calibration"] else "")
        elif csv is not None:
            template = csv.panel({**fixed["head"], **fixed["scope"], **fixed["members"],
                                  **fixed["calibration"]}, criteria)
        static = _static(criteria)
        after = 0
        while True:
            with sessions() as session:
                grades = batches.next_page(session, after, page)
                if not grades:
                    break
                first, last = grades[0][0], grades[-1][0]
                decided = batches.criteria_of(session, first, last)
                reviewed = _reviewed(session, version.id, first, last)
                # Built per grade, through ``panel_results`` which decides them as read: the
                # unsettled (a member still grading: ``panel_results.any_unsettled``), a
                # blind viewer's reviewed ones, and any whose stored decisions are not whole
                # (none should be). Reviewed (no effective raw score kept) and settled:
                # aggregated again from the stored decisions and people's kept ones.
                odd = {g[0] for g in grades
                       if g[0] in unsettled or not batches.whole(decided.get(g[0]))}
                redone = {}
                if sight.sees_all:
                    redone = effective_rows.panel_results(
                        session, panel, version, sorted(reviewed - odd))
                responses = _responses(session, reviewed | odd)
            redo = (reviewed | odd) - set(redone)
            if redo:
                redone.update((r.response_id, r) for r in panel_results(
                    sessions, panel_id, sorted(redo), sight=sight))
            for rid, score, raw, error, cost, *texts in grades:
                if rid in redone:
                    response = responses[rid]
                    record = old.with_response(
                        old._panel_record(redone[rid], version, response), response)
                    yield lines.dumps(record) if as_json else record
                    continue
                ties, cells = decided[rid]
                if as_json:
                    key, quoted_texts, upload = texts
                    yield lines.panel_line(head_json, key, rid, scope_json, score, raw, error,
                                           members_json, ties, cost, calibration_json,
                                           quoted_texts, upload, cells)
                elif csv is not None:
                    external, *written, meta = texts
                    yield template.line(
                        (response_key(rid, external), rid, score, raw, error, *written, ties),
                        meta, cells)
                else:
                    yield _panel_record(fixed, static, _Response(rid, *texts), score, raw,
                                        error, cost, ties, cells)
            after = last


def _responses(session: Session, ids: Iterable[int]) -> dict[int, _Response]:
    """These responses as uploaded."""
    if not ids:
        return {}
    return {row[0]: _Response(*row) for row in session.connection().execute(
        select(*_RESPONSE).where(m.ResponseRow.id.in_(sorted(ids)))).all()}


def _panel_record(fixed: dict[str, dict], static: list, response: _Response, score: Any,
                  raw: Any, error: Any, cost: Any, ties: int, cells: Sequence[Any]
                  ) -> dict[str, Any]:
    """A panel's settled record nobody reviewed, from its columns (``cells``:
    ``export_sql.panel_cells``'): the panel's verdict is the one in effect; a member
    without a verdict failed (none is still grading a settled response)."""
    return {
        **fixed["head"], "response_id": response_key(response.id, response.external_id),
        "workbench_response_id": response.id, **fixed["scope"],
        "score": score, "raw_score": raw, "effective_score": score,
        "effective_raw_score": raw, "error": error, "reviewed_criteria": 0,
        "disputed_count": 0, "disputed_criteria": [], **fixed["members"],
        "ties": ties, "cost": cost, "complete": True, "pending_members": "",
        **fixed["calibration"],
        "query": response.query, "response_text": response.output,
        "thinking": response.thinking, "reference": response.reference,
        "upload": dict(response.metadata or {}),
        "criteria": [_panel_criterion(item, *cells[5 * n:5 * n + 5])
                     for n, (_cid, item) in enumerate(static)],
    }


def _panel_criterion(fixed: dict[str, Any], choice: str | None, note: str, error: str | None,
                     tie: str, members: str) -> dict[str, Any]:
    return {**fixed, "judge_verdict": choice, "reason": note, "judge_error": error,
            "human_verdict": None, "human_note": None, "effective_verdict": choice,
            "reviewer": None, "human_status": "not_reviewed", "tie": tie == "True",
            "members": members}


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


def records(sessions: SessionFactory, run_ids: Sequence[int], panel_ids: Sequence[int],
            sight: Sight = EVERYTHING, page: int = PAGE, *, as_json: bool = False,
            csv: export_csv.Cells | None = None) -> Iterator[dict[str, Any] | str]:
    """Every record of the export: the runs', then the panels' (``as_json``: as the JSON
    text ``json.dumps`` gives of each; ``csv``: those nobody reviewed as their CSV lines,
    the others as records)."""
    yield from run_records(sessions, run_ids, sight=sight, page=page, as_json=as_json,
                           csv=csv)
    yield from panel_records(sessions, panel_ids, sight=sight, page=page, as_json=as_json,
                             csv=csv)
