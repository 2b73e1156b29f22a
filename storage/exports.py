"""Results export: one record per response x run, as JSONL or CSV.

Each record has the ids (``response_id`` is the user's id, see storage/export_names.py),
the rubric version, grader and model, the judge's score and raw score, the effective score
(human verdicts in place of the judge's, through the same aggregation), and per criterion
the judge's verdict and reason, the human verdict, the effective verdict, the reviewer and how
the human verdict stands (``human_status``: agreed, adjudicated, disputed or not_reviewed, as in
the gold export); per record, the disputed criteria (``disputed_count``, ``disputed_criteria``:
reviewers disagree, no adjudication yet, the judge's verdict stands).
Every record also carries the response as uploaded, so the export joins with the user's data:
``query``, ``response_text``, ``thinking`` and the upload's own columns (kept per response as
its metadata) under ``upload`` in JSONL and as ``upload.<column>`` in CSV: a user column
``model`` is ``upload.model`` and never clashes with the judge's ``model``. A reference
answer mapped as the reference column is ``reference`` (the judge was shown it); one left
unmapped stays an upload column (``upload.<column>``). On a multi-choice criterion the
verdict fields hold the chosen option's label (``judge_verdict`` "Very good"), as
``grading.Rubric.compute_score`` takes them, and CANNOT_ASSESS when no option was named.
Used by ``rubric-workbench export`` and the app's download buttons. CSV cells go through
storage/csv_cells.py (spreadsheet-safe); JSONL is written exactly.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import IO, Any, Literal

from storage import csv_cells, export_parts, export_rows
from storage.dto import EffectiveGrade, ResponseInfo, RunInfo
from storage.engine import SessionFactory
from storage.export_csv import (  # noqa: F401  (the CSV's columns, named here as before)
    BASE_COLUMNS,
    CRITERION_FIELDS,
    NAME_SEPARATOR,
    PANEL_COLUMNS,
    PANEL_CRITERION_FIELDS,
    RESPONSE_COLUMNS,
    UPLOAD_PREFIX,
    Cells,
    Layout,
    cell,
    csv_columns,
    flatten,
)
from storage.export_files import to_temp_file
from storage.export_names import download_name, response_key
from storage.export_records import (  # noqa: F401  (the per-grade builder, as before)
    _panel_record,
    _record,
    iter_panel_records,
    iter_result_records,
    with_response,
)
from storage.id_chunks import id_chunks
from storage.services import calibration, panels
from storage.services import datasets as dataset_service
from storage.services import rubrics as rubric_service
from storage.services import runs as run_service
from storage.services.blindness import EVERYTHING, Sight
from storage.services.results import ResultsPage, upload_columns

ExportFormat = Literal["jsonl", "csv"]
EXPORT_FORMATS: tuple[str, ...] = ("jsonl", "csv")
# Responses per batch of the row-based reader (storage/export_rows.py), and per read of the
# Results table's responses.
_PAGE = 2000
_TABLE_PAGE = 500
# Where the records come from: read as rows (tests/storage/recomputed.py swaps in the
# per-grade builder, storage.export_records.records, to compare the two).
records = export_rows.records


def criterion_labels(sessions: SessionFactory, run_ids: Sequence[int],
                     panel_ids: Sequence[int] = ()) -> list[str]:
    """Criterion labels of the runs' (and panels') rubric versions, in order of first
    appearance."""
    labels: dict[str, None] = {}
    versions = [run_service.get_run(sessions, i).rubric_version_id for i in run_ids]
    versions += [panels.get_panel(sessions, i).rubric_version_id for i in panel_ids]
    for version_id in versions:
        for criterion in rubric_service.get_version(sessions, version_id).criteria:
            labels.setdefault(criterion.label)
    return list(labels)


def export_upload_columns(sessions: SessionFactory, run_ids: Sequence[int],
                          panel_ids: Sequence[int] = ()) -> list[str]:
    """The upload columns of the runs' (and panels') datasets."""
    datasets = [run_service.get_run(sessions, i).dataset_id for i in run_ids]
    datasets += [panels.get_panel(sessions, i).dataset_id for i in panel_ids]
    return upload_columns(sessions, datasets)


def write_results(sessions: SessionFactory, run_ids: Sequence[int], target: IO[str],
                  fmt: ExportFormat = "jsonl", panel_ids: Sequence[int] = (), *,
                  sight: Sight = EVERYTHING) -> int:
    """Write the runs' (then the panels') results to ``target`` as ``sight`` may see them;
    returns the number of records. A large export's later runs and panels are written by a
    second process meanwhile (storage/export_parts.py), the same bytes in the same order."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use csv or jsonl")
    for panel_id in panel_ids:  # a missing panel is refused before anything is written
        panels.get_panel(sessions, panel_id)

    columns = uploaded = None
    if fmt == "csv":
        uploaded = export_upload_columns(sessions, run_ids, panel_ids)
        columns = csv_columns(criterion_labels(sessions, run_ids, panel_ids), bool(panel_ids),
                              uploaded)
        csv_cells.writer(target).writerow(columns)
    mine, theirs = export_parts.split(sessions, run_ids, panel_ids)
    if theirs is None:
        return write_records(sessions, mine.run_ids, mine.panel_ids, target, fmt, sight,
                             columns, uploaded)
    with export_parts.later(sessions, theirs, fmt, sight, columns, uploaded) as rest:
        count = write_records(sessions, mine.run_ids, mine.panel_ids, target, fmt, sight,
                              columns, uploaded)
        return count + rest.copy_to(target)


