"""An export onto a full disk fails with one sentence and leaves the earlier file as it was.

The disk is real: a 256 KB tmpfs mounted for the test (the tests run as root), filled up.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import cli
from storage.services import panels
from tests.storage.test_panels import ADMIN, three_judges  # noqa: F401 (fixture)
from tests.storage.tmpfs import small_tmpfs

EARLIER = "the export of yesterday\n"


@pytest.fixture
def full_disk(tmp_path) -> Iterator[Path]:
    """A directory on a tiny filesystem holding one earlier export, with no space left."""
    with small_tmpfs(tmp_path / "disk", "256k") as disk:
        for name in ("results.jsonl", "panel.csv", "gold.jsonl"):
            (disk / name).write_text(EARLIER, encoding="utf-8")
        with (disk / "filler").open("wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"x" * 1024)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        yield disk


def _left_as_it_was(disk: Path, name: str) -> None:
    assert (disk / name).read_text(encoding="utf-8") == EARLIER
    assert sorted(p.name for p in disk.iterdir()) == sorted(
        ["filler", "results.jsonl", "panel.csv", "gold.jsonl"])  # no partial file left


def test_a_results_export_to_a_full_disk_keeps_the_earlier_file(
        sessions, db_url, three_judges, full_disk, capsys):  # noqa: F811
    run_ids = three_judges[3]
    args = ["export", "--db", db_url, "--out", str(full_disk / "results.jsonl")]
    for run_id in run_ids:
        args += ["--run", str(run_id)]
    assert cli.main(args) != 0
    err = capsys.readouterr().err
    assert "cannot write" in err and "No space left on device" in err
    assert "Traceback" not in err
    _left_as_it_was(full_disk, "results.jsonl")


def test_a_panel_export_to_a_full_disk_keeps_the_earlier_file(
        sessions, db_url, three_judges, full_disk, capsys):  # noqa: F811
    panel = panels.create_panel(sessions, run_ids=three_judges[3], rule="majority",
                                actor=ADMIN)
    assert cli.main(["panel", "--db", db_url, "export", str(panel.id), "--out",
                     str(full_disk / "panel.csv")]) != 0
    assert "No space left on device" in capsys.readouterr().err
    _left_as_it_was(full_disk, "panel.csv")


def test_a_full_disk_export_leaves_no_file_where_there_was_none(
        sessions, db_url, three_judges, full_disk, capsys):  # noqa: F811
    (full_disk / "gold.jsonl").unlink()  # frees one page: the export starts, then fills it
    args = ["export", "--db", db_url, "--out", str(full_disk / "fresh.jsonl")]
    for run_id in three_judges[3]:
        args += ["--run", str(run_id)]
    assert cli.main(args) != 0
    assert "No space left on device" in capsys.readouterr().err
    assert not (full_disk / "fresh.jsonl").exists()
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler", "panel.csv",
                                                           "results.jsonl"]
