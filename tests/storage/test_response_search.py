"""The responses' text search through its index (migration 0041, storage/search_index.py)
finds exactly what the plain ILIKE over id, query and output finds, on both databases:
after imports, edits and deletes, after the migration's backfill, and without pg_trgm."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, func, or_, select, text
from sqlalchemy.pool import NullPool

from storage import models as m
from storage.engine import create_db_engine, make_session_factory, open_database
from storage.migrate import alembic_config, upgrade_to_head
from storage.repositories import results as results_repo
from storage.repositories.results import _escape_like
from storage.services import datasets
from tests.actors import ADMIN
from tests.storage.conftest import postgres_or_fail

TEXTS = [  # (id, query, output)
    ("r1", "What dose for a child?", "The DOSE is 5 mg; see the Table."),
    ("r2", None, "100% of patients; a_b and a-b; back\\slash"),
    ("R-3", "Quote \"this\" please", "He said \"dose\" twice: dose, Dose."),
    ("r4", "Ça va? école", "ÉCOLE and école; Straße; naïve"),
    (None, "question 4242", "answer number 4242 " + "margin " * 200),
    ("r42420", "question 42420", "plain"),
    ("x_y", "tabs\tand  spaces", "ends with zz"),
    ("r8", "", "ǅemal ǆ Ǆ — ΣΊΣΥΦΟΣ σίσυφος"),
    ("r9", "NEAR(a b) col:x", "^start a*b -not OR AND (x)"),
    ("r10", "it's here", "O'Brien said '; drop table responses; --"),
]
NEEDLES = [
    "dose", "DOSE", "Dose ", "  table", "do", "d", "zz", "zzz", "zzzq", "a_b", "a_", "_",
    "%", "100%", "0%", "\\", "back\\s", "\"this\"", "\"", "\"dose\" twice", "4242",
    "question 4242", "answer number 4242", "r4", "R4", "-3", "x_y", "é", "É", "école",
    "ÉCOLE", "ça", "Ça", "straße", "STRASSE", "ss", "naïve", "ǅ", "ǆemal", "σίσυφος",
    "ΣΊΣΥΦΟΣ", "s\tand", "and  sp", "margin margin margin", "plain", "NEAR(a", "col:x",
    "^start", "a*b", "-not", "OR AND", "(x)", "it's", "o'brien", "'; drop table responses; --",
    "''", "$$", "",
]


def _plain(session, dataset_id: int, needle: str) -> list[int]:
    """The search as it was before the index: ILIKE over the three columns, every row."""
    r = m.ResponseRow
    needle = needle.strip()
    query = select(r.id).where(r.dataset_id == dataset_id).order_by(r.id)
    if needle:
        pattern = f"%{_escape_like(needle)}%"
        query = query.where(or_(*[c.ilike(pattern, escape="\\")
                                  for c in (r.external_id, r.query, r.output)]))
    return list(session.scalars(query))


def _rows(texts) -> list[dict]:
    return [{"id": i, "query": q, "text": o} for i, q, o in texts]


def _check_all(sessions, dataset_id: int) -> int:
    """Every needle: the indexed search == the plain ILIKE. Returns how many matched."""
    matched = 0
    with sessions() as session:
        for needle in NEEDLES:
            expected = _plain(session, dataset_id, needle)
            assert results_repo.candidate_ids(session, dataset_id, needle) == expected, needle
            total, page = datasets.search_responses(sessions, dataset_id, needle, limit=1000)
            assert (total, [r.id for r in page]) == (len(expected), expected), needle
            matched += len(expected)
    return matched


def test_search_finds_what_the_plain_ilike_finds(sessions):
    dataset = datasets.create_dataset(sessions, "Answers", responses=_rows(TEXTS), actor=ADMIN)
    assert _check_all(sessions, dataset.id) > len(NEEDLES)  # the needles do match things
    with sessions() as session:  # and the way they should, case-insensitive and literal
        assert len(_plain(session, dataset.id, "dose")) == 2
        assert len(_plain(session, dataset.id, "a_")) == 1  # a_b, not a-b: "_" is literal
        assert len(_plain(session, dataset.id, "question 4242")) == 2


def test_search_stays_right_after_imports_edits_and_deletes(sessions):
    first = datasets.create_dataset(sessions, "Answers", responses=_rows(TEXTS), actor=ADMIN)
    other = datasets.create_dataset(sessions, "Other", responses=_rows(TEXTS[:3]), actor=ADMIN)
    datasets.import_responses(sessions, first.id, _rows([
        ("new1", "a new dose", "zzzq arrives"), ("new2", "école", "100% new")]), actor=ADMIN)
    datasets.add_response(sessions, first.id, "pasted zzzq Table", actor=ADMIN)
    with sessions() as session:
        assert len(_plain(session, first.id, "zzzq")) == 2
    _check_all(sessions, first.id)
    # No page edits a response's text today; the index must follow an edit all the same.
    with sessions.begin() as session:
        session.execute(text("UPDATE responses SET output = 'now about ZZZQ', query = NULL "
                             "WHERE external_id = 'r1'"))
        session.execute(text("UPDATE responses SET external_id = 'renamed_zzzq' "
                             "WHERE external_id = 'r2'"))
        session.execute(text("DELETE FROM responses WHERE external_id = 'r4'"))
    with sessions() as session:
        assert len(_plain(session, first.id, "zzzq")) == 4
        assert _plain(session, first.id, "école") != []  # new2 still
    _check_all(sessions, first.id)
    datasets.delete_dataset(sessions, other.id, actor=ADMIN)
    _check_all(sessions, first.id)
    again = datasets.create_dataset(sessions, "Again", responses=_rows(TEXTS), actor=ADMIN)
    assert _check_all(sessions, again.id) == _check_all(sessions, again.id) > 0


def _migrate(url: str, target: str) -> None:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as connection:
        command.upgrade(alembic_config(connection), target)
        connection.commit()
    engine.dispose()


def test_the_migration_indexes_the_responses_already_there(backend, new_database):
    url = new_database(backend)
    _migrate(url, "0040_agreement_people_kept")
    sessions = open_database(url, migrate=False)
    dataset = datasets.create_dataset(sessions, "Answers", responses=_rows(TEXTS), actor=ADMIN)
    sessions.kw["bind"].dispose()
    upgrade_to_head(url)
    sessions = open_database(url, migrate=False)
    try:
        assert _check_all(sessions, dataset.id) > len(NEEDLES)
        if backend == "postgresql":
            with sessions() as session:  # the backfill itself, not the ILIKE, found them
                found = session.scalar(text("SELECT count(*) FROM responses "
                                            "WHERE search_output LIKE '%dose%'"))
            assert found == 2
    finally:
        sessions.kw["bind"].dispose()


def _plan(session, backend: str, needle: str) -> str:
    clause = results_repo.search_clause(needle, backend)
    query = select(func.count()).select_from(m.ResponseRow).where(clause)
    compiled = query.compile(session.get_bind(), compile_kwargs={"literal_binds": True})
    return "\n".join(" ".join(str(c) for c in row)
                     for row in session.execute(text("EXPLAIN " + str(compiled))))


@pytest.mark.postgres
def test_a_selective_search_reads_the_index_on_postgresql(new_database):
    # PostgreSQL's alone: SQLite's search has no index (migration 0041 says why)
    backend = "postgresql"
    sessions = open_database(new_database(backend))
    # enough responses that a scan is not the cheapest way
    texts = [(f"id{i}", f"question {i}", f"answer {i} " + "margin dose " * 20)
             for i in range(20_000)]
    texts[1999] = ("id1999", "question 1999", "a Xylophone, once")
    try:
        dataset = datasets.create_dataset(sessions, "Many", responses=_rows(texts),
                                          actor=ADMIN)
        # what autovacuum does after an import: the rows counted, the GIN index's pending
        # list of new rows merged into it
        with sessions.kw["bind"].connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("VACUUM ANALYZE responses"))
        with sessions() as session:
            # (with every bound value written in: PostgreSQL's shows each % twice, as LIKE
            # reads the same)
            plan = _plan(session, backend, "xylophone")
            assert "Bitmap Index Scan on ix_responses_search" in plan, plan
            # a needle in every response: a scan, not the whole index and every row again
            assert "ix_responses_search" not in _plan(session, backend, "margin dose"), plan
            assert _plain(session, dataset.id, "xylophone") == results_repo.candidate_ids(
                session, dataset.id, "xylophone") != []
    finally:
        sessions.kw["bind"].dispose()


@pytest.mark.postgres
def test_without_pg_trgm_the_upgrade_goes_on_and_the_search_scans(_postgres):
    """A database user that may not create extensions (no CREATE on the database): the
    upgrade goes on without the index and the search finds the same."""
    server = postgres_or_fail(_postgres)
    admin = create_engine(server.url(), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    name, role = "rw_no_trgm", "rw_plain_user"
    with admin.connect() as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        c.execute(text(f"DROP ROLE IF EXISTS {role}"))
        c.execute(text(f"CREATE ROLE {role} LOGIN"))
        c.execute(text(f"CREATE DATABASE {name}"))
        c.execute(text(f"REVOKE CREATE ON DATABASE {name} FROM PUBLIC"))
    owner = create_engine(server.url(name), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with owner.connect() as c:
        c.execute(text(f"ALTER SCHEMA public OWNER TO {role}"))
    owner.dispose()
    url = server.url(name).replace("postgres@", f"{role}@")
    try:
        upgrade_to_head(url)
        engine = create_db_engine(url, poolclass=NullPool)
        sessions = make_session_factory(engine)
        with sessions() as session:
            assert session.scalar(text(
                "SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'")) == 0
            assert session.scalar(text(
                "SELECT count(*) FROM pg_indexes WHERE indexname = 'ix_responses_search'")) == 0
        dataset = datasets.create_dataset(sessions, "Answers", responses=_rows(TEXTS),
                                          actor=ADMIN)
        assert _check_all(sessions, dataset.id) > len(NEEDLES)
        engine.dispose()
    finally:
        with admin.connect() as c:
            c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            c.execute(text(f"DROP ROLE IF EXISTS {role}"))
        admin.dispose()



def test_an_import_in_many_row_statements_stores_every_row_as_given(sessions):
    # every field of every row of a batch import, in order, and found by the search
    rows = [{"id": f"k{i}", "query": None if i % 7 else f"q {i}", "text": f"text {i} é",
             "thinking": f"t{i}" if i % 2 else None, "reference": "ref" if i % 3 else None,
             "grp": i % 5} for i in range(250)]
    dataset = datasets.create_dataset(sessions, "Many", responses=rows, actor=ADMIN)
    stored = datasets.list_responses(sessions, dataset.id, limit=None)
    assert [(r.external_id, r.query, r.output, r.thinking, r.reference, r.metadata)
            for r in stored] == [(r["id"], r["query"], r["text"], r["thinking"],
                                  r["reference"], {"grp": r["grp"]}) for r in rows]
    assert len({r.created_at for r in stored}) >= 1 and all(r.created_at for r in stored)
    _check_all(sessions, dataset.id)
