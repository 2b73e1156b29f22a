"""The queries of the Agreement report's sources (issue 41): each source's verdicts as
``(response, criterion, verdict, at)`` rows, and the one count of their patterns.

People's verdicts in force come from ``effective_verdicts``, a run's from its
``grade_criteria`` (less the responses a calibrated run showed as examples), a panel's from its
stored ``panel_verdicts``. ``patterns_query`` counts, per criterion, how many keys got each
combination of the sources' verdicts: every pair's confusion counts and alpha follow from it
(storage.services.agreement_counts).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import (
    BigInteger,
    Integer,
    Select,
    and_,
    case,
    cast,
    func,
    literal,
    select,
    union_all,
)
from sqlalchemy.orm import aliased

from grading.types import Verdict
from storage import models as m
from storage.services.agreement_sources import AgreementData


def people_side(rubric_version_id: int, dataset_id: int) -> Select:
    """(response, criterion, verdict, at) of the human verdicts in force: the decided rows
    of ``effective_verdicts`` (disputed ones have none), through its set index. ``at`` is
    the order the report lists a source's keys in within a response (here the criterion
    id, as ``current_human_verdicts``)."""
    ev = m.EffectiveVerdictRow
    return (select(ev.response_id, ev.criterion_id, ev.verdict, ev.criterion_id.label("at"))
            .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id,
                   ev.status != "disputed", ev.verdict.is_not(None)))


def run_side(run_id: int) -> Select:
    """A run's verdicts as ``people_side`` gives people's; ``at`` is the criterion's
    position in the grade (``run_repo.run_verdicts``' order)."""
    grade, row = aliased(m.GradeRow), aliased(m.GradeCriterionRow)
    shown = select(m.RunExampleRow.response_id).where(m.RunExampleRow.run_id == run_id)
    return (select(grade.response_id, row.criterion_id, row.verdict, row.position.label("at"))
            .join(grade, grade.id == row.grade_id)
            .where(grade.run_id == run_id, row.verdict.is_not(None),
                   grade.response_id.not_in(shown)))


def panel_side(panel_id: int, member_run_ids: Sequence[int]) -> Select:
    """A panel's stored decisions (``panel_verdicts``, by its primary key) without the
    responses a calibrated member showed as examples, as ``people_side``."""
    v = m.PanelVerdictRow
    shown = (select(m.RunExampleRow.response_id)
             .where(m.RunExampleRow.run_id.in_(list(member_run_ids))))
    return (select(v.response_id, v.criterion_id, v.verdict, v.criterion_id.label("at"))
            .where(v.panel_id == panel_id, v.verdict.is_not(None),
                   v.response_id.not_in(shown)))


def side_of(data: AgreementData, key: str) -> Select | None:
    """The query of one of ``data``'s verdict sources (people, a run or a panel)."""
    source = data.source(key)
    if source.is_human:
        return people_side(data.rubric_version_id, data.dataset_id)
    if source.is_panel:
        return panel_side(source.panel_id, source.member_run_ids)
    return run_side(source.run_id) if source.run_id is not None else None


def disagreeing_query(sides: Sequence[Select], criterion_id: int) -> Select:
    """The responses where these sources gave both MET and UNMET on the criterion."""
    parts = [side.where(side.selected_columns.criterion_id == criterion_id) for side in sides]
    every = (parts[0] if len(parts) == 1 else union_all(*parts)).subquery("every")
    e = every.c
    return (select(e.response_id).group_by(e.response_id)
            .having(func.sum(case((e.verdict == Verdict.MET.value, 1), else_=0)) > 0,
                    func.sum(case((e.verdict == Verdict.UNMET.value, 1), else_=0)) > 0))


RANK = 1_000_000_000  # source index x this + the key's place in the source: "first met"
CODES = {Verdict.MET: 1, Verdict.UNMET: 2, Verdict.CANNOT_ASSESS: 3}
DECODE: dict[int | None, Verdict | None] = {
    None: None, **{code: verdict for verdict, code in CODES.items()}}


def patterns_query(sides: Sequence[Select], voters: Sequence[int], first: int = 0) -> Select:
    """How many keys got each pattern of verdicts: per (criterion, response) any source
    answered, each source's verdict (1 MET, 2 UNMET, 3 CANNOT_ASSESS, NULL none), then
    ``GROUP BY (criterion, v0, v1, ...)``. A unit where the ``voters`` (the sources of
    alpha) gave both MET and UNMET is its own row, with its response and where the first
    voter that answered it lists it (index x RANK + its ``at``): alpha sums those units in
    the order the report meets them. Every pair's confusion counts and alpha follow from
    these rows; one pass over the sources' verdicts. ``first``: the number of the first
    source (its ``v`` column is still ``v0``), ``voters`` numbered the same way: a part of
    a bigger count numbers its sources as the whole does (agreement_judge_counts)."""
    columns = _unit_columns(sides, voters, first)
    return select(*columns, func.count()).group_by(*columns)


def unit_rows_query(sides: Sequence[Select], voters: Sequence[int], first: int = 0,
                    also: Sequence[int] | None = None) -> Select:
    """``patterns_query``'s rows one unit at a time, each with its response last (not
    grouped): the count of a set of responses can then be patched response by response
    (storage.services.agreement_kept). ``also``: other voters; then the unit's first rank
    among them comes before the response (what the count of their sources alone would
    give as the unit's rank, without counting again)."""
    columns = _unit_columns(sides, voters, first, with_response=True, also=also)
    return select(*columns)


def _unit_columns(sides: Sequence[Select], voters: Sequence[int], first: int,
                  with_response: bool = False, also: Sequence[int] | None = None) -> list:
    parts = []
    for i, side in enumerate(sides):
        s = side.subquery(f"s{i}")
        code = case(*[(s.c.verdict == v.value, c) for v, c in CODES.items()], else_=None)
        parts.append(select(literal(i + first, Integer).label("src"), s.c.response_id,
                            s.c.criterion_id, code.label("code"),
                            (cast(literal(i + first), BigInteger) * RANK + s.c.at)
                            .label("rank")))
    every = (parts[0] if len(parts) == 1 else union_all(*parts)).subquery("every")
    e = every.c
    voting = e.src.in_(list(voters))

    def votes(code: int):
        return func.sum(case((and_(voting, e.code == code), 1), else_=0))

    units = (select(e.criterion_id,
                    *[func.max(case((e.src == i + first, e.code), else_=None))
                      .label(f"v{i}") for i in range(len(sides))],
                    votes(1).label("met"), votes(2).label("unmet"),
                    func.min(case((voting, e.rank), else_=None)).label("first"),
                    *([] if also is None else [
                        func.min(case((e.src.in_(list(also)), e.rank), else_=None))
                        .label("first_also")]),
                    e.response_id)
             .group_by(e.criterion_id, e.response_id).subquery("units"))
    u = units.c
    disagree = and_(u.met > 0, u.unmet > 0)
    columns = [u.criterion_id, *[u[f"v{i}"] for i in range(len(sides))],
               case((disagree, u.response_id), else_=None).label("rid"),
               case((disagree, u.first), else_=None).label("rank")]
    if also is not None:
        columns.append(u.first_also)
    return [*columns, u.response_id.label("unit_response")] if with_response else columns
