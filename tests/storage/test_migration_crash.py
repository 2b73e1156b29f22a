"""A `db upgrade` killed at any point leaves a SQLite file that the next upgrade finishes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool

from storage import cli
from storage.migrate import (
    HalfUpgradedDatabaseError,
    alembic_config,
    current_revision,
    head_revision,
    upgrade_to_head,
)
from tests.storage.test_migrations import _diffs

REPO = Path(__file__).resolve().parents[2]

# One process imports the code once, then forks a child per kill point: the child runs the
# real `rubric-workbench db upgrade` and dies (os._exit, no clean-up, no rollback) just before
# its Nth SQL statement reaches the database, as a SIGKILL or a power cut would leave it.
_KILLER = r"""
import json, os, sys
from sqlalchemy import event
from sqlalchemy.engine import Engine
from storage import cli

def upgrade(url, kill_at):
    pid = os.fork()
    if pid == 0:
        seen, commits = [0], []
        def count(*_args, **_kwargs):
            seen[0] += 1
            if seen[0] == kill_at:
                os._exit(9)
        event.listen(Engine, "before_cursor_execute", count)
        event.listen(Engine, "commit", lambda _connection: commits.append(seen[0]))
        status = cli.main(["db", "upgrade", "--db", url])
        with open(url.removeprefix("sqlite:///") + ".statements", "w") as out:
            out.write(json.dumps({"total": seen[0], "commits": commits}))
        sys.stdout.flush()
        os._exit(status)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

directory, stride = sys.argv[1], int(sys.argv[2])
assert upgrade(f"sqlite:///{directory}/count.db", 0) == 0
counted = json.load(open(f"{directory}/count.db.statements"))
total = counted["total"]
results = {}
# every stride-th statement, and the ones just before and after the upgrade's commit
points = sorted(set(range(1, total, stride)) | {counted["commits"][-1], counted["commits"][-1] + 1})
for kill_at in points:
    results[kill_at] = upgrade(f"sqlite:///{directory}/killed{kill_at}.db", kill_at)
print(json.dumps({"total": total, "committed_at": counted["commits"][-1], "results": results}))
"""


def _tables(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_db_upgrade_killed_between_any_two_statements_is_finished_by_the_next(tmp_path):
    done = subprocess.run(
        # Every 19th statement: the whole upgrade is one transaction, so each kill point tests
        # the same all-or-nothing; a dozen spread over every revision's DDL show it (every 9th
        # cost minutes of CI for no case of its own).
        [sys.executable, "-c", _KILLER, str(tmp_path), "19"], cwd=REPO, capture_output=True,
        text=True, timeout=600, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["total"] > 100  # the whole upgrade from empty: every revision's DDL
    assert len(report["results"]) > 11
    # The upgrade is one transaction: its commit comes after statement ``committed_at``; what
    # runs after (reading the revision back to report it) finds the work already done.
    committed_at = report["committed_at"]
    assert committed_at < report["total"]
    for kill_at, status in report["results"].items():
        assert status == 9, f"the child was not killed at statement {kill_at}"
        url = f"sqlite:///{tmp_path}/killed{kill_at}.db"
        if int(kill_at) > committed_at:
            assert current_revision(url) == head_revision(), kill_at
            continue
        # All or nothing: a killed upgrade leaves no table of its own behind.
        assert current_revision(url) is None, kill_at
        assert _tables(url) <= {"alembic_version"}, kill_at
        upgrade_to_head(url)
        assert current_revision(url) == head_revision()
        if int(kill_at) % 4 == 1:  # the schema check is slow; the revision is the same
            assert _diffs(url) == [], kill_at


def _half_upgraded(tmp_path: Path, leftover_sql: str) -> str:
    """A file an older release's killed upgrade left: at 0012, with a piece of a later one."""
    url = f"sqlite:///{tmp_path / 'half.db'}"
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        config = alembic_config(connection)
        command.upgrade(config, "0012_criterion_trials")
        connection.commit()
        connection.execute(text(leftover_sql))
        connection.commit()
    engine.dispose()
    return url


@pytest.mark.parametrize("leftover_sql", [
    pytest.param("CREATE TABLE run_examples (id INTEGER PRIMARY KEY)", id="a-later-table"),
    pytest.param("CREATE TABLE _alembic_tmp_grades (id INTEGER PRIMARY KEY)",
                 id="a-batch-temporary-table"),
])
def test_a_half_upgraded_file_is_refused_with_what_to_do_and_left_as_it_was(
        tmp_path, leftover_sql, capsys):
    url = _half_upgraded(tmp_path, leftover_sql)
    before = _tables(url)
    with pytest.raises(HalfUpgradedDatabaseError, match="restore the file from a copy"):
        upgrade_to_head(url)
    assert current_revision(url) == "0012_criterion_trials"
    assert _tables(url) == before

    assert cli.main(["db", "upgrade", "--db", url]) == 1
    err = capsys.readouterr().err
    assert "half-upgraded" in err and "0012_criterion_trials" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
