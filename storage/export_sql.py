"""What the database writes of the export records nobody reviewed (storage/export_rows.py),
a batch at a time: each text as ``json.dumps(..., ensure_ascii=False)`` writes it
(SQLite's ``json_quote``, PostgreSQL's ``to_json``: the same escapes, compared character by
character in tests/storage/test_export_sql.py), and each record's criteria in one GROUP BY
over the batch's range of responses, pivoted by criterion: for JSONL the record's whole
``"criteria"`` text, for CSV each criterion's cells as columns. Numbers stay Python's to
write (``float.__repr__`` is not the database's). Python then joins a few pieces per
record instead of encoding each criterion's fields one by one.

The statements are built once per run or panel (their batch bounds are parameters)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, Select, Text, bindparam, case, cast, func, literal, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from storage import export_lines as lines
from storage import models as m
from storage.dto import CriterionInfo
from storage.engine import SessionFactory
from storage.services.panel_upkeep import GRADES, VERDICTS

FAILED = "every member failed: no verdict"  # a panel's criterion no member decided
# after a criterion's prefix (lines.criterion_prefixes): a criterion no row was read for
_MISSING = lines.judge_criterion("", None, "", None)
# a batch: the responses after AFTER, SIZE of them; then its range [FIRST, LAST]
_AFTER, _SIZE = bindparam("after", type_=Integer), bindparam("size", type_=Integer)
_FIRST, _LAST = bindparam("first", type_=Integer), bindparam("last", type_=Integer)


def dialect_of(sessions: SessionFactory) -> str:
    with sessions() as session:
        return session.get_bind().dialect.name


def quoted(dialect: str, value: ColumnElement) -> ColumnElement[str]:
    """A text column as its JSON text (``null`` for NULL)."""
    if dialect == "sqlite":
        return func.json_quote(value, type_=Text)
    if dialect == "postgresql":
        return func.coalesce(cast(func.to_json(value), Text), "null")
    raise ValueError(f"the export reads SQLite or PostgreSQL, not {dialect}")


def _choice(dialect: str, option: ColumnElement, verdict: ColumnElement) -> ColumnElement[str]:
    """A criterion's choice (its option, else its verdict) as its JSON text. A verdict is
    one of ``models.VERDICTS`` (the tables' CHECK keeps it so: plain capitals, nothing to
    escape), quoted as it is: no escaping call for it on each row (two of a criterion's
    four on PostgreSQL: its criteria statement 10-15 % faster at 100,000); an option label
    is escaped by the database."""
    return case((option.is_not(None), quoted(dialect, option)),
                (verdict.is_not(None), _joined('"', verdict, '"')),
                else_=literal("null", Text))


def _joined(*parts: ColumnElement | str) -> ColumnElement[str]:
    """``a || b || ...`` (each part non-null, or the whole is NULL)."""
    found = None
    for part in parts:
        item = literal(part, Text) if isinstance(part, str) else part
        found = item if found is None else found.op("||", return_type=Text)(item)
    return found


def _response(dialect: str, *, as_json: bool) -> tuple:
    """The response's columns: for JSONL its id as the user knows it and its texts up to the
    upload's value, as the record's JSON (``export_names.response_key``), then its upload."""
    r = m.ResponseRow
    if not as_json:
        return r.external_id, r.query, r.output, r.thinking, r.reference, r.meta
    key = case((r.external_id.is_(None), _joined('"#', cast(r.id, Text), '"')),
               else_=quoted(dialect, r.external_id))
    texts = _joined(', "query": ', quoted(dialect, r.query), ', "response_text": ',
                    quoted(dialect, r.output), ', "thinking": ', quoted(dialect, r.thinking),
                    ', "reference": ', quoted(dialect, r.reference), ', "upload": ')
    return key, texts, r.meta


def _pivot(criteria: Sequence[CriterionInfo], column: ColumnElement,
           value: ColumnElement) -> list[ColumnElement]:
    """Per criterion, its row's ``value`` (NULL when the record has no row for it)."""
    return [func.max(case((column == c.id, value))) for c in criteria]


