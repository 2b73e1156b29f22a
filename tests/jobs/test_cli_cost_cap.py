"""``rubric-workbench grade --cost-cap USD``: each run stops at the cap (over litellm's HTTP
path against the fake provider, with a model litellm has a price for); a cap that is not a
positive amount, or one on a model with no price, is refused before anything is written."""

from __future__ import annotations

import pytest

from storage import cli
from storage.engine import open_database
from storage.services import runs
from tests.jobs.helpers import RUBRIC_YAML

PRICED = "openai/gpt-4o-mini"  # in litellm's local price map


@pytest.fixture
def files(tmp_path):
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    (tmp_path / "r.csv").write_text("id,text\n" + "".join(f"r{i},answer {i}\n"
                                                          for i in range(8)))
    return tmp_path


def _grade(files, fake, *extra: str, model: str = PRICED) -> int:
    return cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                     str(files / "r.csv"), "--grader", "per-criterion", "--model", model,
                     "--api-base", fake.api_base, "--db", f"sqlite:///{files / 'cli.db'}",
                     "--concurrency", "1", "--no-cache", *extra])


def test_the_run_stops_at_its_cost_cap_and_says_so(files, fake_provider, capsys):
    status = _grade(files, fake_provider, "--cost-cap", "0.0000001")
    assert status == 1  # not everything was graded
    sessions = open_database(f"sqlite:///{files / 'cli.db'}")
    [run] = runs.list_runs(sessions)
    assert run.settings.extra["cost_cap"] == pytest.approx(1e-7)
    assert run.stopped_by_cost_cap and 1 <= run.graded_count < 8
    assert fake_provider.requests < 2 * 8  # the other responses were never sent
    out = capsys.readouterr().out
    assert "stopped at the cost cap ($1e-07)" in out


def test_a_cap_above_the_cost_grades_everything(files, fake_provider):
    assert _grade(files, fake_provider, "--cost-cap", "50") == 0
    [run] = runs.list_runs(open_database(f"sqlite:///{files / 'cli.db'}"))
    assert run.status == "done" and run.graded_count == 8


@pytest.mark.parametrize("value", ["0", "-2", "ten dollars", "nan", "inf"])
def test_a_cap_that_is_not_a_positive_amount_is_one_sentence(files, fake_provider, capsys,
                                                             value):
    assert _grade(files, fake_provider, f"--cost-cap={value}") == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --cost-cap must be an amount of US dollars above 0 (e.g. "
                   f"--cost-cap 2.50), got {value!r}")
    assert fake_provider.requests == 0 and not (files / "cli.db").exists()


def test_a_cap_on_a_model_with_no_price_is_refused_before_anything_is_written(
        files, fake_provider, capsys):
    assert _grade(files, fake_provider, "--cost-cap", "1", model="openai/fake-judge") == 2
    err = capsys.readouterr().err
    assert "--cost-cap cannot be kept: litellm has no price for openai/fake-judge" in err
    assert "Traceback" not in err and fake_provider.requests == 0
    assert runs.list_runs(open_database(f"sqlite:///{files / 'cli.db'}")) == []


def test_a_cap_with_several_workers_grades_with_one_process_and_says_so(files, fake_provider,
                                                                         capsys):
    # Each process could count only its own responses in flight against the cap.
    status = cli.main(["grade", "--rubric", str(files / "rubric.yaml"), "--responses",
                       str(files / "r.csv"), "--grader", "per-criterion", "--model", PRICED,
                       "--api-base", fake_provider.api_base, "--db",
                       f"sqlite:///{files / 'cli.db'}", "--no-cache", "--workers", "2",
                       "--cost-cap", "50"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert ("--cost-cap is kept by the one process that grades each run: grading with "
            "1 process, not 2") in err
    assert "helper worker(s) ready" not in err  # no helper was started
    [run] = runs.list_runs(open_database(f"sqlite:///{files / 'cli.db'}"))
    assert run.status == "done" and run.graded_count == 8
