"""The Agreement report's judges-only inputs, made once per judges' stamp (issue 41).

A new process built the counted report (storage.services.agreement_kept) from the judges'
pattern rows (177,000 at 100,000 responses x 3 runs and a panel: made into tuples, then
folded as the report sums them) and read every judge's score of every response (400,000
rows) again, although neither moves until a judge does. ``JudgeInputs`` holds both as the
report uses them: the judges' count already folded (``FoldedRows``, people's column empty)
and each run's and ready panel's grades as arrays (``SourceGrades``). The report patches the
folded count with people's units (the reviewed responses, which move with every verdict)
and takes each judge's scores as a ``ScoreColumn``. Stored in the database by the judges'
stamp (storage.services.agreement_inputs_store); every figure is the one made from the
rows (tests/storage/test_agreement_inputs.py).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from sqlalchemy import select

from storage import models as m
from storage.engine import SessionFactory
from storage.id_chunks import id_chunks
from storage.plain_rows import plain_rows
from storage.services import panels
from storage.services.agreement_folded import FoldedRows
from storage.services.agreement_judge_counts import (
    JudgePatterns,
    OpenPart,
    judge_stamp,
    only_grades_landed,
    recounted,
)
from storage.services.agreement_sources import data_stamp
from storage.services.score_column import ScoreColumn


@dataclass(frozen=True, eq=False)
class SourceGrades:
    """One run's or panel's grades, by response: its score (``scored`` False: none) and,
    for a panel, its members' cost summed over the grades whose cost is known (and each
    grade's, so that a few grades replaced sum the same: ``advanced``)."""

    ids: object  # numpy int64, ascending
    scores: object  # numpy float64 (0 where not scored)
    scored: object  # numpy bool
    cost: float | None = None
    unknown_cost_count: int = 0
    costs: object = None  # a panel's: numpy float64 (0 where unknown); a run's: None
    costed: object = None  # a panel's: numpy bool, the cost known

    @property
    def graded(self) -> int:
        return len(self.ids)

    def column(self, shown: Iterable[int] = ()) -> ScoreColumn:
        """The scores, less the responses ``shown`` as examples: over these very arrays
        when every grade is scored (not a copy beside them: 1.6 MB a source at 100,000)."""
        if bool(self.scored.all()):
            found = ScoreColumn(self.ids, self.scores)
        else:
            found = ScoreColumn(self.ids[self.scored], self.scores[self.scored])
        return found.without(shown)

    def __eq__(self, other) -> bool:
        return (isinstance(other, SourceGrades)
                and (self.cost, self.unknown_cost_count) == (other.cost,
                                                              other.unknown_cost_count)
                and self.ids.tolist() == other.ids.tolist()
                and self.scored.tolist() == other.scored.tolist()
                and self.scores.tolist() == other.scores.tolist()
                and (self.costs is None) == (other.costs is None)
                and (self.costs is None or (
                    self.costs.tolist() == other.costs.tolist()
                    and self.costed.tolist() == other.costed.tolist())))


class Since(NamedTuple):
    """What ``advanced`` brought inputs over: the judges' stamp it started from, the
    responses it read again (people's rows follow them: agreement_people_store.read_stored)
    and how the judges' rows moved (the kept report follows them: agreement_kept.advance)."""

    stamp: object
    response_ids: tuple[int, ...]
    moved: Counter


@dataclass(frozen=True)
class JudgeInputs:
    """The judges-only inputs of a set's counted report, made at the judges' ``stamp``.
    Stands for the judges' share where ``agreement_kept`` takes a ``JudgePatterns`` (the
    same keys, voters and stamp)."""

    rubric_version_id: int
    dataset_id: int
    keys: tuple[str, ...]  # the judges' count's sources, as JudgePatterns.keys
    voters: tuple[int, ...]  # as JudgePatterns.voters (numbered from 1)
    stamp: object
    folded: FoldedRows  # the judges' rows folded, people's column (0) empty
    sources: tuple[str, ...]  # every run (by id) and ready panel (by id) with grades below
    grades: dict[str, SourceGrades]
    # the open part of the count they were made from (JudgePatterns.open): the responses
    # a grade can still change and their share of the count (``advanced``); not compared
    open: OpenPart | None = field(default=None, compare=False, repr=False)
    # made by ``advanced`` (what it advanced over); not stored
    since: Since | None = field(default=None, compare=False, repr=False)


