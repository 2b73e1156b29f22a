"""The texts the database writes into the JSONL export (storage/export_sql.py) are the ones
``json.dumps(..., ensure_ascii=False)`` writes, character by character, on SQLite
(``json_quote``) and PostgreSQL (``to_json``); and the CSV rows built from cells are used
only when each column's name is its own."""

from __future__ import annotations

import json

from sqlalchemy import Text, cast, literal, select

from storage import export_sql
from storage.export_csv import Cells, csv_columns


def _texts(dialect: str) -> list[str]:
    every = [chr(i) for i in range(0x800) if i or dialect == "sqlite"]  # PostgreSQL: no NUL
    wide = [chr(i) for i in range(0x800, 0x110000, 97) if not 0xD800 <= i < 0xE000]
    return [f"a{c}b" for c in every + wide] + [
        "", " ", "\u2028\u2029", "\ufeff", "😀 naïve", '"quoted" \\ back\\slash',
        "</script>", "line\r\nbreak\ttab\x7f\x1f", "x" * 5000]


def test_the_database_writes_each_text_as_json_dumps_does(sessions):
    dialect = export_sql.dialect_of(sessions)
    texts = _texts(dialect)
    written: list[str] = []
    with sessions() as session:
        for start in range(0, len(texts), 400):
            chunk = texts[start:start + 400]
            written += session.execute(select(*(
                export_sql.quoted(dialect, cast(literal(text), Text)) for text in chunk))).one()
        none = session.execute(select(export_sql.quoted(dialect, cast(None, Text)))).scalar()
    assert none == "null"
    wrong = [(text, found) for text, found in zip(texts, written, strict=True)
             if found != json.dumps(text, ensure_ascii=False)]
    assert not wrong, wrong[:5]


def test_a_criterion_choice_is_written_as_json_dumps_writes_it(sessions):
    """The choice (an option label, else the verdict) is quoted by hand for a verdict (one
    of the tables' checked values) and escaped by the database for a label: either way the
    JSON text ``json.dumps`` writes of ``option or verdict``, ``null`` for neither."""
    from storage.models import VERDICTS

    dialect = export_sql.dialect_of(sessions)
    labels = ['a "quoted" label', "back\\slash", "two\nlines", "naïve 😀", "MET", ""]
    cases = [(None, v) for v in VERDICTS] + [(None, None)] + [
        (label, verdict) for label in labels for verdict in (None, "MET")]
    with sessions() as session:
        written = session.execute(select(*(
            export_sql._choice(dialect, cast(literal(option), Text),
                               cast(literal(verdict), Text))
            for option, verdict in cases))).one()
    expected = [json.dumps(option if option is not None else verdict, ensure_ascii=False)
                for option, verdict in cases]
    assert list(written) == expected


def test_rows_are_built_from_cells_only_when_each_column_is_its_own():
    plain = csv_columns(["Accuracy", "Tone"], True, ["team", "model"])
    assert Cells(plain, ["team", "model"]).usable
    # a criterion labelled twice in the header, an upload column a criterion's column
    # also names, a criterion named "upload" whose columns look like an upload's
    assert not Cells(csv_columns(["Tone", "Tone"]), []).usable
    assert not Cells(csv_columns(["upload"], False, ["reason"]), ["reason"]).usable
    assert not Cells(csv_columns(["upload"], False, []), []).usable
