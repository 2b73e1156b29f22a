"""A Core select read as the driver's tuples (storage.plain_rows): the very values and order
SQLAlchemy's rows give, on SQLite and PostgreSQL; a column SQLAlchemy converts (a timestamp,
JSON) is still read converted, as SQLAlchemy's rows."""

from __future__ import annotations

import datetime

import pytest
from sqlalchemy import select
from sqlalchemy.exc import MultipleResultsFound

from storage import models as m
from storage.plain_rows import plain_rows
from tests.storage.test_report_counts import _random_world


def test_plain_columns_are_the_driver_tuples_with_the_same_values(sessions):
    _random_world(sessions, 41, responses=12)
    query = (select(m.GradeRow.response_id, m.GradeRow.score, m.GradeCriterionRow.verdict,
                    m.GradeCriterionRow.reason)
             .join(m.GradeCriterionRow, m.GradeCriterionRow.grade_id == m.GradeRow.id)
             .order_by(m.GradeRow.id, m.GradeCriterionRow.position))
    with sessions() as session:
        expected = [tuple(row) for row in session.execute(query).all()]
        found = plain_rows(session.connection(), query)

    assert expected and found == expected
    assert all(type(row) is tuple for row in found)  # the driver's own rows


def test_converted_columns_are_read_converted(sessions):
    _random_world(sessions, 42, responses=6)
    query = select(m.HumanVerdictRow.id, m.HumanVerdictRow.created_at).order_by(
        m.HumanVerdictRow.id)
    with sessions() as session:
        expected = session.execute(query).all()
        found = plain_rows(session.connection(), query)

    assert expected and list(found) == list(expected)
    assert all(isinstance(created, datetime.datetime) and created.tzinfo is not None
               for _id, created in found)


def test_no_rows_is_an_empty_list(sessions):
    with sessions() as session:
        assert list(plain_rows(session.connection(), select(m.GradeRow.id))) == []


def test_a_row_of_large_bytes_reads_back_the_same_values(sessions):
    """``binary_row`` (PostgreSQL's binary format through psycopg): the very bytes, text and
    numbers SQLAlchemy's row gives, bytes that look like hex or escapes included; no row is
    None; two rows are an error (the kept rows' reads expect one)."""
    import random

    from sqlalchemy import insert

    from storage.plain_rows import binary_row
    from storage.services import datasets, rubrics
    from tests.actors import ADMIN
    from tests.storage.helpers import CRITERIA

    version = rubrics.create_rubric(sessions, "R", CRITERIA, actor=ADMIN)
    made = [datasets.create_dataset(sessions, f"D{i}", responses=[
        {"id": "r0", "query": "q", "text": "a"}], actor=ADMIN) for i in range(2)]
    payload = bytes(random.Random(41).randrange(256) for _ in range(300_000)) + b"\\x00'\0"
    figures = '{"label": "é — ✓ \\\\x41"}'
    s = m.AgreementInputsRow
    with sessions() as session, session.begin():
        for dataset in made:
            session.execute(insert(s).values(
                rubric_version_id=version.id, dataset_id=dataset.id, keys=["run:1"],
                voters=[0], sources=[], stamp="[1]", figures=figures, arrays=payload))
    query = select(s.figures, s.arrays, s.dataset_id).where(s.dataset_id == made[1].id)
    with sessions() as session:
        expected = tuple(session.execute(query).one())
        found = binary_row(session.connection(), query)
        none = binary_row(session.connection(), query.where(s.dataset_id == -1))
        with pytest.raises(MultipleResultsFound):
            binary_row(session.connection(), select(s.id))

    assert tuple(found) == expected == (figures, payload, made[1].id)
    assert type(bytes(found[1])) is bytes and type(found[0]) is str
    assert none is None
