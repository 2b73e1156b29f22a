"""The results export's CSV (storage/exports.py): its columns, a record laid out in them, and
the lines of the records nobody reviewed written straight from their cells
(storage/export_rows.py): the cells every record of a run or a panel shares written once
(``Template``), each record's own cells joined in their places (``csv_cells.csv_text``:
``csv.writer``'s text of a spreadsheet-safe cell, without a writer's pass over the hundred
cells of every row). Those lines are the record's ``Layout.row`` through the safe writer,
byte for byte (tests/storage/test_export_rows.py), whenever each column's name is its own
(``Cells`` says when it is not: every record then goes through its dict)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

from storage.csv_cells import csv_text, csv_texts
from storage.dto import CriterionInfo

BASE_COLUMNS = (
    "run_id", "run_name", "response_id", "workbench_response_id", "dataset_id", "rubric_id",
    "rubric_name", "rubric_version_id", "rubric_version", "grader", "model", "score",
    "raw_score", "effective_score", "effective_raw_score", "error", "reviewed_criteria",
    "disputed_count", "disputed_criteria",
    "calibration_k", "calibration_seed", "shown_as_example",
)
CRITERION_FIELDS = ("judge_verdict", "reason", "human_verdict", "effective_verdict", "reviewer",
                    "human_status")
# CSV: the disputed criteria's names in one cell
NAME_SEPARATOR = "; "
# A panel's record is a run's record plus these (run_id empty; the panel's verdict and how it
# was reached in judge_verdict and reason); the CSV has them only when a panel is exported.
PANEL_COLUMNS = ("panel_id", "member_runs", "ties", "complete", "pending_members")
PANEL_CRITERION_FIELDS = ("tie", "members")
# The response as uploaded (after the ids and scores, before the criteria), then its own
# columns, each as ``upload.<column>``.
RESPONSE_COLUMNS = ("query", "response_text", "thinking", "reference")
UPLOAD_PREFIX = "upload."


def cell(value: Any) -> Any:
    """An upload's value as one CSV cell: lists and objects as JSON."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def csv_columns(labels: Iterable[str], with_panels: bool = False,
                uploaded: Iterable[str] = ()) -> list[str]:
    fields = CRITERION_FIELDS + (PANEL_CRITERION_FIELDS if with_panels else ())
    base = BASE_COLUMNS + (PANEL_COLUMNS if with_panels else ())
    return [*base, *RESPONSE_COLUMNS, *(UPLOAD_PREFIX + column for column in uploaded),
            *(f"{label}.{name}" for label in labels for name in fields)]


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """A record as one CSV row: the per-criterion fields become ``<criterion>.<field>``."""
    row = {key: record.get(key) for key in BASE_COLUMNS + PANEL_COLUMNS + RESPONSE_COLUMNS}
    for column, value in (record.get("upload") or {}).items():
        row[UPLOAD_PREFIX + column] = cell(value)
    row["disputed_criteria"] = NAME_SEPARATOR.join(record.get("disputed_criteria") or ())
    for criterion in record["criteria"]:
        for name in CRITERION_FIELDS + PANEL_CRITERION_FIELDS:
            row[f"{criterion['name']}.{name}"] = criterion.get(name)
    return row


class Layout:
    """``flatten`` laid out in the CSV's columns, without a dict per row: the same cells
    (the last write of a column wins, as in the dict)."""

    def __init__(self, columns: Sequence[str]):
        self.width = len(columns)
        self.index: dict[str, list[int]] = {}
        for i, column in enumerate(columns):
            self.index.setdefault(column, []).append(i)
        self.base = [(key, self.index[key]) for key in
                     BASE_COLUMNS + PANEL_COLUMNS + RESPONSE_COLUMNS if key in self.index]
        self.disputed = self.index.get("disputed_criteria", [])
        self.fields: dict[str, list[tuple[str, list[int]]]] = {}

    def _fields(self, name: str) -> list[tuple[str, list[int]]]:
        found = self.fields.get(name)
        if found is None:
            found = self.fields[name] = [
                (field, self.index[f"{name}.{field}"])
                for field in CRITERION_FIELDS + PANEL_CRITERION_FIELDS
                if f"{name}.{field}" in self.index]
        return found

    def row(self, record: dict[str, Any]) -> list[Any]:
        row: list[Any] = [None] * self.width
        for key, at in self.base:
            for i in at:
                row[i] = record.get(key)
        for column, value in (record.get("upload") or {}).items():
            for i in self.index.get(UPLOAD_PREFIX + column, ()):
                row[i] = cell(value)
        for i in self.disputed:
            row[i] = NAME_SEPARATOR.join(record.get("disputed_criteria") or ())
        for criterion in record["criteria"]:
            for field, at in self._fields(criterion["name"]):
                for i in at:
                    row[i] = criterion.get(field)
        return row


