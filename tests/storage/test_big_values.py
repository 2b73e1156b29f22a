"""storage.big_values: a kept row's large bytes written and read back the same on both
databases (on SQLite through blob I/O, chunk by chunk), NULLs and small values as they are,
and a row that no longer matches what the caller checked (its stamp) read as none."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import delete, select

from storage import big_values
from storage import models as m
from tests.storage.helpers import make_dataset, make_rubric


def _where(sessions) -> dict:
    version, (dataset, _responses) = make_rubric(sessions), make_dataset(sessions)
    return {"rubric_version_id": version.id, "dataset_id": dataset.id}


def _store(sessions, model, row: dict) -> int:
    with sessions() as session, session.begin():
        session.execute(delete(model))
        big_values.insert_row(session, model, row)
    with sessions() as session:
        return session.scalar(select(model.id))


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_large_values_read_back_byte_for_byte(sessions, kind):
    where = _where(sessions)
    # over two chunks and a part, with bytes that look like text, hex and NULs
    payload = random.Random(41).randbytes(2 * big_values.CHUNK + 12_345) + b"\\x00'\0"
    figures = '{"label": "é — ✓"}'
    s = m.AgreementPeopleRow
    row_id = _store(sessions, s, {**where, "stamp": "one", "figures": figures,
                                  "arrays": kind(payload)})
    with sessions() as session:
        found = big_values.read_row(session, s, row_id, (s.figures, s.arrays, s.stamp),
                                    (s.stamp == "one",))
        plain = session.execute(select(s.figures, s.arrays)).one()  # as anyone reads it
    assert found == (figures, payload, "one")
    assert type(found[1]) is bytes
    assert tuple(plain) == (figures, payload)


def test_nulls_and_small_values_are_stored_as_they_are(sessions):
    where = _where(sessions)
    s = m.JudgePatternSetRow
    rows = random.Random(7).randbytes(big_values.BIG * 3)
    small = b"\x01\x02" * 10  # under BIG: bound as any value
    row_id = _store(sessions, s, {**where, "keys": ["run:1"], "voters": [0], "stamp": "a",
                                  "rows": rows, "open_ids": small, "open_rows": None})
    with sessions() as session:
        found = big_values.read_row(session, s, row_id, (s.rows, s.open_ids, s.open_rows))
        empty = big_values.read_row(session, s, row_id, (s.rows,), (s.stamp == "b",))
        gone = big_values.read_row(session, s, row_id + 1, (s.rows,))
    assert found == (rows, small, None)
    assert empty is None and gone is None


def test_a_row_replaced_since_its_stamp_was_read_reads_as_none(sessions):
    """The stores read a row's id and stamp, then its values: replaced in between (on
    SQLite the new row takes the old one's id), the values are not the checked stamp's."""
    where = _where(sessions)
    s = m.TrustShareRow
    first = _store(sessions, s, {**where, "keys": ["run:1"], "stamp": "old", "figures": "{}",
                                 "arrays": b"o" * big_values.BIG})
    second = _store(sessions, s, {**where, "keys": ["run:1"], "stamp": "new",
                                  "figures": "{}", "arrays": b"n" * big_values.BIG})
    with sessions() as session:
        stale = big_values.read_row(session, s, second, (s.arrays,), (s.stamp == "old",))
        fresh = big_values.read_row(session, s, second, (s.arrays,), (s.stamp == "new",))
    assert stale is None
    assert fresh == (b"n" * big_values.BIG,)
    if session.get_bind().dialect.name == "sqlite":
        assert second == first  # the case the stamp's check is for


def test_a_read_in_a_writing_transaction_sees_its_own_row(sessions):
    """Read inside a transaction that wrote the row (no read transaction of its own), and
    the session's connection usable after a read outside one."""
    where = _where(sessions)
    s = m.AgreementInputsRow
    payload = random.Random(3).randbytes(big_values.BIG + 1)
    with sessions() as session, session.begin():
        big_values.insert_row(session, s, {**where, "keys": [], "voters": [], "sources": [],
                                           "stamp": "w", "figures": "{}", "arrays": payload})
        row_id = session.scalar(select(s.id))
        assert big_values.read_row(session, s, row_id, (s.arrays,)) == (payload,)
    with sessions() as session:
        assert big_values.read_row(session, s, row_id, (s.arrays,)) == (payload,)
        assert session.scalar(select(s.stamp)) == "w"
    with sessions() as session, session.begin():  # and written again after the read
        session.execute(delete(s))
    with sessions() as session:
        assert session.scalar(select(s.id)) is None