def _criteria_json(criteria: Sequence[CriterionInfo], column: ColumnElement,
                   fragment: ColumnElement, missing: str | None) -> ColumnElement[str]:
    """The record's criteria between ``[`` and ``]``: per criterion its prefix and its
    ``fragment`` (``missing`` without a row; None: the whole is NULL then)."""
    parts: list[ColumnElement | str] = []
    for (_cid, prefix), found in zip(lines.criterion_prefixes(criteria),
                                     _pivot(criteria, column, fragment), strict=True):
        parts += [(", " if parts else "") + prefix,
                  found if missing is None else func.coalesce(found, missing)]
    return _joined(*parts)


class _Batches:
    """A run's or a panel's two statements: its next page, and its criteria over a range."""

    page: Select
    criteria: Select

    def next_page(self, session: Session, after: int, size: int) -> list[tuple]:
        return session.connection().execute(self.page, {"after": after, "size": size}).all()

    def criteria_of(self, session: Session, first: int, last: int) -> dict[int, Any]:
        return self._keyed(session.connection().execute(
            self.criteria, {"first": first, "last": last}).all())

    def _keyed(self, rows: list) -> dict[int, Any]:
        raise NotImplementedError


class RunBatches(_Batches):
    """A run's batches: (response id, score, raw score, error, then the
    response's columns: ``_response``) of its grades in response order, and response ->
    its criteria: for JSONL their text (``missing_json`` for a grade without criterion rows,
    which is absent), else per criterion of ``criteria`` its judge's choice, reason and
    error, flat (None, "" and None for a criterion without a row)."""

    def __init__(self, dialect: str, run_id: int, criteria: Sequence[CriterionInfo], *,
                 as_json: bool):
        g, gc = m.GradeRow, m.GradeCriterionRow
        error = quoted(dialect, g.error) if as_json else g.error
        self.page = (select(g.response_id, g.score, g.raw_score, error,
                            *_response(dialect, as_json=as_json))
                     .join(m.ResponseRow, m.ResponseRow.id == g.response_id)
                     .where(g.run_id == run_id, g.response_id > _AFTER)
                     .order_by(g.response_id).limit(_SIZE))
        if as_json:
            choice = _choice(dialect, gc.option, gc.verdict)
            columns = [_criteria_json(criteria, gc.criterion_id, _joined(
                choice, ', "reason": ', quoted(dialect, gc.reason), ', "judge_error": ',
                quoted(dialect, gc.error), lines.UNREVIEWED, choice, lines.NOT_REVIEWED,
                "}"), _MISSING)]
        else:
            columns = []
            for c in criteria:
                mine = gc.criterion_id == c.id
                columns += [func.max(case((mine, func.coalesce(gc.option, gc.verdict)))),
                            func.coalesce(func.max(case((mine, gc.reason))), ""),
                            func.max(case((mine, gc.error)))]
        self.as_json = as_json
        # grouped by response (the order the run's grades are read in: no sort)
        self.criteria = (select(g.response_id, *columns)
                         .join(gc, gc.grade_id == g.id)
                         .where(g.run_id == run_id, g.response_id >= _FIRST,
                                g.response_id <= _LAST)
                         .group_by(g.response_id))
        self.missing = (missing_json(criteria) if as_json
                        else (None, "", None) * len(criteria))

    def _keyed(self, rows: list) -> dict[int, Any]:
        if self.as_json:
            return {rid: text for rid, text in rows}
        return {rid: tuple(cells) for rid, *cells in rows}


def missing_json(criteria: Sequence[CriterionInfo]) -> str:
    """A run's criteria text of a grade without any criterion row."""
    return ", ".join(prefix + _MISSING for _cid, prefix in lines.criterion_prefixes(criteria))


