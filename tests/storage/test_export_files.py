"""The app's exports written a page at a time to a temporary file (storage.export_files), on
SQLite and PostgreSQL: byte for byte what the string export gave (CSV and JSONL, runs and a
panel, people's verdicts, texts that need quoting), whatever the page size, and nothing left
on disk."""

from __future__ import annotations

import json
import os
import random

import pytest

from storage import exports
from storage.panel_commands import panel_records
from storage.services import datasets, panels, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_panel_decisions import CRITERIA, _report

TEXTS = ['plain', 'a "quoted", comma', 'two\nlines', 'crlf\r\nend', 'naïve — 漢字 🙂',
         '=SUM(A1)', '']


def _world(sessions):
    version = make_rubric(sessions, "Mixed", CRITERIA)
    rows = [{"id": f"r{i}", "query": TEXTS[i % len(TEXTS)], "text": TEXTS[-1 - i % len(TEXTS)]
             + f" {i}", "team": TEXTS[i % 3], "n": i} for i in range(11)]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(3)]
    rng = random.Random(7)
    for run_id in judges:
        for response in responses:
            if rng.random() < 0.85:
                runs.record_grade(sessions, run_id, response.id, _report(rng))
    for response in responses[::2]:
        criterion = version.criteria[-1]
        reviews.set_human_verdict(sessions, actor=local_actor("ana"), response_id=response.id,
                                  criterion_id=criterion.id, verdict="MET")
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    return judges, panel


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_file_export_is_byte_for_byte_the_string_export(sessions, copied_world, fmt,
                                                            monkeypatch):
    judges, panel = copied_world("export_world", _world)
    text = exports.results_export(sessions, judges, fmt, [panel.id])
    assert "漢字" in text and text.count("\n") > 20
    with exports.results_export_file(sessions, judges, fmt, [panel.id]) as found:
        assert not os.path.exists(found.name)  # unlinked at once: nothing left behind
        assert found.read() == text.encode("utf-8")
    monkeypatch.setattr(exports, "_PAGE", 2)  # runs' and the panel's pages of two
    with exports.results_export_file(sessions, judges, fmt, [panel.id]) as paged:
        assert paged.read() == text.encode("utf-8")


def test_a_panel_export_pages_through_every_response_in_order(sessions, copied_world, monkeypatch):
    _judges, panel = copied_world("export_world", _world)
    whole = panels.panel_grades(sessions, panel.id)
    assert [ids for ids in panels.iter_graded_ids(sessions, panel.id, 4)] == [
        [g.response_id for g in whole[i:i + 4]] for i in range(0, len(whole), 4)]
    records = list(panel_records(sessions, panel.id))
    assert [r["workbench_response_id"] for r in records] == [g.response_id for g in whole]
    assert [r["score"] for r in records] == [g.score for g in whole]
    monkeypatch.setattr(exports, "_PAGE", 3)
    lines = [json.loads(line) for line in
             exports.results_export(sessions, [], "jsonl", [panel.id]).splitlines()]
    assert [r["workbench_response_id"] for r in lines] == [g.response_id for g in whole]


def test_the_paged_panel_records_are_the_records_read_all_at_once(sessions, copied_world,
                                                                  monkeypatch):
    """As iter_panel_records read them before it paged: every result at once."""
    from storage.services import rubrics
    from storage.services.panel_results import panel_results

    _judges, panel = copied_world("export_world", _world)
    info = panels.get_panel(sessions, panel.id)
    version = rubrics.get_version(sessions, info.rubric_version_id)
    found = panel_results(sessions, panel.id)
    responses = {r.id: r for r in datasets.get_responses(sessions,
                                                         [p.response_id for p in found])}
    before = [exports.with_response(exports._panel_record(result, version,
                                                          responses[result.response_id]),
                                    responses[result.response_id]) for result in found]
    monkeypatch.setattr(exports, "_PAGE", 4)
    assert list(exports.iter_panel_records(sessions, [panel.id])) == before