def scored_sources(sessions: SessionFactory, rubric_version_id: int,
                   dataset_id: int) -> tuple[str, ...]:
    """Every run of the set (by id) and ready panel (by id): the sources whose grades the
    report reads."""
    with sessions() as session:
        runs = session.scalars(select(m.RunRow.id).where(
            m.RunRow.rubric_version_id == rubric_version_id,
            m.RunRow.dataset_id == dataset_id).order_by(m.RunRow.id)).all()
        ready = session.scalars(select(m.PanelRow.id).where(
            m.PanelRow.rubric_version_id == rubric_version_id,
            m.PanelRow.dataset_id == dataset_id,
            m.PanelRow.id.not_in(select(m.PanelFillRow.panel_id))).order_by(m.PanelRow.id)
        ).all()
    return (*(f"run:{rid}" for rid in runs), *(f"panel:{pid}" for pid in ready))


def judges_folded(judges: JudgePatterns) -> FoldedRows:
    """The judges' rows folded as ``agreement_kept.build`` folds the whole count (people's
    column first, empty)."""
    total: Counter = Counter()
    for row, n in judges.rows:
        total[row] += n
    return FoldedRows.of_counts(((row, n) for row, n in total.items() if n),
                                1 + len(judges.keys), (0, *judges.voters))


def make_inputs(sessions: SessionFactory, judges: JudgePatterns) -> JudgeInputs | None:
    """The inputs at ``judges``' stamp: None when the judges moved (or a panel is
    unsettled) meanwhile."""

    where = (judges.rubric_version_id, judges.dataset_id)
    if judge_stamp(data_stamp(sessions, *where)) != judges.stamp:
        return None
    sources = scored_sources(sessions, *where)
    grades: dict[str, SourceGrades] = {}
    with sessions() as session:
        for key in sources:
            if key.startswith("panel:") and panels.unsettled(session, int(key.split(":")[1])):
                return None  # its decisions are made again when read: not kept
            grades[key] = _grades_of(key, _rows_of(session, key))
    folded = judges_folded(judges)
    if judge_stamp(data_stamp(sessions, *where)) != judges.stamp:
        return None
    return JudgeInputs(*where, judges.keys, judges.voters, judges.stamp, folded, sources,
                       grades, judges.open)


def _rows_of(session, key: str, within: Sequence[int] | None = None) -> list[tuple]:
    """A source's grades (response, score; a panel's cost too) in response order: all of
    them, or those on ``within``."""
    kind, sid = key.split(":")
    if kind == "panel":
        g = m.PanelGradeRow
        query = select(g.response_id, g.score, g.cost).where(g.panel_id == int(sid))
    else:
        g = m.GradeRow
        query = select(g.response_id, g.score).where(g.run_id == int(sid))
    if within is not None:
        query = query.where(g.response_id.in_(list(within)))
    return plain_rows(session.connection(), query.order_by(g.response_id))


def _grades_of(key: str, rows: list[tuple]) -> SourceGrades:
    import numpy as np

    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    scored = np.fromiter((row[1] is not None for row in rows), dtype=bool, count=len(rows))
    scores = np.fromiter((0.0 if row[1] is None else row[1] for row in rows),
                         dtype=np.float64, count=len(rows))
    if not key.startswith("panel:"):
        return SourceGrades(ids, scores, scored)
    costed = np.fromiter((row[2] is not None for row in rows), dtype=bool, count=len(rows))
    costs = np.fromiter((0.0 if row[2] is None else row[2] for row in rows),
                        dtype=np.float64, count=len(rows))
    return _costed(ids, scores, scored, costs, costed)


