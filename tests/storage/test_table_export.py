""""This table (CSV)" written a page at a time (storage.table_export) on SQLite and
PostgreSQL: byte for byte ``exports.table_csv`` over one page holding every row, whatever
the page size, sort and filter, with quoting, line breaks, non-ASCII text, formulas, upload
columns that first appear on a later page, a judge panel and a person's verdicts."""

from __future__ import annotations

import csv
import io

import pytest

from grading.types import ScoringSettings, Verdict
from storage import table_export
from storage.exports import table_csv, table_responses
from storage.services import datasets, panels, reviews, runs
from storage.services.panel_results import panel_results
from storage.services.results import ResultsFilter, results_page
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, judge_report, make_rubric, make_run

M, U, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
ROWS = [
    {"id": "a,1", "query": 'He said "hi", then left', "text": "Line one\nLine two\r\nthree"},
    {"id": "b2", "query": "Café — 日本語 ✓", "text": "naïve façade", "lang": "fr"},
    {"id": "c3", "query": "=SUM(A1)", "text": "-2+3", "score_hint": 0.5},
    {"id": "d4", "query": "plain", "text": "plain", "tags": ["x", "ü"], "lang": "en"},
    {"id": "e5", "query": "", "text": "'quoted", "extra": {"k": "v,w"}},
    {"id": "f6", "query": "tab\tinside", "text": " @mention"},
    {"id": "g7", "query": "last", "text": "emoji 🎉", "late_column": "only here"},
]
VERDICTS = [[M, M, M, U], [M, U, M, U], [M, M, None, U], [U, U, CA, M], [M, M, M, M],
            [U, M, U, U], [M, CA, M, U]]


@pytest.fixture
def table(copied_world):
    """The same graded upload for every test here: built once per backend, then copied."""
    return copied_world("table_export", _table)


def _table(sessions):
    version = make_rubric(sessions)
    dataset = datasets.create_dataset(sessions, "Uploaded", responses=ROWS, actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    made = [make_run(sessions, version.id, dataset.id), make_run(sessions, version.id,
                                                                dataset.id, "one_shot")]
    for index, response in enumerate(responses):
        other = VERDICTS[(index + 3) % len(VERDICTS)]
        for run, verdicts in zip(made, (VERDICTS[index], other), strict=True):
            runs.record_grade(sessions, run.id, response.id, judge_report(
                CRITERIA, verdicts, ScoringSettings(), response.output))
    reviews.set_human_verdict(sessions, response_id=responses[3].id,
                              criterion_id=version.criteria[0].id, verdict="MET", actor=ADMIN)
    panel = panels.create_panel(sessions, run_ids=[r.id for r in made], rule="majority",
                                actor=ADMIN)
    return version, dataset, [runs.get_run(sessions, r.id) for r in made], panel


def _reader(sessions, dataset, version, run_infos, **kwargs):
    def read(offset: int, limit: int):
        return results_page(sessions, dataset_id=dataset.id, rubric_version_id=version.id,
                            run_ids=[r.id for r in run_infos], offset=offset, limit=limit,
                            **kwargs)
    return read


def _reference(sessions, read, run_infos, panel_ids) -> bytes:
    """Today's output: one page with every row, the panels' grades of every response."""
    page = read(0, 10_000)
    scores = [(f"panel{p.id}_{p.rule}", {r.response_id: r.effective
                                         for r in panel_results(sessions, p.id)})
              for p in (panels.get_panel(sessions, pid) for pid in panel_ids)]
    return table_csv(page, run_infos, scores, table_responses(sessions, page)).encode("utf-8")


@pytest.mark.parametrize("page_size", [1, 2, 3, 500])
@pytest.mark.parametrize("view", [
    pytest.param({}, id="dataset-order"),
    pytest.param({"sort": "score", "descending": True}, id="score-desc"),
    pytest.param({"sort": "spread"}, id="spread"),
    pytest.param({"filters": ResultsFilter(disagree_only=True)}, id="disagree"),
    pytest.param({"filters": ResultsFilter(search="nothing matches this")}, id="none"),
])
def test_the_table_written_page_by_page_is_byte_for_byte_the_one_page_table(
        sessions, table, page_size, view):
    version, dataset, run_infos, panel = table
    read = _reader(sessions, dataset, version, run_infos, **view)
    expected = _reference(sessions, read, run_infos, [panel.id])
    with table_export.table_csv_file(sessions, read, run_infos, [panel.id],
                                     page_size=page_size) as found:
        written = found.read()
    assert written == expected
    rows = list(csv.DictReader(io.StringIO(written.decode("utf-8"), newline="")))
    assert len(rows) == read(0, 1).total


def test_the_table_keeps_quotes_line_breaks_and_non_ascii_text(sessions, table):
    version, dataset, run_infos, panel = table
    read = _reader(sessions, dataset, version, run_infos, sort="score", descending=True)
    with table_export.table_csv_file(sessions, read, run_infos, [panel.id],
                                     page_size=2) as found:
        rows = list(csv.DictReader(io.StringIO(found.read().decode("utf-8"), newline="")))
    by_id = {r["response_id"]: r for r in rows}
    assert set(by_id) == {row["id"] for row in ROWS}
    assert by_id["a,1"]["response_text"] == "Line one\nLine two\r\nthree"
    assert by_id["a,1"]["query"] == 'He said "hi", then left'
    assert by_id["b2"]["query"] == "Café — 日本語 ✓"
    assert by_id["c3"]["query"] == "'=SUM(A1)"  # spreadsheet-safe
    assert by_id["d4"]["upload.tags"] == '["x", "ü"]'
    assert by_id["e5"]["upload.extra"] == '{"k": "v,w"}'
    assert by_id["g7"]["upload.late_column"] == "only here"
    assert by_id["a,1"]["upload.late_column"] == ""
    assert f"panel{panel.id}_majority_effective_score" in rows[0]
