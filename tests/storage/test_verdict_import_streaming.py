"""import-verdicts streams (issue 40 item 14): the sheet is checked in a first pass and parked
in a temporary file, then written in batches in one transaction, so memory does not grow with
the sheet and a bad row anywhere, even the very last, still writes nothing."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest
from sqlalchemy import func, select

from storage import models as m
from storage.errors import ImportProblemsError
from storage.services import reviews, verdict_import
from tests.actors import ADMIN
from tests.storage.helpers import make_dataset, make_rubric

CRITERIA = ("accurate", "cites", "concise", "harmful")


def _write_sheet(path: Path, responses: int, reviewers: tuple[str, ...], *,
                 tail: str = "", first: int = 0) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write("response_id,criterion,verdict,reviewer,note\n")
        for i in range(first, first + responses):
            for c, name in enumerate(CRITERIA):
                for who in reviewers:
                    verdict = "UNMET" if (i + c) % 3 == 0 else "MET"
                    handle.write(f"r{i},{name},{verdict},{who},note {i}-{c} by {who}\n")
        handle.write(tail)
    return path


def _count(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.HumanVerdictRow))


def _import(sessions, version, dataset, sheet, **kwargs):
    return verdict_import.import_human_verdicts(sessions, version.id, dataset.id, sheet,
                                                actor=ADMIN, create_reviewers=True, **kwargs)


@pytest.fixture
def small_batches(sessions, monkeypatch):
    """A rubric and 15 responses, imported 7 rows a batch (120 good rows: 18 batches)."""
    monkeypatch.setattr(verdict_import, "WRITE_BATCH", 7)
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=15)
    return version, dataset, responses


def test_a_bad_last_row_after_many_batches_writes_nothing(sessions, tmp_path, small_batches):
    version, dataset, _responses = small_batches
    sheet = _write_sheet(tmp_path / "sheet.csv", 15, ("ann", "bo"),
                         tail="r3,accurate,MAYBE,ann,\n")
    before = _count(sessions)
    with pytest.raises(ImportProblemsError) as caught:
        _import(sessions, version, dataset, sheet)
    assert [str(p) for p in caught.value.problems] == [
        "row 121 (line 122), column 'verdict': " + str(caught.value.problems[0]).split(
            "column 'verdict': ", 1)[1]]
    assert "MAYBE" in str(caught.value.problems[0])
    assert _count(sessions) == before


def test_a_duplicate_at_the_end_names_the_first_row_and_writes_nothing(
        sessions, tmp_path, small_batches):
    version, dataset, _responses = small_batches
    sheet = _write_sheet(tmp_path / "sheet.csv", 15, ("ann", "bo"),
                         tail="r0,cites,MET,ANN,again\nr9,nothing,MET,ann,\n")
    before = _count(sessions)
    with pytest.raises(ImportProblemsError) as caught:
        _import(sessions, version, dataset, sheet)
    problems = [str(p) for p in caught.value.problems]
    # r0 x cites x ann is the sheet's row 3 (line 4): (r0, accurate, ann), (.., bo), (r0, cites..
    assert problems[0] == ("row 121 (line 122): response 'r0', criterion 'cites' is already set "
                           "for reviewer 'ann' by row 3 (line 4); keep one row")
    assert problems[1].startswith("row 122 (line 123), column 'criterion': no criterion "
                                  "named 'nothing'")
    assert _count(sessions) == before


def test_a_streamed_import_writes_every_row_as_before_and_chains_a_second_one(
        sessions, tmp_path, small_batches):
    version, dataset, responses = small_batches
    sheet = _write_sheet(tmp_path / "sheet.csv", 15, ("ann", "bo"))
    summary = _import(sessions, version, dataset, sheet)
    assert (summary.verdicts, summary.responses, summary.unchanged) == (120, 15, 0)
    assert summary.per_reviewer == (("ann", 60), ("bo", 60))
    assert _count(sessions) == 120
    again = _import(sessions, version, dataset, sheet)  # nothing changed: nothing appended
    assert (again.verdicts, again.unchanged) == (0, 120)
    edited = tmp_path / "edited.csv"
    edited.write_text(sheet.read_text(encoding="utf-8").replace(
        "r14,harmful,MET,bo,", "r14,harmful,UNMET,bo,"), encoding="utf-8")
    third = _import(sessions, version, dataset, edited)
    assert (third.verdicts, third.unchanged, third.per_reviewer) == (1, 119, (("bo", 1),))
    harmful = version.criteria[3].id
    history = [h for h in reviews.verdict_history(sessions, responses[14].id, stream="bo")
               if h.criterion_id == harmful]
    assert [(h.seq, h.verdict.value, h.note) for h in history] == [
        (1, "MET", "note 14-3 by bo"), (2, "UNMET", "note 14-3 by bo")]


def _peak(call) -> int:
    gc.collect()  # the setup's garbage is not the import's
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_memory_does_not_grow_with_the_sheet(sessions, tmp_path, monkeypatch):
    """Before: every checked row was kept (~0.4 KB each) until the write. The peak of an
    import four times as long now stays within 1.5x (batches of 1,000 here)."""
    monkeypatch.setattr(verdict_import, "WRITE_BATCH", 1_000)
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, count=1_252)
    warm = _write_sheet(tmp_path / "warm.csv", 2, ("w1",), first=1_250)
    _import(sessions, version, dataset, warm)  # statement caches filled once
    # On responses no other import touched: the verdicts already there weigh on a batch too.
    small = _write_sheet(tmp_path / "small.csv", 250, ("a1", "a2"), first=1_000)  # 2,000 rows
    large = _write_sheet(tmp_path / "large.csv", 1_000, ("b1", "b2"))  # 8,000 rows
    small_peak = _peak(lambda: _import(sessions, version, dataset, small))
    large_peak = _peak(lambda: _import(sessions, version, dataset, large))
    assert _count(sessions) == 8 + 2_000 + 8_000
    assert large_peak <= 1.5 * small_peak, (small_peak, large_peak)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_full_temporary_folder_is_one_sentence_and_writes_nothing(sessions, tmp_path,
                                                                    monkeypatch):
    import tempfile

    from tests.storage.tmpfs import small_tmpfs

    monkeypatch.setattr(verdict_import, "WRITE_BATCH", 50)
    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, count=400)
    sheet = _write_sheet(tmp_path / "sheet.csv", 400, ("ann", "bo"))  # ~150 KB parked
    before = _count(sessions)
    with small_tmpfs(tmp_path / "tmp", "64k") as tiny:
        monkeypatch.setattr(tempfile, "tempdir", str(tiny))
        with pytest.raises(ImportProblemsError) as caught:
            _import(sessions, version, dataset, sheet)
    text = str(caught.value)
    assert "cannot park the checked rows in the temporary folder" in text, text
    assert "No space left on device" in text and "set TMPDIR" in text
    assert _count(sessions) == before