def _costed(ids, scores, scored, costs, costed) -> SourceGrades:
    """A panel's grades, its cost summed as ``make_inputs`` always summed it (the known
    costs in response order)."""
    known = costs[costed].tolist()
    return SourceGrades(ids, scores, scored, sum(known) if known else None,
                        len(costs) - len(known), costs, costed)


# -- advanced over the grades landed since (agreement_inputs_store.kept_inputs) -------------

_CHUNK = 2_000  # response ids bound in one IN ()


def advanced(sessions: SessionFactory, kept: JudgeInputs, keys: Sequence[str],
             sides: Sequence, voters: Sequence[int], sources: Sequence[str],
             stamp: tuple) -> JudgeInputs | None:
    """``kept`` brought to the judges' ``stamp`` (the current one) when only grades landed
    since it was made (the same judges, runs and ready panels, as
    ``agreement_judge_counts.advanced``): the responses open when its count was made are
    counted again (their share of the folded count out, their rows now in:
    ``FoldedRows.patched``) and their grades read again in every source; every other
    response has a grade from every judge run that is never replaced, so nothing of it
    moved. The inputs ``make_inputs`` makes now from a whole count, value for value. None
    when it cannot be done so (no open part kept, a source that is not a judge's, the
    judges moved while reading, a count that would not stay positive): then make them
    whole."""
    import numpy as np

    where = (kept.rubric_version_id, kept.dataset_id)
    if (kept.open is None or tuple(keys) != kept.keys or tuple(voters) != kept.voters
            or tuple(sources) != kept.sources or set(sources) != set(keys)
            or not only_grades_landed(kept.stamp, stamp)):
        return None
    if judge_stamp(data_stamp(sessions, *where)) != stamp:
        return None
    ids = kept.open.response_ids()
    rows, still, part = recounted(sessions, keys, sides, voters, ids)
    changes: Counter = Counter()
    for row, n in rows:
        changes[row] += n
    for row, n in kept.open.rows:
        changes[row] -= n
    touched = np.asarray(ids, dtype=np.int64)
    grades: dict[str, SourceGrades] = {}
    with sessions() as session:
        for key in sources:
            if key.startswith("panel:") and panels.unsettled(session, int(key.split(":")[1])):
                return None
            fresh = [row for chunk in id_chunks(ids, _CHUNK)
                     for row in _rows_of(session, key, chunk)]
            grades[key] = _spliced(kept.grades[key], _grades_of(key, fresh),
                                   touched)
    if judge_stamp(data_stamp(sessions, *where)) != stamp:
        return None
    try:
        folded = kept.folded.patched(changes)
    except ValueError:
        return None  # a unit to take out that is not there: not this count
    if any(n < 0 for n in folded.coded.values()):
        return None
    moved = Counter({row: n for row, n in changes.items() if n})  # gone as well as come
    return JudgeInputs(*where, kept.keys, kept.voters, stamp, folded, kept.sources, grades,
                       OpenPart(array("q", still).tobytes(), tuple(part.items())),
                       Since(kept.stamp, tuple(ids), moved))


def _spliced(old: SourceGrades, fresh: SourceGrades, touched) -> SourceGrades:
    """``old`` with the ``touched`` responses' grades replaced by ``fresh``'s (those
    responses' grades now), in response order."""
    import numpy as np

    keep = ~np.isin(old.ids, touched)
    ids = np.concatenate([old.ids[keep], fresh.ids])
    order = np.argsort(ids, kind="stable")

    def joined(a, b):
        return np.concatenate([a[keep], b])[order]

    ids = ids[order]
    scores, scored = joined(old.scores, fresh.scores), joined(old.scored, fresh.scored)
    if old.costs is None:
        return SourceGrades(ids, scores, scored)
    return _costed(ids, scores, scored, joined(old.costs, fresh.costs),
                   joined(old.costed, fresh.costed))