def write_records(sessions: SessionFactory, run_ids: Sequence[int], panel_ids: Sequence[int],
                  target: IO[str], fmt: ExportFormat, sight: Sight,
                  columns: Sequence[str] | None, uploaded: Sequence[str] | None) -> int:
    """The runs' then the panels' records (no header), CSV in ``columns`` (with the upload
    columns ``uploaded``: ``write_results`` decides both from every run and panel
    exported); returns their number."""
    count = 0
    if fmt == "jsonl":
        for line in records(sessions, run_ids, panel_ids, sight, _PAGE, as_json=True):
            target.write(line + "\n")
            count += 1
        return count
    writer = csv_cells.writer(target)
    layout = Layout(columns)  # each record's cells as [flatten(record)[c] for c in columns]
    cells = Cells(columns, uploaded)
    # records nobody reviewed come as their CSV lines (storage/export_csv.Template); others
    # as records
    for item in records(sessions, run_ids, panel_ids, sight, _PAGE,
                        csv=cells if cells.usable else None):
        if type(item) is str:
            target.write(item)
        else:
            writer.writerow(layout.row(item))
        count += 1
    return count


def results_export(sessions: SessionFactory, run_ids: Sequence[int],
                   fmt: ExportFormat = "jsonl", panel_ids: Sequence[int] = (), *,
                   sight: Sight = EVERYTHING) -> str:
    """The export as text, as ``sight`` may see it (small exports and tests; the app
    downloads ``results_export_file``, byte for byte the same)."""
    buffer = io.StringIO(newline="")
    write_results(sessions, run_ids, buffer, fmt, panel_ids, sight=sight)
    return buffer.getvalue()


def results_export_file(sessions: SessionFactory, run_ids: Sequence[int],
                        fmt: ExportFormat = "jsonl", panel_ids: Sequence[int] = (), *,
                        sight: Sight = EVERYTHING) -> io.BufferedReader:
    """The export written a page at a time to a temporary file, open for reading (the
    app's download buttons): the UTF-8 bytes of ``results_export``."""
    return to_temp_file(lambda target: write_results(sessions, run_ids, target, fmt,
                                                     panel_ids, sight=sight))


EXAMPLE_COLUMNS = ("run_id", "criterion", "criterion_number", "role", "order", "response_id",
                   "workbench_response_id", "dataset", "verdict", "option", "reason",
                   "status", "carried_from_version")


def examples_records(sessions: SessionFactory, run_id: int) -> list[dict[str, Any]]:
    """What a calibrated run showed its judge: per criterion, each example (and reserve)
    with people's verdict (and, on a multi-choice criterion, the option they chose) and the
    reason shown; [] for a run without calibration."""
    return [{"run_id": run_id, "criterion": e.criterion_label,
             "criterion_number": e.criterion_position + 1, "role": e.role, "order": e.order,
             "response_id": e.response_label, "workbench_response_id": e.response_id,
             "dataset": e.dataset_name, "verdict": e.verdict, "option": e.option,
             "reason": e.reason,
             "status": e.status, "carried_from_version": e.carried_from}
            for e in calibration.list_run_examples(sessions, run_id)]


def examples_export(sessions: SessionFactory, run_id: int, fmt: ExportFormat = "jsonl") -> str:
    """The run's examples as text: JSONL, or a spreadsheet-safe CSV."""
    records = examples_records(sessions, run_id)
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    buffer = io.StringIO(newline="")
    writer = csv_cells.writer(buffer)
    writer.writerow(EXAMPLE_COLUMNS)
    for record in records:
        writer.writerow([record[c] for c in EXAMPLE_COLUMNS])
    return buffer.getvalue()


