"""A full temporary folder is named as such, never blamed on the database's disk."""

from __future__ import annotations

import errno
import sqlite3
import tempfile

import pytest

from storage.db_errors import describe_db_error
from storage.row_spill import RowSpill
from tests.storage.tmpfs import small_tmpfs


def test_rows_come_back_in_batches_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with RowSpill(3) as spill:
        for row in range(7):
            spill.append({"row": row})
        assert [[r["row"] for r in batch] for batch in spill.batches()] == [
            [0, 1, 2], [3, 4, 5], [6]]
        assert spill.count == 7


def test_a_full_temporary_folder_is_named_not_the_database(tmp_path, monkeypatch):
    with small_tmpfs(tmp_path / "tmp", "1m") as folder:
        monkeypatch.setattr(tempfile, "tempdir", str(folder))
        with RowSpill(10) as spill, pytest.raises(OSError) as raised:
            for row in range(10_000):
                spill.append("x" * 1_000 + str(row))
    assert raised.value.errno == errno.ENOSPC
    assert describe_db_error(raised.value) == (
        f"the disk holding the temporary folder {folder} is full")


def test_the_databases_own_full_disk_is_still_the_databases():
    assert describe_db_error(sqlite3.OperationalError("database or disk is full")) == (
        "the disk holding the database is full")
    assert describe_db_error(OSError(errno.ENOSPC, "No space left on device")) == (
        "the disk holding the database is full")
    assert describe_db_error(OSError(errno.ENOSPC, "No space left on device",
                                     "/exports/out.csv")) == (
        "the disk holding /exports/out.csv is full")