# A record's own cells besides its criteria and upload, in the order Template.fill takes
# them: each value's columns (a figure is also the effective one: nobody reviewed it)
_OWN = (("response_id",), ("workbench_response_id",), ("score", "effective_score"),
        ("raw_score", "effective_raw_score"), ("error",), ("query",), ("response_text",),
        ("thinking",), ("reference",))
# a criterion's values, as storage/export_sql.py reads them: each value's fields
_RUN = (("judge_verdict", "effective_verdict"), ("reason",), ("judge_error",))
_PANEL = (*_RUN, ("tie",), ("members",))


class Template:
    """The CSV line of a run's or a panel's records nobody reviewed: its shared cells written
    once, between them the places of each record's own cells."""

    def __init__(self, cells: Cells, shared: dict[str, Any], own: Sequence[Sequence[str]],
                 criteria: Sequence[CriterionInfo], fields: Sequence[Sequence[str]]):
        at = cells.at
        fixed: list[Any] = [None] * cells.width
        for name, value in shared.items():
            if name in at:
                fixed[at[name]] = value
        for criterion in criteria:
            for name, value in (("human_verdict", None), ("reviewer", None),
                                ("human_status", "not_reviewed")):
                fixed[at[f"{criterion.label}.{name}"]] = value
        # each column's value, in the order ``line`` takes them: the ``own`` values, the
        # upload's, the criteria's (per criterion, flat); a later one wins a column, as the
        # record's dict's last write would (``Cells.usable``: none shares one)
        source: list[int | None] = [None] * cells.width
        taken = 0
        for names in own:
            for name in names:
                source[at[name]] = taken
            taken += 1
        self.uploads = list(cells.uploads)
        for column in self.uploads:
            source[cells.uploads[column]] = taken
            taken += 1
        for criterion in criteria:
            for names in fields:
                for name in names:  # ``judge_error`` is no column: its value goes nowhere
                    if (column := f"{criterion.label}.{name}") in at:
                        source[at[column]] = taken
                taken += 1
        self.taken = taken
        self.no_upload = (None,) * len(self.uploads)
        # the values that are some column's (each once), then each column's among them
        used = sorted({i for i in source if i is not None})
        self.used = itemgetter(*used)  # tuples: the ids and scores are always columns
        self.pick = itemgetter(*(used.index(i) for i in source if i is not None))
        self.format = ",".join(
            "%s" if i is not None else csv_text(value).replace("%", "%%")
            for i, value in zip(source, fixed, strict=True)) + "\r\n"

    def values(self, own: Sequence[Any], upload: dict[str, Any] | None,
               criteria: Sequence[Any]) -> tuple:
        """The values ``line`` writes, each once, in their order."""
        uploaded = ([cell(upload.get(column)) for column in self.uploads] if upload
                    else self.no_upload)
        values = (*own, *uploaded, *criteria)
        if len(values) != self.taken:
            raise ValueError(f"a record's row has {len(values)} values, not {self.taken}")
        return self.used(values)

    def line(self, own: Sequence[Any], upload: dict[str, Any] | None,
             criteria: Sequence[Any]) -> str:
        """The record's CSV line: the ``own`` values (as the template was made), the
        upload's, and the criteria's (per criterion, flat, as storage/export_sql.py reads
        them), each spreadsheet-safe."""
        return self.format % self.pick(csv_texts(self.values(own, upload, criteria)))


class Cells:
    """The export's columns, for rows built from cells: ``usable`` when each column's name
    is its own and every ``upload.`` column is an upload's (a criterion named ``upload``
    could write one, and the dict's last write would decide)."""

    def __init__(self, columns: Sequence[str], uploaded: Sequence[str]):
        self.width = len(columns)
        self.at = {column: i for i, column in enumerate(columns)}
        ours = {UPLOAD_PREFIX + column for column in uploaded}
        self.usable = len(self.at) == len(columns) and not any(
            column.startswith(UPLOAD_PREFIX) and column not in ours for column in columns)
        self.uploads = {column: self.at[UPLOAD_PREFIX + column] for column in uploaded
                        if UPLOAD_PREFIX + column in self.at}

    def run(self, shared: dict[str, Any], criteria: Sequence[CriterionInfo]) -> Template:
        """A run's records: ``fill`` takes ``_OWN``'s values; per criterion its choice,
        reason and error."""
        return Template(self, {**shared, "reviewed_criteria": 0, "disputed_count": 0,
                               "disputed_criteria": ""}, _OWN, criteria, _RUN)

    def panel(self, shared: dict[str, Any], criteria: Sequence[CriterionInfo]) -> Template:
        """A panel's settled records: ``fill`` takes ``_OWN``'s values and the ties; per
        criterion its choice, note, error, tie and members."""
        return Template(self, {**shared, "reviewed_criteria": 0, "disputed_count": 0,
                               "disputed_criteria": "", "complete": True,
                               "pending_members": ""}, (*_OWN, ("ties",)), criteria, _PANEL)
