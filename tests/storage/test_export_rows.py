"""The exports read as rows (storage/export_rows.py) are byte for byte the exports built per
grade as before (storage/export_records.py, with the reads as they were:
tests/storage/recomputed.py), JSONL and CSV, for every viewer, on random histories of
grades (failed ones, multi-choice criteria, CANNOT_ASSESS, a one-shot run, a calibrated run
with its examples), reviews, disputes and adjudications, panels (ties, a member still
grading), upload columns and references, in batches of any size, on SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import random

import pytest
from sqlalchemy import insert, select

from grading.types import EvaluationReport
from storage import export_records, export_rows, exports
from storage import models as m
from storage.services import datasets, runs
from tests.actors import ADMIN
from tests.storage.helpers import make_run
from tests.storage.recomputed import recomputed
from tests.storage.test_results_sql import SIGHTS, _History


class _Uploaded(_History):
    """A history whose upload has references, its own columns (one a list, one missing on
    some rows) and texts that need quoting; a run with a length penalty, a calibrated run
    that showed examples."""

    def __init__(self, sessions, seed: int, size: int = 18):
        super().__init__(sessions, seed, size)
        rows = [{"id": f"u{i}", "query": f'q "{i}", naïve' if i % 2 else None,
                 "text": f"answer {i}\nsecond line", "reference": f"ref {i}",
                 "team": ["a", i] if i % 3 == 0 else f"t{i}",
                 **({"model": "m"} if i % 4 else {})} for i in range(size)]
        self.dataset = datasets.create_dataset(sessions, f"Uploaded {seed}", responses=rows,
                                               actor=ADMIN)
        self.responses = datasets.list_responses(sessions, self.dataset.id, limit=None)
        self.runs = [make_run(sessions, self.version.id, self.dataset.id, length_penalty={
                         "free_budget": 1, "max_cap": 4, "penalty_at_cap": 0.3}),
                     make_run(sessions, self.version.id, self.dataset.id),
                     make_run(sessions, self.version.id, self.dataset.id, grader="one_shot")]
        self.todo = [(run.id, r.id) for run in self.runs for r in self.responses]
        self.rng.shuffle(self.todo)
        with sessions.begin() as session:  # calibrated (as if launched so), its examples
            row = session.get(m.RunRow, self.runs[1].id)
            row.settings = {**row.settings, "calibration": {"k": 1, "seed": 3}}
            session.execute(insert(m.RunExampleRow.__table__), [
                {"run_id": self.runs[1].id, "criterion_id": c.id, "response_id": r.id,
                 "role": "example", "position": 0, "verdict": "MET", "reason": "shown",
                 "status": "agreed"}
                for c, r in zip(self.version.criteria, self.responses[1::5], strict=False)])


    def fail_everywhere(self, count: int) -> None:
        """Responses every run failed on: a panel has no verdict on them."""
        for response in self.responses[-count:]:
            for run in self.runs:
                self.todo.remove((run.id, response.id))
                runs.record_grades(self.sessions, run.id, [runs.NewGrade(
                    response.id, EvaluationReport(score=None, error="provider timed out"),
                    0.1)])


def _exports(sessions, history: _History, panel_ids: list[int]) -> dict:
    run_ids = [run.id for run in history.runs]
    return {(fmt, sight.viewer, sight.sees_all): exports.results_export(
                sessions, run_ids, fmt, panel_ids, sight=sight)
            for fmt in exports.EXPORT_FORMATS for sight in SIGHTS}


def _compare(sessions, history: _History, panel_ids: list[int], monkeypatch,
             page: int) -> list[str]:
    monkeypatch.setattr(exports, "_PAGE", page)
    new = _exports(sessions, history, panel_ids)
    with recomputed():
        before = _exports(sessions, history, panel_ids)
    assert new.keys() == before.keys()
    for key, text in before.items():
        assert new[key] == text, key
    return [line for key, text in new.items() if key[0] == "jsonl"
            for line in text.splitlines()]


@pytest.mark.parametrize("seed", [11, 12])
def test_the_row_export_is_byte_for_byte_the_per_grade_export(sessions, seed, monkeypatch):
    history = _Uploaded(sessions, seed)
    rng = random.Random(seed)
    history.fail_everywhere(2)
    history.grade(25)
    for _ in range(6):
        history.review()
    _compare(sessions, history, [], monkeypatch, rng.choice([3, 7]))
    # panels made while the members are still grading: unsettled decisions
    panel_ids = history.make_panels()
    lines = _compare(sessions, history, panel_ids, monkeypatch, 4)
    assert any(not json.loads(line).get("complete", True) for line in lines)
    history.grade(100)
    history.finish()
    for _ in range(24):
        rng.choice([history.review, history.review, history.adjudicate])()
    records = [json.loads(line) for line in
               _compare(sessions, history, panel_ids, monkeypatch, rng.choice([5, 2000]))]
    # the history has what the comparison is meant to cover
    statuses = {c["human_status"] for r in records for c in r["criteria"]}
    assert statuses == {"agreed", "adjudicated", "disputed", "not_reviewed"}
    assert any(c["judge_error"] == "every member failed: no verdict"
               for r in records for c in r["criteria"])
    assert any(r["error"] for r in records) and any(r["shown_as_example"] for r in records)
    assert any(c.get("tie") for r in records for c in r["criteria"])
    assert any(c["judge_verdict"] == "CANNOT_ASSESS" for r in records for c in r["criteria"])
    assert {"team", "model"} <= {k for r in records for k in r["upload"]}
    assert any(r["reference"] for r in records)


class _Unusable(exports.Cells):
    """The export's columns as if two of them had one name: every CSV record a record."""

    def __init__(self, columns, uploaded):
        super().__init__(columns, uploaded)
        self.usable = False