def table_responses(sessions: SessionFactory, page: ResultsPage) -> dict[int, ResponseInfo]:
    """The table's responses as uploaded (texts and own columns), a page at a time."""
    ids = [row.response_id for row in page.rows]
    found: dict[int, ResponseInfo] = {}
    for chunk in id_chunks(ids, _TABLE_PAGE):
        found.update((r.id, r) for r in dataset_service.get_responses(sessions, chunk))
    return found


def table_header(runs: Sequence[RunInfo], panel_labels: Sequence[str],
                 uploaded: Sequence[str], *, with_responses: bool) -> list[str]:
    """The Results table's CSV header (``table_csv``, storage.table_export)."""
    header = ["response_id", "workbench_response_id"]
    for label in [f"run{run.id}_{run.grader}_{run.model}" for run in runs] + list(panel_labels):
        header += [f"{label}_effective_score", f"{label}_judge_score", f"{label}_error"]
    tail = [*RESPONSE_COLUMNS, *(UPLOAD_PREFIX + c for c in uploaded)] if with_responses else []
    return [*header, "judge_failed", "judges_disagree", "reviewed_criteria", "disputed_count",
            "disputed_criteria", *tail]


def table_row(row, panel_grades: Sequence[dict[int, EffectiveGrade]],
              response: ResponseInfo | None, uploaded: Sequence[str]) -> list:
    """One response's cells of the Results table (``response``: as uploaded, or None)."""
    cells: list = [response_key(row.response_id, row.external_id), row.response_id]
    for score, judge, error in zip(row.scores, row.judge_scores, row.errors, strict=True):
        cells += ["" if score is None else score, "" if judge is None else judge, error or ""]
    for grades in panel_grades:
        grade = grades.get(row.response_id)
        cells += ["" if grade is None or grade.score is None else grade.score,
                  "" if grade is None or grade.judge_score is None else grade.judge_score,
                  "" if grade is None else grade.error or ""]
    if response is not None:
        meta = response.metadata or {}
        cells_after = [response.query, response.output, response.thinking, response.reference,
                       *(cell(meta.get(c)) for c in uploaded)]
    else:
        cells_after = []
    return [*cells, row.failed, row.disagree, row.reviewed_count, len(row.disputed),
            NAME_SEPARATOR.join(row.disputed), *cells_after]


def table_csv(page: ResultsPage, runs: Sequence[RunInfo],
              panel_scores: Sequence[tuple[str, dict[int, EffectiveGrade]]] = (),
              responses: dict[int, ResponseInfo] | None = None) -> str:
    """The Results table (every matching response, one column group per run, then per
    panel: ``(label, response id -> the panel's effective grade)``) as CSV text; with
    ``responses`` (``table_responses``), each row ends with the response as uploaded
    (``RESPONSE_COLUMNS``, then ``upload.<column>``). The app writes it a page at a time
    (storage.table_export), byte for byte the same."""
    uploaded: dict[str, None] = {}
    for response in (responses or {}).values():
        uploaded.update(dict.fromkeys(str(k) for k in response.metadata or {}))
    out = io.StringIO()
    writer = csv_cells.writer(out)
    writer.writerow(table_header(runs, [label for label, _ in panel_scores], list(uploaded),
                                 with_responses=bool(responses)))
    grades, columns = [g for _label, g in panel_scores], list(uploaded)
    for row in page.rows:
        writer.writerow(table_row(row, grades, responses[row.response_id] if responses
                                  else None, columns))
    return out.getvalue()


def results_file_name(sessions: SessionFactory, run_ids: Sequence[int], fmt: str,
                      panel_ids: Sequence[int] = ()) -> str:
    """``results-UX_50_replies-Dosing-v1.csv`` for the runs' dataset and rubric version
    (``results-runs-3-4.csv`` when the runs span several)."""
    scopes = {(r.dataset_id, r.rubric_version_id)
              for r in (run_service.get_run(sessions, i) for i in run_ids)}
    scopes |= {(p.dataset_id, p.rubric_version_id)
               for p in (panels.get_panel(sessions, i) for i in panel_ids)}
    if len(scopes) != 1:
        return download_name("results", "runs", "-".join(map(str, run_ids)), ext=fmt)
    [(dataset_id, version_id)] = scopes
    dataset = dataset_service.get_dataset(sessions, dataset_id)
    version = rubric_service.get_version(sessions, version_id)
    return download_name("results", dataset.name, version.rubric_name, version=version.number,
                         ext=fmt)
