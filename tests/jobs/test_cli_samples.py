"""``rubric-workbench grade --samples N``: N calls per criterion stored as one run's samples,
a larger N pays only for the new samples, and a bad N or grader is refused before anything
is stored."""

from __future__ import annotations

import pytest

from storage import cli
from storage.engine import open_database
from storage.services import runs
from tests.jobs.test_cli import _grade, files

__all__ = ["files"]


def test_samples_multiply_the_calls_and_more_samples_pay_only_for_new_ones(
        files, fake_provider):
    (files / "r.csv").write_text("text\none\ntwo\n")  # 2 responses x 2 criteria
    assert _grade(files, fake_provider, "r.csv", "--samples", "3",
                  "--temperature", "0.8") == 0
    assert fake_provider.requests == 2 * 2 * 3
    assert {b["temperature"] for b in fake_provider.bodies} == {0.8}
    assert _grade(files, fake_provider, "r.csv", "--samples", "4",
                  "--temperature", "0.8") == 0
    assert fake_provider.requests == 2 * 2 * 4  # only sample 3 was new
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    four = max(runs.list_runs(sessions), key=lambda r: r.id)
    assert four.settings.samples == 4
    stored = [c.samples for g in runs.list_grades(sessions, four.id) for c in g.criteria]
    assert len(stored) == 4 and all(s == ("MET",) * 4 for s in stored)


@pytest.mark.parametrize("bad", ["0", "21", "two", "1.5"])
def test_a_bad_number_of_samples_is_a_usage_error(files, fake_provider, capsys, bad):
    (files / "r.csv").write_text("text\none\n")
    with pytest.raises(SystemExit) as exit_:
        _grade(files, fake_provider, "r.csv", "--samples", bad)
    assert exit_.value.code == 2
    assert f"--samples: must be a whole number from 1 to 20, got '{bad}'" in (
        capsys.readouterr().err)
    assert fake_provider.requests == 0


def test_samples_with_a_one_call_grader_are_refused_before_anything_is_stored(
        files, fake_provider, capsys):
    (files / "r.csv").write_text("text\none\n")
    status = cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                       str(files / "r.csv"), "--grader", "per-criterion", "--grader",
                       "one-shot", "--model", "openai/fake-judge", "--api-base",
                       fake_provider.api_base, "--db", f"sqlite:///{files / 'cli.db'}",
                       "--samples", "3"])
    assert status == 2
    assert "--samples 3 needs --grader per-criterion only" in capsys.readouterr().err
    assert runs.list_runs(open_database(f"sqlite:///{files / 'cli.db'}")) == []
    assert fake_provider.requests == 0
