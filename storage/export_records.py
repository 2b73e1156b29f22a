"""Results export records built per grade (the builder the exports used before issue 41's
row-based reader, storage/export_rows.py): each run's grades through
``reviews.effective_grades_for_run`` (``compute_effective_grade`` per grade), each panel's
through ``panel_results``. The row-based reader falls back on these where the kept tables
cannot answer (a reviewed response, a panel's unsettled decision); tests compare the two
byte for byte (tests/storage/recomputed.py swaps them)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from storage.dto import EffectiveGrade, ResponseInfo, RubricVersionInfo, RunInfo
from storage.engine import SessionFactory
from storage.export_names import response_key
from storage.services import calibration, panels, reviews
from storage.services import datasets as dataset_service
from storage.services import rubrics as rubric_service
from storage.services import runs as run_service
from storage.services.blindness import EVERYTHING, Sight
from storage.services.panel_results import PanelResult, member_models, panel_results

_PAGE = 500

def with_response(record: dict[str, Any], response: ResponseInfo) -> dict[str, Any]:
    """The record with the response's texts and the upload's own columns, before its
    criteria."""
    criteria = record.pop("criteria")
    record.update({"query": response.query, "response_text": response.output,
                   "thinking": response.thinking, "reference": response.reference,
                   "upload": dict(response.metadata or {}), "criteria": criteria})
    return record


def _value(verdict: Any) -> str | None:
    return None if verdict is None else str(verdict.value if hasattr(verdict, "value") else verdict)


def _record(run: RunInfo, version: RubricVersionInfo, response: ResponseInfo,
            effective: EffectiveGrade, used: set[int] | None = None) -> dict[str, Any]:
    by_id = {c.id: c for c in version.criteria}
    calibrated = run.settings.calibration
    return {
        "run_id": run.id, "run_name": run.name,
        "response_id": response_key(response.id, response.external_id),
        "workbench_response_id": response.id, "dataset_id": run.dataset_id,
        "rubric_id": version.rubric_id, "rubric_name": version.rubric_name,
        "rubric_version_id": version.id, "rubric_version": version.number,
        "grader": run.grader, "model": run.model,
        "score": effective.judge_score, "raw_score": effective.judge_raw_score,
        "effective_score": effective.score, "effective_raw_score": effective.raw_score,
        "error": effective.error, "reviewed_criteria": effective.reviewed_count,
        "disputed_count": effective.disputed_count,
        "disputed_criteria": [row.label for row in effective.criteria if row.disputed],
        # A calibrated run: its k and seed, and whether this response was one of the
        # reviewed examples it showed (left out of its agreement with people).
        "calibration_k": calibrated.k if calibrated else None,
        "calibration_seed": calibrated.seed if calibrated else None,
        "shown_as_example": (response.id in (used or set())) if calibrated else None,
        "criteria": [_criterion_record(row, by_id) for row in effective.criteria],
    }


def _criterion_record(row, by_id: dict) -> dict[str, Any]:
    """One criterion of a record: the judge's verdict, people's, and the one in effect (an
    option label on a multi-choice criterion)."""
    criterion = by_id[row.criterion_id]
    return {
        "criterion_id": row.criterion_id, "name": row.label,
        "requirement": criterion.requirement,
        "weight": criterion.weight,
        "judge_verdict": _value(row.judge_choice), "reason": row.judge_reason,
        "judge_error": row.judge_error,
        "human_verdict": _value(row.human.choice) if row.human else None,
        "human_note": row.human.note if row.human else None,
        "effective_verdict": _value(row.effective_choice),
        "reviewer": row.human.reviewer if row.human else None,
        "human_status": row.decision.status if row.decision else "not_reviewed",
    }


def _panel_record(result: PanelResult, version: RubricVersionInfo,
                  response: ResponseInfo) -> dict[str, Any]:
    panel = result.panel
    record = {
        "run_id": None, "run_name": panel.label,
        "response_id": response_key(response.id, response.external_id),
        "workbench_response_id": response.id, "dataset_id": panel.dataset_id,
        "rubric_id": version.rubric_id, "rubric_name": version.rubric_name,
        "rubric_version_id": version.id, "rubric_version": version.number,
        "grader": "panel", "model": member_models(panel),
        "score": result.effective.judge_score,
        "raw_score": result.effective.judge_raw_score,
        "effective_score": result.effective.score,
        "effective_raw_score": result.effective.raw_score, "error": result.effective.error,
        "reviewed_criteria": result.effective.reviewed_count,
        "disputed_count": result.effective.disputed_count,
        "disputed_criteria": [row.label for row in result.effective.criteria if row.disputed],
        "panel_id": panel.id, "member_runs": " ".join(str(m.run.id) for m in panel.members),
        "ties": result.ties, "cost": result.grade.cost,
        # False while a member run is still grading this response: its undecided criteria
        # and missing score are not failures, and may change once the members finish.
        "complete": result.grade.complete,
        "pending_members": " ".join(str(run_id) for run_id in result.grade.pending_members),
    }
    # members calibrated alike (a panel graded with --calibrate): the panel's k and seed
    calibrations = {m.run.settings.calibration for m in panel.members}
    if len(calibrations) == 1 and (calibrated := calibrations.pop()) is not None:
        record["calibration_k"], record["calibration_seed"] = calibrated.k, calibrated.seed
    by_id = {c.id: c for c in version.criteria}

    def _missing(run_id: int) -> str:
        return "pending" if run_id in result.grade.pending_members else "failed"

    decided = {row.criterion_id: row for row in result.grade.criteria}
    record["criteria"] = [
        {
            **_criterion_record(row, by_id),
            "tie": decided[row.criterion_id].decision.tie,
            "members": " ".join(
                f"#{m.run.id}:{_value(v) or _missing(m.run.id)}" for m, v in
                zip(panel.members, decided[row.criterion_id].member_verdicts, strict=True)),
        }
        for row in result.effective.criteria
    ]
    return record


def iter_panel_records(sessions: SessionFactory, panel_ids: Sequence[int], *,
                       sight: Sight = EVERYTHING) -> Iterator[dict[str, Any]]:
    """Records of every response a panel's members graded, like a run's, a page of
    responses at a time (never all of a large panel's results in memory)."""
    for panel_id in panel_ids:
        panel = panels.get_panel(sessions, panel_id)
        version = rubric_service.get_version(sessions, panel.rubric_version_id)
        for ids in panels.iter_graded_ids(sessions, panel_id, _PAGE):
            page = panel_results(sessions, panel_id, ids, sight=sight)
            responses = {r.id: r for r in dataset_service.get_responses(
                sessions, [p.response_id for p in page])}
            for result in page:
                response = responses[result.response_id]
                yield with_response(_panel_record(result, version, response), response)


def iter_result_records(sessions: SessionFactory, run_ids: Sequence[int], *,
                        sight: Sight = EVERYTHING) -> Iterator[dict[str, Any]]:
    """Records of every graded response of each run, a page of grades at a time, with the
    human verdicts ``sight`` may see (storage/services/blindness.py)."""
    for run_id in run_ids:
        run = run_service.get_run(sessions, run_id)
        version = rubric_service.get_version(sessions, run.rubric_version_id)
        used = {e.response_id for e in calibration.list_run_examples(sessions, run_id)}
        for page in run_service.iter_graded_ids(sessions, run_id, _PAGE):
            responses = {r.id: r for r in dataset_service.get_responses(sessions, page)}
            for effective in reviews.effective_grades_for_run(sessions, run_id, page,
                                                              sight=sight):
                response = responses[effective.response_id]
                yield with_response(_record(run, version, response, effective, used), response)


def records(sessions: SessionFactory, run_ids: Sequence[int], panel_ids: Sequence[int],
            sight: Sight = EVERYTHING, page: int = _PAGE, *, as_json: bool = False,
            csv: Any = None) -> Iterator[dict[str, Any] | str]:
    """Every record of the export as built per grade: the runs', then the panels'
    (``page`` is the row-based reader's batch size; this builder pages by ``_PAGE``;
    ``as_json``: each as ``json.dumps`` of it; ``csv``, the row-based reader's CSV layout,
    is not used: every record is one the writer lays out)."""
    found = chain(iter_result_records(sessions, run_ids, sight=sight),
                  iter_panel_records(sessions, panel_ids, sight=sight))
    for record in found:
        yield json.dumps(record, ensure_ascii=False) if as_json else record
