"""``grade`` reads its responses file without remembering every row: duplicate ids are left
to the database (the import is all or nothing) and named with both lines once found; what a
read holds does not grow with the rows. (Peak RSS: benchmarks/grade_memory.py.)"""

from __future__ import annotations

import json
import tracemalloc

from storage.response_files import count_responses
from tests.jobs.test_cli_input import _grade, _rows


def _write(path, rows: int, duplicate_at: int | None = None) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            handle.write(json.dumps({"id": f"r{i}", "text": f"answer {i}"}) + "\n")
        if duplicate_at is not None:
            handle.write(json.dumps({"id": f"r{duplicate_at}", "text": "again"}) + "\n")


def _peak_kb(path, **kwargs) -> float:
    tracemalloc.start()
    try:
        assert count_responses(path, **kwargs) > 0
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def test_the_read_for_grade_holds_nothing_per_row(tmp_path):
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    _write(small, 2_000)
    _write(large, 20_000)
    grown = _peak_kb(large, remember_ids=False) - _peak_kb(small, remember_ids=False)
    remembered = _peak_kb(large) - _peak_kb(small)
    assert remembered > 1_000  # the ids of 18,000 more rows, remembered: MBs
    assert grown < 200, grown  # not remembered: flat


def test_a_duplicate_id_beyond_the_first_batch_is_named_with_both_lines_and_nothing_is_written(
        tmp_path, fake_provider, db_url, capsys):
    path = tmp_path / "many.jsonl"
    _write(path, 2_500, duplicate_at=5)
    assert _grade(tmp_path, fake_provider, path, db_url) == 2
    err = capsys.readouterr().err
    assert "line 2501: id 'r5' is already used by line 6" in err, err
    assert fake_provider.bodies == [] and _rows(db_url) == (0, 0, 0)
