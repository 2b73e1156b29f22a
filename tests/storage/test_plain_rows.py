"""A Core select read as the driver's tuples (storage.plain_rows): the very values and order
SQLAlchemy's rows give, on SQLite and PostgreSQL; a column SQLAlchemy converts (a timestamp,
JSON) is still read converted, as SQLAlchemy's rows."""

from __future__ import annotations

import datetime

from sqlalchemy import select

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