# -- as JSON and raw arrays (storage.services.trust_share_codec), and back ------------------


def encode(inputs: JudgeInputs) -> tuple[str, bytes]:
    import numpy as np

    from storage.services import trust_share_codec

    folded = inputs.folded
    width = folded.width
    coded = list(folded.coded.items())
    coded_keys = np.array([[cid, *(0 if c is None else c for c in codes)]
                           for (cid, codes), _n in coded], dtype=np.int64).reshape(-1, 1 + width)
    value = {
        "width": width, "voters": list(folded.voters),
        "coded": coded_keys, "coded_n": np.array([n for _k, n in coded], dtype=np.int64),
        "units": folded.units,
        "grades": [[key, {"ids": g.ids, "scores": g.scores, "scored": g.scored,
                          "cost": g.cost, "unknown": g.unknown_cost_count,
                          "costs": g.costs, "costed": g.costed}]
                   for key, g in inputs.grades.items()],
        "open": _open_value(inputs),
    }
    return trust_share_codec.encode(value)


def _open_value(inputs: JudgeInputs) -> list | None:
    """The open part as stored (None: none, or rows the judges' codec cannot keep: the
    inputs are then made whole at the next grade, as the count is counted whole)."""
    import numpy as np

    from storage.services import judge_rows_codec

    if inputs.open is None:
        return None
    try:
        rows = judge_rows_codec.encode(inputs.open.rows, len(inputs.keys))
    except ValueError:
        return None
    return [np.frombuffer(inputs.open.ids, dtype=np.int64), np.frombuffer(rows, dtype=np.uint8)]


def decode(text: str, blob: bytes, *, rubric_version_id: int, dataset_id: int,
           keys, voters, stamp, sources) -> JudgeInputs:
    """The inputs ``encode`` wrote (``trust_share_codec.UnknownShape``: not of this shape)."""
    from storage.services import judge_rows_codec, trust_share_codec

    value = trust_share_codec.decode(text, blob)
    try:
        width, fold_voters = int(value["width"]), tuple(value["voters"])
        coded_keys, coded_n = value["coded"], value["coded_n"]
        if width != 1 + len(keys) or fold_voters != (0, *voters):
            raise trust_share_codec.UnknownShape("folded for other judges")
        coded = Counter({
            (row[0], tuple(None if c == 0 else c for c in row[1:])): n
            for row, n in zip(coded_keys.tolist(), coded_n.tolist(), strict=True)})
        units = value["units"]
        if units.ndim != 2 or units.shape[1] != 6 or units.dtype.kind != "i":
            raise trust_share_codec.UnknownShape("units of another shape")
        grades = {key: SourceGrades(g["ids"], g["scores"], g["scored"].astype(bool),
                                    g["cost"], int(g["unknown"]), g["costs"],
                                    None if g["costed"] is None else g["costed"].astype(bool))
                  for key, g in value["grades"]}
        opened = value["open"]
        part = None if opened is None else OpenPart(
            opened[0].astype("<i8").tobytes(),
            judge_rows_codec.decode(opened[1].tobytes(), len(keys)))
    except (KeyError, TypeError, ValueError, AttributeError,
            judge_rows_codec.UnknownRows) as error:
        raise trust_share_codec.UnknownShape(f"not the report's inputs: {error}") from error
    if list(grades) != list(sources):
        raise trust_share_codec.UnknownShape("grades of other sources")
    folded = FoldedRows(width, fold_voters, coded, units.astype("int64", copy=False))
    return JudgeInputs(rubric_version_id, dataset_id, tuple(keys), tuple(voters), stamp,
                       folded, tuple(sources), grades, part)
