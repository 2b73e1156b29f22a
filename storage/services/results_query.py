"""The Results table's filters, sort, page and histograms as SQL (issue 41).

Effective scores without recomputing them: a run's effective score of a response is its
kept row in ``effective_run_scores`` when people reviewed the response (kept up to date by
storage.services.people_scores), else the grade's own score; people's score is
``effective_scores.score``. So the filters and the sort are one query with
``ORDER BY ... LIMIT`` and the count and histograms are aggregates: only the page's rows are
read into Python. A judge panel's is likewise its kept row in ``effective_panel_scores``
where people reviewed the response, else its stored ``panel_grades.score``; the few
reviewed responses whose score a blind viewer reads otherwise come from an
:class:`Overlay` in a keyed temporary table. storage.services.results_python gives the
same figures from Python objects.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from sqlalchemy import (
    Column,
    Float,
    Integer,
    MetaData,
    Table,
    and_,
    any_,
    case,
    cast,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    union,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session, aliased

from storage import models as m
from storage.repositories import results as repo
from storage.services import results_pivot as pivot
from storage.services.results_filters import (
    disagree_parts,
    failed_query,
    scores_differ_query,
    verdicts_differ_query,
)
from storage.services.results_order import ScoreBin
from storage.services.results_spec import (
    OVERLAY_TABLE,
    Overlay,
    PageQuery,
    VerdictClause,
    overlay_table,
)
from storage.services.results_unfiltered import UnfilteredReads

# The view's spec and its filters live in results_spec.py and results_filters.py; callers and
# tests import them from here too.
__all__ = ["OVERLAY_TABLE", "Overlay", "PageQuery", "ResultsQuery", "VerdictClause",
           "disagree_parts", "failed_query", "overlay_table", "scores_differ_query",
           "verdicts_differ_query"]

MATCHED_TABLE = "results_matched"  # the kept matched set (ResultsQuery.kept)
_LISTED = 20_000  # ids bound as parameters at most (SQLite allows 32,766 in a statement)


class ResultsQuery(UnfilteredReads):
    """The filtered responses of one Results view as a SELECT over ``responses``, with the
    effective score of each run (and people's score) as columns when needed."""

    def __init__(self, session: Session, spec: PageQuery, *, with_scores: bool,
                 known: tuple[frozenset[int], frozenset[int]] | None = None):
        """``known``: (failed, disagree) response ids from the judges' cached facts, used
        for those filters instead of their GROUP BY."""
        self.session, self.spec = session, spec
        self.people = aliased(m.EffectiveScoreRow, name="people")
        self.with_scores, self.known = with_scores, known
        # per score column, its effective score's expression (``scores``, ``panel_scores``)
        # and the stored score it reads where people did not touch the response (the run's
        # grade, the panel's decision): :meth:`plain_histogram`
        self.query, self.scores, self.panel_scores, self.stored = self._select()
        self.overlaid = (with_scores and spec.overlay is not None
                         and bool(spec.overlay.rows()))  # the overlay's table is joined
        self.matched: Table | None = None  # while :meth:`kept`
        self._touched: dict[str, dict[int, float | None]] | None = None
        self.materialized = False  # :meth:`_source`

    def _select(self, *, pivoted: bool = False, kept_pivoted: bool = False):
        """(query, its runs' and panels' score expressions, its stored scores by column).
        ``pivoted``: the runs' grades and kept scores read as one row per response, one
        GROUP BY over the grades' index in response order (storage.services.results_pivot),
        not one join per run: for a matched set of most of the dataset on PostgreSQL
        (each run's join hashed 100,000 grades: 0.35 s of the filtered view's 0.45 s).
        ``kept_pivoted``: the kept scores alone so (one hashed GROUP BY of a few thousand
        rows, not two lookups per run and response): for the responses people touched."""
        session, spec, with_scores, known = self.session, self.spec, self.with_scores, self.known
        resp = m.ResponseRow
        people = self.people
        scores: dict[int, object] = {}
        panel_scores: dict[int, object] = {}
        stored_scores: dict[str, object] = {}
        columns = [resp.id.label("rid"), people.score.label("people_score"),
                   (func.coalesce(people.decided, 0) + func.coalesce(people.disputed, 0))
                   .label("reviewed_count")]
        query = select().select_from(resp).outerjoin(people, and_(
            people.rubric_version_id == spec.rubric_version_id,
            people.response_id == resp.id))
        overlay = (OVERLAY_TABLE if with_scores and spec.overlay is not None
                   and spec.overlay.rows() else None)
        judges = None
        if overlay is not None and spec.overlay.judged:
            judges = overlay.alias("oj")
            query = query.outerjoin(judges, and_(judges.c.rid == resp.id, judges.c.col == 0))
        runs = spec.runs if with_scores else ()
        if (pivoted or kept_pivoted) and runs:
            graded, kept_rows = pivot.run_scores(runs)
            if pivoted:
                query = query.outerjoin(graded, graded.c.response_id == resp.id)
            query = query.outerjoin(kept_rows, kept_rows.c.response_id == resp.id)
        for run_id in runs:
            if pivoted:
                judged = graded.c[pivot.score_name(run_id)]
            else:
                grade = aliased(m.GradeRow, name=f"g{run_id}")
                query = query.outerjoin(grade, and_(grade.run_id == run_id,
                                                    grade.response_id == resp.id))
                judged = grade.score
            if pivoted or kept_pivoted:
                has_kept = and_(people.id.is_not(None),
                                kept_rows.c[pivot.kept_name(run_id)].is_not(None))
                kept_score = kept_rows.c[pivot.score_name(run_id)]
            else:
                kept = aliased(m.EffectiveRunScoreRow, name=f"e{run_id}")
                # The kept row, looked up only where people reviewed the response (it has
                # one only then, people_scores): not a join probed for every response.
                keyed = and_(kept.run_id == run_id, kept.response_id == resp.id)
                has_kept = and_(people.id.is_not(None), exists(select(kept.id).where(keyed)))
                kept_score = select(kept.score).where(keyed).scalar_subquery()
            whens = []
            if overlay is not None and any(run == run_id for _r, run in spec.overlay.runs):
                own = overlay.alias(f"o{run_id}")
                query = query.outerjoin(own, and_(own.c.rid == resp.id,
                                                  own.c.col == run_id))
                whens.append((own.c.rid.is_not(None), own.c.score))
            if judges is not None:
                whens.append((judges.c.rid.is_not(None), judged))
            score = case(*whens, (has_kept, kept_score), else_=judged)
            scores[run_id] = score
            stored_scores[f"s{run_id}"] = judged
            columns.append(score.label(f"s{run_id}"))
        for panel_id in spec.panels if with_scores else ():
            stored = aliased(m.PanelGradeRow, name=f"pg{panel_id}")
            query = query.outerjoin(stored, and_(stored.panel_id == panel_id,
                                                 stored.response_id == resp.id))
            # As a run's: the kept effective score where people reviewed the response
            # (effective_panel_scores), else the panel's stored score.
            kept = aliased(m.EffectivePanelScoreRow, name=f"ep{panel_id}")
            keyed = and_(kept.panel_id == panel_id, kept.response_id == resp.id)
            has_kept = and_(people.id.is_not(None), exists(select(kept.score).where(keyed)))
            whens = [(has_kept, select(kept.score).where(keyed).scalar_subquery())]
            if overlay is not None and any(p == panel_id for _r, p in spec.overlay.panels):
                own = overlay.alias(f"op{panel_id}")
                query = query.outerjoin(own, and_(own.c.rid == resp.id,
                                                  own.c.col == -panel_id))
                whens.insert(0, (own.c.rid.is_not(None), own.c.score))
            score = case(*whens, else_=stored.score)
            panel_scores[panel_id] = score
            stored_scores[f"p{panel_id}"] = stored.score
            columns.append(score.label(f"p{panel_id}"))
        query = query.add_columns(*columns).where(resp.dataset_id == spec.dataset_id)
        clause = repo.search_clause(spec.search, session.get_bind().dialect.name)
        if clause is not None:
            query = query.where(clause)
        for key, value in spec.metadata:
            query = query.where(repo.metadata_value(key) == value)
        if spec.verdict is not None:
            query = query.where(self._verdict_clause(spec.verdict))
        listed = known is not None
        if spec.failed_only and listed:
            query = query.where(self._listed(known[0]))
        elif spec.failed_only:
            query = query.where(resp.id.in_(failed_query(spec.runs)))
        if spec.disagree_only and listed:
            query = query.where(self._listed(known[1]))
        elif spec.disagree_only:
            verdicts, differ = disagree_parts(session, spec.runs, spec.score_gap)
            parts = [p for p in (verdicts, differ) if p is not None]
            query = query.where(resp.id.in_(union(*parts)) if len(parts) > 1
                                else resp.id.in_(parts[0]) if parts else literal(False))
        if spec.reviewed == "reviewed":
            query = query.where(people.id.is_not(None))
        elif spec.reviewed == "not_reviewed":
            query = query.where(people.id.is_(None))
        if spec.min_score is not None or spec.max_score is not None:
            if spec.score_panel_id is not None:
                ranged = [panel_scores[spec.score_panel_id]]
            elif spec.score_run_id is not None:
                ranged = [scores[spec.score_run_id]]
            else:
                ranged = [*scores.values(), *panel_scores.values()]
            query = query.where(or_(*[self._in_range(s) for s in ranged])
                                if ranged else literal(False))
        return query, scores, panel_scores, stored_scores

    def _listed(self, ids: frozenset[int]):
        """``id IN`` the listed ids: on PostgreSQL one array parameter (``= ANY``), not one
        parameter per id, which every statement of the page then bound thousands of; on
        SQLite beyond what a statement binds, one JSON array read by ``json_each`` (the
        judges' GROUP BY over every grade's criteria instead took 15-28 s at 100,000)."""
        if self.session.get_bind().dialect.name == "postgresql":
            return m.ResponseRow.id == any_(literal(sorted(ids), ARRAY(Integer)))
        if len(ids) <= _LISTED:
            return m.ResponseRow.id.in_(sorted(ids))
        each = func.json_each(literal(json.dumps(sorted(ids)))).table_valued("value")
        return m.ResponseRow.id.in_(select(each.c.value))

    def _in_range(self, score):
        """The score within the range: a comparison with NULL is not true, so no response
        without a score passes (no IS NOT NULL test, which evaluated the score's CASE once
        more per run and row); BETWEEN evaluates it once on SQLite (20 of its 440 ms of CPU
        for 87,000 responses at 100,000). Only ever ANDed and ORed into the WHERE."""
        low, high = self.spec.min_score, self.spec.max_score
        if low is not None and high is not None:
            return score.between(low, high)
        return score >= low if low is not None else score <= high

    def _verdict_clause(self, wanted: VerdictClause):
        """People's decided choice where they decided the criterion, else the run's judge's
        (as ``effective_repo.decided_choices`` and ``repo.judge_verdict_ids``)."""
        ev, g, gc = m.EffectiveVerdictRow, m.GradeRow, m.GradeCriterionRow
        resp = m.ResponseRow
        decided = (select(ev.id).where(
            ev.rubric_version_id == self.spec.rubric_version_id,
            ev.dataset_id == self.spec.dataset_id, ev.criterion_id == wanted.criterion_id,
            ev.response_id == resp.id, ev.status != "disputed"))
        if wanted.hidden:
            decided = decided.where(ev.response_id.not_in(list(wanted.hidden)))
        human = decided.where(func.coalesce(ev.option, ev.verdict) == wanted.choice)
        if wanted.panel_id is not None:
            pv = m.PanelVerdictRow
            panel = (select(pv.response_id).where(
                pv.panel_id == wanted.panel_id, pv.response_id == resp.id,
                pv.criterion_id == wanted.criterion_id,
                func.coalesce(pv.option, pv.verdict) == wanted.choice))
            return or_(exists(human), and_(~exists(decided), exists(panel)))
        if not wanted.by_option:
            matches = gc.verdict == wanted.choice
        elif wanted.choice == "CANNOT_ASSESS":
            matches = and_(gc.option.is_(None), gc.verdict == wanted.choice)
        else:
            matches = gc.option == wanted.choice
        judge = (select(gc.id).join(g, g.id == gc.grade_id)
                 .where(g.run_id == wanted.run_id, g.response_id == resp.id,
                        gc.criterion_id == wanted.criterion_id, matches))
        return or_(exists(human), and_(~exists(decided), exists(judge)))

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """The matched responses and their columns kept in a temporary table while inside:
        the count, the page and the histograms then read it instead of running the joins
        and filters over the dataset once each (three passes at 100,000 responses)."""
        names = [column.name for column in self.query.selected_columns]
        connection = self.session.connection()
        # On SQLite the id is the rowid (free); on PostgreSQL a primary key is a B-tree
        # written row by row that no statement here reads (the count, the page and the
        # bins each scan the table): 100,000 entries less to write per view.
        keyed = connection.dialect.name != "postgresql"
        table = Table(MATCHED_TABLE, MetaData(),
                      *[Column(name, Integer if name in ("rid", "reviewed_count") else Float,
                               primary_key=keyed and name == "rid", autoincrement=False)
                        for name in names], prefixes=["TEMPORARY"])
        # One left on this pooled connection by a rolled back page (SQLite commits the
        # CREATE on its own, not the DROP in the transaction) may have other columns.
        table.drop(connection, checkfirst=True)
        table.create(connection)
        if connection.dialect.name == "postgresql":
            # The correlated lookups make the planner's cost high enough to compile the
            # statement (JIT): 0.3-1.0 s of its 0.7-1.4 s at 100,000, for a 0.35 s join.
            connection.execute(text("SET LOCAL jit = off"))
        # On PostgreSQL the runs' grades pivoted (``_select``) where the filters may keep
        # most of the dataset; not for people's reviewed responses or the judges' failures
        # alone (a few thousand: their index lookups, 0.12 against 0.17 s for 5,000). Not
        # on SQLite: it materializes the pivot and indexes it for the join (slower than its
        # index lookups per run: 0.45 s against 0.40 s at 100,000).
        few = self.spec.reviewed == "reviewed" or self.spec.failed_only
        query = (self._select(pivoted=True)[0] if connection.dialect.name == "postgresql"
                 and self.with_scores and self.spec.runs and not few else self.query)
        try:
            connection.execute(insert(table).from_select(names, query))
            self.matched = table
            yield
        finally:
            self.matched = None
            table.drop(connection)

    def _source(self, name: str):
        """The matched responses: the kept table while :meth:`kept`, else the query (its
        columns computed once per row where ``materialized``: an order by the spread
        repeats every run's score expression several times)."""
        if self.matched is not None:
            return self.matched
        if self.materialized:
            return self.query.cte(name).prefix_with("MATERIALIZED")
        return self.query.subquery(name)

    def count_query(self):
        return select(func.count()).select_from(self._source("matched"))

    def count(self) -> int:
        return self.session.scalar(self.count_query()) or 0

    def page(self, sort: str, sort_run_id: int | None, descending: bool, offset: int,
             limit: int, sort_panel_id: int | None = None) -> list[int]:
        return list(self.session.scalars(
            self.page_query(sort, sort_run_id, descending, offset, limit, sort_panel_id)))

    def page_query(self, sort: str, sort_run_id: int | None, descending: bool, offset: int,
                   limit: int, sort_panel_id: int | None = None):
        sub = self._source("matched")
        rid = sub.c.rid
        order: list = []
        if sort == "score" and sort_panel_id is not None:
            order = _known_first(sub.c[f"p{sort_panel_id}"], descending)
        elif sort == "reviewed":
            order = [sub.c.reviewed_count.desc() if descending else sub.c.reviewed_count]
        elif sort == "people":
            order = _known_first(sub.c.people_score, descending)
        elif sort == "score" and self.spec.runs:
            run = sort_run_id if sort_run_id in self.spec.runs else self.spec.runs[0]
            order = _known_first(sub.c[f"s{run}"], descending)
        elif sort == "spread":
            order = _known_first(self._spread(sub), descending)
        elif sort == "response" and descending:
            return select(rid).order_by(rid.desc()).offset(offset).limit(limit)
        return select(rid).order_by(*order, rid).offset(offset).limit(limit)

    def _spread(self, sub):
        """The largest gap between the runs' effective scores, None under two known
        (``results_order.sort_ids``): per response, from one row per run."""
        columns = [sub.c[f"s{run}"] for run in self.spec.runs]
        if len(columns) < 2:
            return literal(None)
        known = sum((case((c.is_not(None), 1), else_=0) for c in columns), literal(0))
        if self.session.get_bind().dialect.name == "postgresql":
            high, low = func.greatest(*columns), func.least(*columns)  # skip NULLs
        else:
            # SQLite's max(a, b, ...) is NULL with one NULL: each column, or where it is
            # NULL another known one, so the known columns' max and min (no CASE nested
            # per run, which grew fourfold with each run and cost 0.26 s at 100k).
            fills = [func.coalesce(c, *[o for o in columns if o is not c]) for c in columns]
            high, low = func.max(*fills), func.min(*fills)
        return case((known >= 2, high - low), else_=None)

    def _columns(self) -> list[str]:
        """The score columns, the runs' then the panels' (the histograms' order)."""
        return ([f"s{run}" for run in self.scores]
                + [f"p{panel}" for panel in self.panel_scores])

    def summary(self, with_ranges: bool) -> tuple[int, dict[str, tuple]]:
        """(matching responses, per score column (lowest, highest, number of) effective
        scores): one statement over the matched set."""
        matched = (self.matched if self.matched is not None
                   else self.query.cte("matched").prefix_with("MATERIALIZED"))
        names = self._columns() if with_ranges else []
        columns = [func.count()]
        for name in names:
            value = matched.c[name]
            columns += [func.min(value), func.max(value), func.count(value)]
        row = self.session.execute(select(*columns).select_from(matched)).one()
        return row[0], {name: tuple(row[1 + 3 * i:4 + 3 * i]) for i, name in enumerate(names)}

    def histogram(self, bins: int, ranges: dict[str, tuple]) -> tuple[ScoreBin, ...]:
        """``results_order.histogram`` of the matched responses, per run then per panel, as
        one GROUP BY over the binned effective scores (``ranges`` from :meth:`summary`)."""
        bounds = {}
        for name, (low, high, known) in ranges.items():
            if known:
                if low >= 0 and high <= 1:
                    low, high = 0.0, 1.0
                bounds[name] = (low, (high - low) / bins or 1.0)
        if bins < 1 or not bounds:
            return ()
        matched = (self.matched if self.matched is not None
                   else self.query.cte("matched").prefix_with("MATERIALIZED"))
        postgres = self.session.get_bind().dialect.name == "postgresql"
        indexes = []
        for name, (low, width) in bounds.items():
            value = matched.c[name]
            scaled = (value - low) / width
            # The last bin holds its upper bound; ``bins`` (one past it): no score. Each
            # bin computed once (a CASE testing it against the last bin computed it twice).
            if postgres:  # least() skips a NULL
                indexes.append(case((value.is_(None), bins),
                                    else_=func.least(func.floor(scaled), bins - 1)))
            else:  # min() of a NULL is NULL
                indexes.append(func.coalesce(func.min(cast(scaled, Integer), bins - 1), bins))
        names = list(bounds)
        counts = {name: [0] * bins for name in bounds}
        base = bins + 1
        if base ** len(names) < 2 ** 52:  # exact as a double too (PostgreSQL's floor)
            # One GROUP BY over every column's bin at once, as one integer key (a digit per
            # column in base bins + 1): one pass over the matched rows, and a sort on one
            # key, not on one per column (half the time at 100,000 rows on SQLite).
            key = sum((index * base ** position for position, index in enumerate(indexes)),
                      literal(0)).label("key")
            groups = [([(number // base ** position) % base
                        for position in range(len(names))], n)
                      for number, n in self.session.execute(
                          select(key, func.count()).select_from(matched).group_by(key))]
        else:
            keys = [index.label(f"k{position}") for position, index in enumerate(indexes)]
            groups = [(row[:-1], row[-1]) for row in self.session.execute(
                select(*keys, func.count()).select_from(matched).group_by(*keys))]
        for ks, n in groups:
            for name, k in zip(names, ks, strict=True):
                if int(k) < bins:
                    counts[name][int(k)] += n
        return tuple(ScoreBin(run_id=int(name[1:]) if name[0] == "s" else None,
                              panel_id=int(name[1:]) if name[0] == "p" else None,
                              low=low + k * width, high=low + (k + 1) * width, count=n)
                     for name, (low, width) in bounds.items()
                     for k, n in enumerate(counts[name]))


def _known_first(value, descending: bool) -> list:
    """Responses without a value last; Python's stable sort keeps id order among ties."""
    return [case((value.is_(None), 1), else_=0), value.desc() if descending else value]
