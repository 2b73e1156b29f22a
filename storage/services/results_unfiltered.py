"""The Results views with no filter, read without the matched set (issue 41).

With no filter every response of the dataset matches, and a response's effective score
differs from its stored one (the run's grade, the panel's decision) only where people
touched it (it has a row in ``effective_scores``): those few thousand are read once with
the view's own expressions (:meth:`UnfilteredReads.touched`). The histograms are then the
stored scores' counts from the column's index, corrected on the touched responses; a page
by a score column is the first untouched responses from the index merged with the touched
ones. Where that cannot be read so, the methods return None and ``ResultsQuery`` keeps and
reads the matched set as for any filtered view.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import exists, func, select, text
from sqlalchemy.orm import Session

from storage import models as m
from storage.services.results_order import ScoreBin

_DISTINCT = 5_000  # distinct stored scores of a column counted as such at most


class UnfilteredReads:
    """``ResultsQuery``'s reads of a view with no filter (it provides ``session``, ``spec``,
    ``query``, ``_select``, ``people``, ``stored``, ``overlaid``, ``_touched`` and
    ``_columns``)."""

    def touched(self) -> dict[str, dict[int, float | None]] | None:
        """Per score column, the view's effective score of each response people touched
        (it has a row in ``effective_scores``): the only ones whose effective score may
        differ from the stored one, with the stored one (``j_`` + the column's name).
        Read once. None if the overlay holds a response without such a row (never: the
        overlay's are reviewed responses; the caller then keeps the matched set)."""
        if self._touched is not None:
            return self._touched
        _plain_planner(self.session)
        people = self.people
        names = self._columns()
        # On PostgreSQL the runs' kept scores joined as one GROUP BY (hashed, a few thousand
        # rows), not looked up twice per run and response (5,000 x 6 index probes, most of
        # this read's 60-130 ms); SQLite's lookups are cheaper than its materialized join.
        query, _scores, _panels, stored = (
            self._select(kept_pivoted=True)
            if self.session.get_bind().dialect.name == "postgresql"
            else (self.query, None, None, self.stored))
        query = (query.add_columns(*[stored[name].label(f"j_{name}") for name in names])
                 .where(people.id.is_not(None), people.dataset_id == self.spec.dataset_id))
        found: dict[str, dict[int, float | None]] = {name: {} for name in names}
        for name in names:
            found[f"j_{name}"] = {}
        found["people_score"] = {}
        for row in self.session.execute(query).mappings():
            for name in found:
                found[name][row["rid"]] = row[name]
        overlay = self.spec.overlay
        rids = set(found["people_score"])
        if self.overlaid and not ({rid for rid, _col in overlay.runs} | set(overlay.judged)
                                  | {rid for rid, _col in overlay.panels}) <= rids:
            return None
        self._touched = found
        return found

    def plain_histogram(self, bins: int) -> tuple[ScoreBin, ...] | None:
        """``histogram`` of every response of the dataset (the view has no filter) without
        reading each one: per score column the counts of its stored scores (a GROUP BY over
        the run's or panel's index), corrected on the responses people touched
        (:meth:`touched`: their stored score out, the view's effective score in); everywhere
        else the effective score is the stored one. None where that cannot be read so (a
        column with more distinct scores than are counted this way): the caller then keeps
        and bins the matched set."""
        if bins < 1:
            return ()
        touched = self.touched()
        if touched is None:
            return None
        found_bins: list[ScoreBin] = []
        for name in self._columns():
            found = self.session.execute(self.stored_counts_query(name)).all()
            if len(found) > _DISTINCT:
                return None
            counted = Counter({value: n for value, n in found})
            for rid, value in touched[name].items():
                stored = touched[f"j_{name}"][rid]
                if stored is not None:
                    counted[stored] -= 1
                if value is not None:
                    counted[value] += 1
            values = [(value, n) for value, n in counted.items() if n]
            if any(n < 0 for _value, n in values):
                return None  # a touched response's stored score was not counted: bin it
            if not values:
                continue
            low, high = ((0.0, 1.0) if all(0 <= value <= 1 for value, _n in values)
                         else (min(v for v, _n in values), max(v for v, _n in values)))
            width = (high - low) / bins or 1.0
            binned = [0] * bins
            for value, n in values:
                binned[min(bins - 1, int((value - low) / width))] += n
            found_bins.extend(ScoreBin(run_id=int(name[1:]) if name[0] == "s" else None,
                                       panel_id=int(name[1:]) if name[0] == "p" else None,
                                       low=low + k * width, high=low + (k + 1) * width,
                                       count=n)
                              for k, n in enumerate(binned))
        return tuple(found_bins)

    def ranked_page(self, name: str, descending: bool, offset: int,
                    limit: int) -> list[int] | None:
        """The page in the order of one score column (``s<run>``, ``p<panel>`` or
        ``people_score``, or by the ``spread``) over
        every response of the dataset (no filter), responses without a score last, ties in
        id order: the first ``offset + limit`` untouched responses by stored score from the
        column's index, merged with the touched responses' effective scores
        (:meth:`touched`). None when the page reaches the responses without a score (the
        caller orders the whole set then)."""
        touched = self.touched()
        if touched is None:
            return None
        if name == "spread":
            return self._spread_page(touched, descending, offset, limit)
        wanted = offset + limit
        known = [(score, rid) for rid, score in touched[name].items() if score is not None]
        if name == "people_score":
            # only a response people touched has a score of theirs
            if len(known) < wanted:
                return None
            known.sort(key=lambda found: (-found[0] if descending else found[0], found[1]))
            return [rid for _score, rid in known[offset:wanted]]
        stored = self.session.execute(self.stored_top_query(name, descending, wanted)).all()
        if len(stored) < wanted:
            return None
        known += [(score, rid) for score, rid in stored]
        known.sort(key=lambda found: (-found[0] if descending else found[0], found[1]))
        return [rid for _score, rid in known[offset:wanted]]

    def stored_counts_query(self, name: str):
        """(score, number of) of a score column's stored scores, at most ``_DISTINCT`` + 1
        distinct ones: read from the run's (panel's) scores index."""
        table, key = _stored_table(name)
        return (select(table.score, func.count())
                .where(key == int(name[1:]), table.score.is_not(None))
                .group_by(table.score).limit(_DISTINCT + 1))

    def stored_top_query(self, name: str, descending: bool, count: int):
        """(score, response) of the first ``count`` untouched responses by a score column's
        stored score, ties in id order: the index in score order, each checked untouched."""
        table, key = _stored_table(name)
        ranked = table.score.desc() if descending else table.score
        return (select(table.score, table.response_id)
                .where(key == int(name[1:]), table.score.is_not(None),
                       self._untouched(table.response_id))
                .order_by(ranked, table.response_id).limit(count))

    def _untouched(self, response_id):
        """No row of people's for the response (``touched`` holds those)."""
        people = m.EffectiveScoreRow
        return ~exists(select(people.id).where(
            people.rubric_version_id == self.spec.rubric_version_id,
            people.response_id == response_id))

    def _spread_page(self, touched: dict, descending: bool, offset: int,
                     limit: int) -> list[int] | None:
        """``ranked_page`` by the spread (the largest gap between the runs' effective
        scores, with two known): an untouched response's is its grades' (one GROUP BY over
        the grades' index, no join), a touched one's from its effective scores."""
        runs = list(self.spec.runs)
        if len(runs) < 2:
            return None
        wanted = offset + limit
        known = []
        for rid in touched["people_score"]:
            scores = [touched[f"s{run}"][rid] for run in runs
                      if touched[f"s{run}"][rid] is not None]
            if len(scores) >= 2:
                known.append((max(scores) - min(scores), rid))
        g = m.GradeRow
        spread = (func.max(g.score) - func.min(g.score)).label("spread")
        postgres = self.session.get_bind().dialect.name == "postgresql"
        if postgres:
            # Grouped as the grades' index (response, run, score) gives them, each
            # response's grades in a row: PostgreSQL otherwise hashes 285,000 grades into
            # 95,000 groups (0.18 against 0.11 s at 100,000). For this statement only.
            self.session.execute(text("SET LOCAL enable_hashagg = off"))
        stored = self.session.execute(
            select(spread, g.response_id)
            .where(g.run_id.in_(runs), g.score.is_not(None), self._untouched(g.response_id))
            .group_by(g.response_id).having(func.count() >= 2)
            .order_by(spread.desc() if descending else spread, g.response_id)
            .limit(wanted)).all()
        if postgres:
            self.session.execute(text("SET LOCAL enable_hashagg = on"))
        if len(stored) < wanted:
            return None
        known += [(gap, rid) for gap, rid in stored]
        known.sort(key=lambda found: (-found[0] if descending else found[0], found[1]))
        return [rid for _gap, rid in known[offset:wanted]]


def _plain_planner(session: Session) -> None:
    """PostgreSQL plans the touched responses' lookups (a few thousand rows) at a cost that
    compiles them (JIT, ~0.1 s) and gathers workers for them (the leader then runs every
    correlated lookup alone): neither, for the rest of this page's transaction; and the
    spread's GROUP BY over 100,000 responses hashed in memory, not spilled in 5 batches
    (the default 4 MB: 175 -> 145 ms)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET LOCAL jit = off"))
        session.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))
        session.execute(text("SET LOCAL work_mem = '32MB'"))


def _stored_table(name: str):
    """(table, key column) of a score column's stored scores: a run's grades, a panel's
    decisions."""
    if name[0] == "s":
        return m.GradeRow, m.GradeRow.run_id
    return m.PanelGradeRow, m.PanelGradeRow.panel_id
