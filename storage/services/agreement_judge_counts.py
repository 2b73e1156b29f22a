"""The judges' share of the Agreement report's pattern count, kept between verdicts (issue 41,
plan step 5: caches invalidated by what changed).

The pattern count (``agreement_sides.patterns_query``) reads every verdict of every source:
at 100,000 responses x 3 runs and a panel, 3.2 million rows, while a saved verdict changes
only people's column on the reviewed responses. So the count is made in three parts, added
as row counts:

- the judges alone over every response (``JudgePatterns``): made once and kept by the page
  until a judge's stamp moves (a grade landed, a run's status changed, a panel was filled);
- minus the judges alone over the reviewed responses;
- plus every source, people first, over the reviewed responses.

A pattern row is ``(criterion, verdict code of each source, response, rank, n)``; the
response and rank are set only on units where the voters gave both MET and UNMET (alpha sums
those one by one, in order). Sources are numbered as in the whole count (people 0, then the
judges), so a judge's unit on a reviewed response has the same row in the first two parts
and cancels exactly. The rows are the ones the whole count gives (tested on random worlds
against it, and before use every row's count must stay positive).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Select, case, func, select

from storage import models as m
from storage.engine import SessionFactory
from storage.id_chunks import id_chunks
from storage.repositories import effective as effective_repo
from storage.repositories import runs as run_repo
from storage.services import panels
from storage.services.agreement_sides import (
    panel_side,
    patterns_query,
    run_side,
    unit_rows_query,
)
from storage.services.agreement_sources import data_stamp

Row = tuple  # (criterion, code of each source..., response or None, rank or None)

# The most responses an open part (``OpenPart``) is kept for; with more still open (a run far
# from done) the count is kept without one and counted whole when a grade lands.
OPEN_MOST = 20_000
_CHUNK = 2_000  # response ids bound in one IN (): SQLite's limit is 32,766 variables


@dataclass(frozen=True)
class OpenPart:
    """The responses a grade can still change, as the count saw them: some judge run (or a
    ready panel's member) holds them but has no grade for them, or only a transient failure
    (the one grade ever replaced: storage.services.grade_records). Every other response
    has a grade, never replaced, from each, so its rows cannot move while the judges' keys
    stay. ``ids`` (int64, ascending) and ``rows``: the count over those responses alone, part
    of ``JudgePatterns.rows`` (what ``advanced`` takes out before counting them again)."""

    ids: bytes
    rows: tuple[tuple[Row, int], ...]

    def response_ids(self) -> list[int]:
        return array("q", self.ids).tolist()


@dataclass(frozen=True)
class JudgePatterns:
    """The judges' pattern rows over every response, numbered from 1 (people are 0)."""

    rubric_version_id: int
    dataset_id: int
    keys: tuple[str, ...]  # the judges' source keys, in the report's order
    voters: tuple[int, ...]  # their numbers (from 1) that count in alpha (not panels)
    stamp: object  # the judges' part of ``agreement_sources.data_stamp`` when counted
    rows: tuple[tuple[Row, int], ...]
    # the responses a grade can still change and their share of ``rows`` (None: too many,
    # or not known); not part of what the count is, so not compared
    open: OpenPart | None = field(default=None, compare=False, repr=False)


def judge_stamp(stamp: tuple) -> tuple:
    """The judges' part of ``data_stamp``: the runs' graded counts and statuses, the ready
    panels. People's verdicts do not move it."""
    return stamp[0], stamp[2]


def judge_sides(sessions: SessionFactory, rubric_version_id: int,
                dataset_id: int) -> tuple[list[str], list[Select], list[int]] | None:
    """The judges' keys, queries and alpha voters (numbered from 1), in the report's order
    (per-criterion runs by id, then the ready panels by id); None when a panel's stored
    decisions are not all the ones read (the report reads every verdict then)."""
    keys: list[str] = []
    sides: list[Select] = []
    voters: list[int] = []
    with sessions() as session:
        for run in run_repo.list_runs(session, rubric_version_id=rubric_version_id,
                                      dataset_id=dataset_id):
            if run.grader == "rubric_as_judge":
                continue
            keys.append(f"run:{run.id}")
            sides.append(run_side(run.id))
            voters.append(len(keys))
    for panel in panels.list_panels(sessions, dataset_id=dataset_id,
                                    rubric_version_id=rubric_version_id):
        if not panel.ready:
            continue
        with sessions() as session:
            if panels.unsettled(session, panel.id):
                return None
        keys.append(f"panel:{panel.id}")
        sides.append(panel_side(panel.id, [member.run.id for member in panel.members]))
    return keys, sides, voters


def judge_patterns(sessions: SessionFactory, rubric_version_id: int,
                   dataset_id: int) -> JudgePatterns | None:
    """The judges alone over every response, counted now (None: a panel is unsettled, no
    judge, or a judge's stamp moved while counting), with its open part when at most
    ``OPEN_MOST`` responses are open."""
    before = data_stamp(sessions, rubric_version_id, dataset_id)
    found = judge_sides(sessions, rubric_version_id, dataset_id)
    if found is None or not found[0]:
        return None
    keys, sides, voters = found
    with sessions() as session:
        # before the count: a response settles, never opens again (grades are never
        # deleted but a transient failure, in the transaction storing what replaces it),
        # so this is every response open when counted (and maybe a few settled since)
        opened = session.scalars(open_query(judge_run_ids(session, keys))
                                 .limit(OPEN_MOST + 1)).all()
        if len(opened) > OPEN_MOST:
            rows, part = _keyed(session.execute(patterns_query(sides, voters, first=1))
                                .all(), 1), None
        elif not opened:
            rows, part = _keyed(session.execute(patterns_query(sides, voters, first=1))
                                .all(), 1), []
        else:  # one statement: the open part is the same snapshot as the whole
            rows, part = _split(session.execute(_flagged_query(sides, voters, opened)).all())
    if judge_stamp(data_stamp(sessions, rubric_version_id, dataset_id)) != judge_stamp(before):
        return None
    return JudgePatterns(rubric_version_id, dataset_id, tuple(keys), tuple(voters),
                         judge_stamp(before), tuple(rows),
                         None if part is None else OpenPart(_ids(opened), tuple(part)))


def advanced(sessions: SessionFactory, kept: JudgePatterns, keys: Sequence[str],
             sides: Sequence[Select], voters: Sequence[int],
             stamp: tuple) -> JudgePatterns | None:
    """``kept`` brought to the judges' ``stamp`` (the current one) by counting its open
    responses again: their rows as kept out, their rows now in. The rows a whole count gives
    (the others cannot have moved); None when it cannot be done so (no open part, other
    judges, a run or a panel come or gone, the judges moved while counting, a count that
    would not stay positive): then count the whole."""
    if (kept.open is None or tuple(keys) != kept.keys or tuple(voters) != kept.voters
            or not only_grades_landed(kept.stamp, stamp)):
        return None
    before = data_stamp(sessions, kept.rubric_version_id, kept.dataset_id)
    if judge_stamp(before) != stamp:
        return None
    total: Counter[Row] = Counter()
    for row, n in kept.rows:
        total[row] += n
    for row, n in kept.open.rows:
        total[row] -= n
    rows, still, part = recounted(sessions, keys, sides, voters, kept.open.response_ids())
    for row, n in rows:
        total[row] += n
    if judge_stamp(data_stamp(sessions, kept.rubric_version_id, kept.dataset_id)) != stamp:
        return None
    if any(n < 0 for n in total.values()):
        return None
    return JudgePatterns(kept.rubric_version_id, kept.dataset_id, kept.keys, kept.voters,
                         stamp, tuple((row, n) for row, n in total.items() if n),
                         OpenPart(_ids(still), tuple(part.items())))


def recounted(sessions: SessionFactory, keys: Sequence[str], sides: Sequence[Select],
              voters: Sequence[int], ids: Sequence[int]
              ) -> tuple[list[tuple[Row, int]], list[int], Counter[Row]]:
    """The judges' rows over the responses ``ids`` alone, counted now (2,000 a statement),
    the ones among them still open (ascending) and those's share of the rows: what
    ``advanced`` puts in place of a kept open part (the caller checks the judges' stamp
    before and after)."""
    counted: list[tuple[Row, int]] = []
    still: list[int] = []
    part: Counter[Row] = Counter()
    with sessions() as session:
        runs = judge_run_ids(session, keys)
        for chunk in id_chunks(list(ids), _CHUNK):
            # before the count, as in judge_patterns: every one still open when counted
            opened = session.scalars(open_query(runs, chunk)).all()
            still.extend(opened)
            within = [side.where(side.selected_columns.response_id.in_(chunk))
                      for side in sides]
            if opened:
                rows, now_open = _split(session.execute(
                    _flagged_query(within, voters, opened)).all())
            else:
                rows, now_open = _keyed(session.execute(
                    patterns_query(within, voters, first=1)).all(), 1), []
            counted.extend(rows)
            for row, n in now_open:
                part[row] += n
    return counted, sorted(still), part


def only_grades_landed(was: tuple, now: tuple) -> bool:
    """Between two judges' stamps only grades may have landed: the same runs (by id) and
    ready panels. A run's status may change: the count reads no status (a panel member
    still grading makes ``judge_sides`` None before this is asked)."""
    (runs_was, panels_was), (runs_now, panels_now) = was, now
    return (tuple(panels_was) == tuple(panels_now)
            and [r[0] for r in runs_was] == [r[0] for r in runs_now])


def judge_run_ids(session, keys: Sequence[str]) -> list[int]:
    """The runs whose grades the judges ``keys`` read: theirs and their panels' members'."""
    runs = [int(key.split(":")[1]) for key in keys if key.startswith("run:")]
    panel_ids = [int(key.split(":")[1]) for key in keys if key.startswith("panel:")]
    if panel_ids:
        runs += session.scalars(select(m.PanelMemberRow.run_id)
                                .where(m.PanelMemberRow.panel_id.in_(panel_ids))).all()
    return sorted(set(runs))


def open_query(run_ids: Sequence[int], within: Sequence[int] | None = None) -> Select:
    """The responses (ascending) one of these runs holds without a grade for them, or with
    only a transient failure: the ones a grade can still change."""
    rr, g = m.RunResponseRow, m.GradeRow
    settled = (select(g.id).where(g.run_id == rr.run_id, g.response_id == rr.response_id,
                                  g.transient.is_(False)).exists())
    query = select(rr.response_id).where(rr.run_id.in_(list(run_ids)), ~settled)
    if within is not None:
        query = query.where(rr.response_id.in_(list(within)))
    return query.distinct().order_by(rr.response_id)


def _flagged_query(sides: Sequence[Select], voters: Sequence[int],
                   opened: Sequence[int]) -> Select:
    """``patterns_query`` (judges numbered from 1) with one more column: 1 for the rows of
    the ``opened`` responses, 0 for the others."""
    units = unit_rows_query(sides, voters, first=1).subquery("unit")
    columns = list(units.c)[:-1]
    flag = case((units.c.unit_response.in_(list(opened)), 1), else_=0).label("open")
    return select(*columns, flag, func.count()).group_by(*columns, flag)


def _split(rows) -> tuple[list[tuple[Row, int]], list[tuple[Row, int]]]:
    """``_flagged_query``'s rows: the count (a pattern's two flags summed) and the open
    responses' part (few rows: looked up, not a Counter of every row)."""
    part = [((row[0], None, *row[1:-2]), int(row[-1])) for row in rows if row[-2]]
    opened = dict(part)  # one row per pattern within a flag (GROUP BY)
    whole: list[tuple[Row, int]] = []
    for row in rows:
        if not row[-2]:
            key = (row[0], None, *row[1:-2])
            whole.append((key, int(row[-1]) + opened.pop(key, 0)))
    whole.extend(opened.items())  # patterns only open responses have
    return whole, part


def _ids(ids: Sequence[int]) -> bytes:
    return array("q", ids).tobytes()


def _keyed(rows, first: int) -> list[tuple[Row, int]]:
    """Pattern rows as (row without its count, count), with ``first`` empty (None) source
    columns in front (people's, for the judges' rows)."""
    return [((row[0], *([None] * first), *row[1:-1]), int(row[-1])) for row in rows]


def combined_rows(sessions: SessionFactory, judges: JudgePatterns, sides: Sequence[Select],
                  voters: Sequence[int]) -> list[tuple] | None:
    """The whole count's rows (people's side first in ``sides``, then the judges' in
    ``judges.keys`` order) from the kept judges' rows and two counts over the reviewed
    responses; None if a row's count would not stay positive (then count the whole)."""
    reviewed = effective_repo.reviewed_ids_query(
        judges.rubric_version_id, judges.dataset_id).order_by(None)

    def within(side: Select) -> Select:
        return side.where(side.selected_columns.response_id.in_(reviewed))

    with sessions() as session:
        every = session.execute(patterns_query([within(s) for s in sides], voters)).all()
        alone = session.execute(patterns_query([within(s) for s in sides[1:]],
                                               list(judges.voters), first=1)).all()
    total: Counter[Row] = Counter()
    for row, n in judges.rows:
        total[row] += n
    for row, n in _keyed(alone, 1):
        total[row] -= n
    for row, n in _keyed(every, 0):
        total[row] += n
    if any(n < 0 for n in total.values()):
        return None
    return [(*row, n) for row, n in total.items() if n]
