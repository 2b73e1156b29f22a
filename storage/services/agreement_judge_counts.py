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

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Select

from storage.engine import SessionFactory
from storage.repositories import effective as effective_repo
from storage.repositories import runs as run_repo
from storage.services import panels
from storage.services.agreement_sides import panel_side, patterns_query, run_side
from storage.services.agreement_sources import data_stamp

Row = tuple  # (criterion, code of each source..., response or None, rank or None)


@dataclass(frozen=True)
class JudgePatterns:
    """The judges' pattern rows over every response, numbered from 1 (people are 0)."""

    rubric_version_id: int
    dataset_id: int
    keys: tuple[str, ...]  # the judges' source keys, in the report's order
    voters: tuple[int, ...]  # their numbers (from 1) that count in alpha (not panels)
    stamp: object  # the judges' part of ``agreement_sources.data_stamp`` when counted
    rows: tuple[tuple[Row, int], ...]


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
    judge, or a judge's stamp moved while counting)."""
    before = data_stamp(sessions, rubric_version_id, dataset_id)
    found = judge_sides(sessions, rubric_version_id, dataset_id)
    if found is None or not found[0]:
        return None
    keys, sides, voters = found
    with sessions() as session:
        rows = session.execute(patterns_query(sides, voters, first=1)).all()
    if judge_stamp(data_stamp(sessions, rubric_version_id, dataset_id)) != judge_stamp(before):
        return None
    return JudgePatterns(rubric_version_id, dataset_id, tuple(keys), tuple(voters),
                         judge_stamp(before), tuple(_keyed(rows, 1)))


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