def _vote(dialect: str, votes: ColumnElement, at: int) -> ColumnElement[str]:
    """A member's stored choice (``panel_upkeep.encode_vote``: a verdict, ``[label]``)."""
    if dialect == "sqlite":
        return case((func.json_type(votes, f"$[{at}]") == "array",
                     func.json_extract(votes, f"$[{at}][0]")),
                    else_=func.json_extract(votes, f"$[{at}]"))
    element = votes.op("->", return_type=m.JSONType)(at)
    return case((func.jsonb_typeof(element) == "array",
                 element.op("->>", return_type=Text)(0)),
                else_=votes.op("->>", return_type=Text)(at))


def _members(dialect: str, votes: ColumnElement, members: Sequence[int], *,
             as_json: bool) -> ColumnElement:
    """``#3:MET #4:failed``: each member's stored choice (``as_json``: as its JSON text),
    NULL when the stored votes are not one per member (the record is then built per
    grade)."""
    parts: list[ColumnElement | str] = []
    for at, run_id in enumerate(members):
        parts += [f"{' ' if at else ''}#{run_id}:",
                  func.coalesce(func.nullif(cast(_vote(dialect, votes, at), Text), ""),
                                "failed")]
    text = _joined(*parts)
    length = (func.json_array_length(votes) if dialect == "sqlite"
              else func.jsonb_array_length(votes))
    return case((length == len(members), quoted(dialect, text) if as_json else text))


class PanelBatches(_Batches):
    """A panel's batches: (response id, score, raw score, error, cost, then the response's
    columns) of its stored grades in response order, and response -> (its ties, its
    criteria): for JSONL their text, else per criterion of ``criteria`` its choice, note,
    error, tie (``True`` / ``False``, as the CSV writes a boolean) and members' votes, flat.
    The text, or a criterion's votes, is None when a criterion has no stored decision or
    its votes are not one per member (``whole``)."""

    def __init__(self, dialect: str, panel_id: int, criteria: Sequence[CriterionInfo],
                 members: Sequence[int], *, as_json: bool):
        g, v = GRADES.c, VERDICTS.c
        error = quoted(dialect, g.error) if as_json else g.error
        self.page = (select(g.response_id, g.score, g.raw_score, error, g.cost,
                            *_response(dialect, as_json=as_json))
                     .join(m.ResponseRow, m.ResponseRow.id == g.response_id)
                     .where(g.panel_id == panel_id, g.response_id > _AFTER)
                     .order_by(g.response_id).limit(_SIZE))
        if as_json:
            choice = _choice(dialect, v.option, v.verdict)
            columns = [_criteria_json(criteria, v.criterion_id, _joined(
                choice, ', "reason": ', quoted(dialect, v.note), ', "judge_error": ',
                case((v.verdict.is_(None), lines.value(FAILED)), else_="null"),
                lines.UNREVIEWED, choice, lines.NOT_REVIEWED,
                ', "tie": ', case((v.tie, "true"), else_="false"),
                ', "members": ', _members(dialect, v.votes, members, as_json=True), "}"),
                None)]
        else:
            columns = []
            for c in criteria:
                mine = v.criterion_id == c.id
                columns += [func.max(case((mine, func.coalesce(v.option, v.verdict)))),
                            func.max(case((mine, v.note))),
                            func.max(case((mine, case((v.verdict.is_(None), FAILED))))),
                            func.max(case((mine, case((v.tie, "True"), else_="False")))),
                            func.max(case((mine, _members(dialect, v.votes, members,
                                                          as_json=False))))]
        self.as_json = as_json
        self.criteria = (select(v.response_id, func.sum(case((v.tie, 1), else_=0)), *columns)
                         .where(v.panel_id == panel_id, v.response_id >= _FIRST,
                                v.response_id <= _LAST)
                         .group_by(v.response_id))

    def _keyed(self, rows: list) -> dict[int, Any]:
        if self.as_json:
            return {rid: (ties, text) for rid, ties, text in rows}
        return {rid: (ties, tuple(cells)) for rid, ties, *cells in rows}

    def whole(self, decided: tuple | None) -> bool:
        """A response's decisions as read have every criterion, each one vote per member."""
        if decided is None:
            return False
        return decided[1] is not None if self.as_json else None not in decided[1][4::5]
