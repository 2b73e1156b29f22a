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

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select

from storage import models as m
from storage.engine import SessionFactory
from storage.plain_rows import plain_rows
from storage.services import panels
from storage.services.agreement_folded import FoldedRows
from storage.services.agreement_judge_counts import JudgePatterns, judge_stamp
from storage.services.agreement_sources import data_stamp
from storage.services.score_column import ScoreColumn


@dataclass(frozen=True, eq=False)
class SourceGrades:
    """One run's or panel's grades, by response: its score (``scored`` False: none) and,
    for a panel, its members' cost summed over the grades whose cost is known."""

    ids: object  # numpy int64, ascending
    scores: object  # numpy float64 (0 where not scored)
    scored: object  # numpy bool
    cost: float | None = None
    unknown_cost_count: int = 0

    @property
    def graded(self) -> int:
        return len(self.ids)

    def column(self, shown: Iterable[int] = ()) -> ScoreColumn:
        """The scores, less the responses ``shown`` as examples."""
        found = ScoreColumn(self.ids[self.scored], self.scores[self.scored])
        return found.without(shown)

    def __eq__(self, other) -> bool:
        return (isinstance(other, SourceGrades)
                and (self.cost, self.unknown_cost_count) == (other.cost,
                                                              other.unknown_cost_count)
                and self.ids.tolist() == other.ids.tolist()
                and self.scored.tolist() == other.scored.tolist()
                and self.scores.tolist() == other.scores.tolist())


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
    import numpy as np

    where = (judges.rubric_version_id, judges.dataset_id)
    if judge_stamp(data_stamp(sessions, *where)) != judges.stamp:
        return None
    sources = scored_sources(sessions, *where)
    grades: dict[str, SourceGrades] = {}
    with sessions() as session:
        connection = session.connection()
        for key in sources:
            kind, sid = key.split(":")
            if kind == "panel":
                if panels.unsettled(session, int(sid)):
                    return None  # its decisions are made again when read: not kept
                g = m.PanelGradeRow
                rows = plain_rows(connection, select(g.response_id, g.score, g.cost)
                                  .where(g.panel_id == int(sid)).order_by(g.response_id))
                known = [cost for _rid, _score, cost in rows if cost is not None]
                cost, unknown = (sum(known) if known else None), len(rows) - len(known)
            else:
                g = m.GradeRow
                rows = plain_rows(connection, select(g.response_id, g.score)
                                  .where(g.run_id == int(sid)).order_by(g.response_id))
                cost, unknown = None, 0
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            scored = np.fromiter((row[1] is not None for row in rows), dtype=bool,
                                 count=len(rows))
            scores = np.fromiter((0.0 if row[1] is None else row[1] for row in rows),
                                 dtype=np.float64, count=len(rows))
            grades[key] = SourceGrades(ids, scores, scored, cost, unknown)
    folded = judges_folded(judges)
    if judge_stamp(data_stamp(sessions, *where)) != judges.stamp:
        return None
    return JudgeInputs(*where, judges.keys, judges.voters, judges.stamp, folded, sources,
                       grades)


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
                          "cost": g.cost, "unknown": g.unknown_cost_count}]
                   for key, g in inputs.grades.items()],
    }
    return trust_share_codec.encode(value)


def decode(text: str, blob: bytes, *, rubric_version_id: int, dataset_id: int,
           keys, voters, stamp, sources) -> JudgeInputs:
    """The inputs ``encode`` wrote (``trust_share_codec.UnknownShape``: not of this shape)."""
    from storage.services import trust_share_codec

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
                                    g["cost"], int(g["unknown"]))
                  for key, g in value["grades"]}
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise trust_share_codec.UnknownShape(f"not the report's inputs: {error}") from error
    if list(grades) != list(sources):
        raise trust_share_codec.UnknownShape("grades of other sources")
    folded = FoldedRows(width, fold_voters, coded, units.astype("int64", copy=False))
    return JudgeInputs(rubric_version_id, dataset_id, tuple(keys), tuple(voters), stamp,
                       folded, tuple(sources), grades)