def test_the_records_read_as_rows_lay_out_as_the_per_grade_ones(sessions, monkeypatch):
    """The records as dicts (the CSV's way when a column's name is not its own)."""
    history = _Uploaded(sessions, 14)
    history.fail_everywhere(2)
    history.grade(30)
    panel_ids = history.make_panels()
    history.grade(100)
    history.finish()
    rng = random.Random(14)
    for _ in range(10):
        rng.choice([history.review, history.review, history.adjudicate])()
    monkeypatch.setattr(exports, "Cells", _Unusable)
    run_ids = [run.id for run in history.runs]
    for sight in SIGHTS:
        new = exports.results_export(sessions, run_ids, "csv", panel_ids, sight=sight)
        with recomputed():
            assert new == exports.results_export(sessions, run_ids, "csv", panel_ids,
                                                 sight=sight)


def test_only_the_reviewed_and_unsettled_responses_are_built_per_grade(sessions, monkeypatch):
    history = _Uploaded(sessions, 13, size=10)
    history.grade(30)
    history.finish()
    panel_ids = history.make_panels()
    history.review()
    reviewed = {rid for rid, *_rest in datasets_reviewed(sessions, history)}
    built: list[int] = []
    real = export_records._record

    def counted(run, version, response, effective, used=None):
        built.append(response.id)
        return real(run, version, response, effective, used)

    monkeypatch.setattr(export_records, "_record", counted)
    records = list(export_rows.records(sessions, [r.id for r in history.runs], panel_ids))
    assert len(records) > 3 * len(reviewed)
    assert reviewed and set(built) == reviewed


def datasets_reviewed(sessions, history: _History):
    with sessions() as session:
        return session.execute(select(m.EffectiveVerdictRow.response_id).distinct().where(
            m.EffectiveVerdictRow.rubric_version_id == history.version.id)).all()


def test_a_missing_run_or_panel_is_refused_as_before(sessions):
    from storage.errors import NotFoundError
    with pytest.raises(NotFoundError):
        list(export_rows.records(sessions, [999], []))
    with pytest.raises(NotFoundError):
        list(export_rows.records(sessions, [], [999]))
