"""Migration 0005: a single-reviewer database (the revision before it, with data) moves to
per-reviewer histories without losing a verdict or changing an effective score; and back down."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from grading.types import Verdict
from storage.engine import open_database
from storage.migrate import alembic_config
from storage.services import reviews

V = Verdict
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _before_0005() -> str:
    """The revision just before several reviewers: the single-reviewer schema."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return script.get_revision("0005_several_reviewers").down_revision


def _migrate(url: str, target: str, *, down: bool = False) -> None:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        config = alembic_config(connection)
        (command.downgrade if down else command.upgrade)(config, target)
        connection.commit()
    engine.dispose()


def _seed_single_reviewer(url: str) -> dict[str, int]:
    """What the app wrote before 0005: one history per (response, criterion), any reviewers."""
    engine = create_engine(url, poolclass=NullPool)
    naive = engine.dialect.name == "sqlite"

    def at(minutes: int):
        moment = T0 + timedelta(minutes=minutes)
        return moment.replace(tzinfo=None) if naive else moment

    with engine.begin() as c:
        c.execute(text("INSERT INTO rubrics (id, name, description, archived, created_at) "
                       "VALUES (1, 'Dosing', '', false, :t)"), {"t": at(0)})
        c.execute(text("INSERT INTO rubric_versions (id, rubric_id, number, note, created_at, "
                       "frozen_at) VALUES (1, 1, 1, '', :t, :t)"), {"t": at(0)})
        for cid, (name, weight) in enumerate([("accurate", 10.0), ("cites", 5.0)], start=1):
            c.execute(text("INSERT INTO criteria (id, version_id, position, name, requirement, "
                           "weight) VALUES (:id, 1, :p, :n, :r, :w)"),
                      {"id": cid, "p": cid - 1, "n": name, "r": f"req {name}", "w": weight})
        c.execute(text("INSERT INTO datasets (id, name, description, archived, created_at) "
                       "VALUES (1, 'Answers', '', false, :t)"), {"t": at(0)})
        for rid in (1, 2):
            c.execute(text("INSERT INTO responses (id, dataset_id, external_id, output, "
                           "metadata, created_at) VALUES (:id, 1, :e, 'text', '{}', :t)"),
                      {"id": rid, "e": f"r{rid}", "t": at(0)})
        rows = [
            # (id, response, criterion, seq, verdict, reviewer, note, replaces, minute)
            (1, 1, 1, 1, "MET", "ana", "first look", None, 1),
            (2, 1, 1, 2, "UNMET", "bo", "wrong dose", 1, 2),  # bo overrode ana: UNMET stood
            (3, 1, 1, 3, "MET", "bo", "after all", 2, 3),  # bo came round: both MET now
            (4, 1, 2, 1, "MET", "ana", "", None, 4),
            (5, 1, 2, 2, "UNMET", "bo", "a blog", 4, 5),  # stands: UNMET (the last save)
            (6, 2, 2, 1, "CANNOT_ASSESS", "ana", "", None, 6),
        ]
        for id_, rid, cid, seq, verdict, who, note, replaces, minute in rows:
            c.execute(text(
                "INSERT INTO human_verdicts (id, response_id, rubric_version_id, criterion_id, "
                "seq, verdict, reviewer, note, replaces_id, created_at) VALUES "
                "(:id, :r, 1, :c, :s, :v, :w, :n, :p, :t)"),
                {"id": id_, "r": rid, "c": cid, "s": seq, "v": verdict, "w": who, "n": note,
                 "p": replaces, "t": at(minute)})
        if engine.dialect.name == "postgresql":  # ids were given: move the sequences on
            for table in ("rubrics", "rubric_versions", "criteria", "datasets", "responses",
                          "human_verdicts"):
                c.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                               f"(SELECT max(id) FROM {table}))"))
    engine.dispose()
    return {"rows": len(rows)}


def test_a_single_reviewer_database_migrates_without_loss(backend, new_database):
    url = new_database(backend)
    _migrate(url, _before_0005())
    _seed_single_reviewer(url)
    _migrate(url, "head")

    sessions = open_database(url)
    history = reviews.verdict_history(sessions, 1)
    kept = [(h.id, h.reviewer, h.verdict, h.note) for h in history if not h.adjudication]
    assert sorted(kept) == [
        (1, "ana", V.MET, "first look"), (2, "bo", V.UNMET, "wrong dose"),
        (3, "bo", V.MET, "after all"), (4, "ana", V.MET, ""), (5, "bo", V.UNMET, "a blog")]
    by_id = {h.id: h for h in history}
    # each reviewer's own chain: bo's second verdict replaces bo's first, not ana's
    assert (by_id[2].seq, by_id[2].replaces_id, by_id[2].previous_verdict) == (1, None, None)
    assert (by_id[3].seq, by_id[3].replaces_id, by_id[3].previous_verdict) == (2, 2, V.UNMET)
    assert by_id[1].reviewer_key == "ana" and by_id[1].created_at == T0 + timedelta(minutes=1)

    # the verdicts in force are the same as before the migration
    current = reviews.current_verdicts(sessions, 1, 1)
    assert {cid: h.verdict for cid, h in current.items()} == {1: V.MET, 2: V.UNMET}
    # criterion 1: both now say MET (agreed, no adjudication needed); criterion 2: the old
    # rule's verdict (bo's last save) is kept as an adjudication, so nothing changes
    [kept_adjudication] = [h for h in history if h.adjudication]
    assert (kept_adjudication.criterion_id, kept_adjudication.verdict,
            kept_adjudication.reviewer) == (2, V.UNMET, "bo")
    assert reviews.current_verdicts(sessions, 2, 1)[2].verdict is V.CANNOT_ASSESS
    sessions.kw["bind"].dispose()

    # and back down: one history per (response, criterion) again, nothing lost
    _migrate(url, _before_0005(), down=True)
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        rows = c.execute(text("SELECT response_id, criterion_id, seq, verdict FROM "
                              "human_verdicts ORDER BY id")).all()
    engine.dispose()
    assert len(rows) == 7
    assert [tuple(r) for r in rows if r[0] == 1 and r[1] == 2] == [
        (1, 2, 1, "MET"), (1, 2, 2, "UNMET"), (1, 2, 3, "UNMET")]
