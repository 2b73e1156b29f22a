"""Migration 0035 (SQLite): people's verdicts and pair judgments keep their ids for good.

A database with verdicts (and the effective decisions that point at them) moves to head with
every row as it was, and an id freed by a deletion is never handed out again. The upgrade
turns SQLite's foreign keys off while it recreates the tables and checks every reference
before it commits: a broken one stops it with nothing changed."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from storage.engine import open_database
from storage.migrate import alembic_config, upgrade_to_head
from storage.services import reviews
from storage.services.reviewers import local_actor
from tests.storage.helpers import make_dataset, make_rubric
from tests.storage.migration_rows import snapshot

BEFORE = "0033_judge_patterns"
TABLES = ["human_verdicts", "effective_verdicts", "pair_reviews"]


def _execute(url: str, *statements: str) -> list[tuple]:
    """Statements on a plain connection (SQLite's foreign keys off, as by default)."""
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        rows = []
        for statement in statements:
            result = connection.execute(text(statement))
            rows += [tuple(r) for r in result] if result.returns_rows else []
        connection.commit()
    engine.dispose()
    return rows


def _down_to_before(url: str) -> None:
    engine = create_engine(url, poolclass=NullPool)  # SQLite's foreign keys off by default
    with engine.connect() as connection:
        command.downgrade(alembic_config(connection), BEFORE)
        connection.commit()
    engine.dispose()


def _with_verdicts(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    sessions = open_database(url)
    version = make_rubric(sessions)
    _dataset, responses = make_dataset(sessions, count=3)
    for name in ("ana", "bo"):
        for response in responses:
            for criterion in version.criteria[:2]:
                reviews.set_human_verdict(sessions, actor=local_actor(name),
                                          response_id=response.id,
                                          criterion_id=criterion.id, verdict="MET")
    sessions.kw["bind"].dispose()
    _down_to_before(url)
    return url


def _autoincrement(url: str, table: str) -> bool:
    sql = _execute(url, f"SELECT sql FROM sqlite_master WHERE name = '{table}'")[0][0]
    return "AUTOINCREMENT" in sql


def test_upgrade_keeps_every_row_and_ids_are_never_reused(tmp_path):
    url = _with_verdicts(tmp_path)
    assert not _autoincrement(url, "human_verdicts")
    before = snapshot(url, TABLES)
    assert len(before["human_verdicts"]) == 12 and before["effective_verdicts"]

    upgrade_to_head(url)

    assert _autoincrement(url, "human_verdicts") and _autoincrement(url, "pair_reviews")
    assert snapshot(url, TABLES) == before
    assert _execute(url, "PRAGMA foreign_key_check") == []
    newest = max(row[0] for row in before["human_verdicts"])
    first = before["human_verdicts"][0]
    columns = [c[1] for c in _execute(url, "PRAGMA table_info(human_verdicts)")]
    copied = ", ".join(c for c in columns if c not in ("id", "seq"))
    _execute(url, f"DELETE FROM effective_verdicts WHERE human_verdict_id = {newest}",
             f"DELETE FROM human_verdicts WHERE id = {newest}",
             f"INSERT INTO human_verdicts ({copied}, seq) SELECT {copied}, 99 "
             f"FROM human_verdicts WHERE id = {first[0]}")
    assert _execute(url, "SELECT max(id) FROM human_verdicts")[0][0] == newest + 1


def test_a_broken_reference_stops_the_upgrade_with_nothing_changed(tmp_path):
    url = _with_verdicts(tmp_path)
    _execute(url, "UPDATE human_verdicts SET replaces_id = 999999 WHERE id = 1")
    before = snapshot(url, TABLES)

    with pytest.raises(RuntimeError, match=r"pointing at rows that do not exist .*human_verdicts"):
        upgrade_to_head(url)

    assert snapshot(url, TABLES) == before
    assert not _autoincrement(url, "human_verdicts")
    assert _execute(url, "SELECT version_num FROM alembic_version") == [(BEFORE,)]
