"""What one Results view asks of ``storage.services.results_query``: the ``PageQuery``, its
verdict filter, and the ``Overlay`` of effective scores read otherwise than the kept tables
give them, with the temporary table that holds it for a page's statements."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Column, Float, Integer, MetaData, Table, insert
from sqlalchemy.orm import Session


@dataclass(frozen=True)
class VerdictClause:
    """The effective verdict filter, checked by the caller: a criterion, the choice wanted,
    the run (or the judge panel) whose verdict counts where people did not decide, the
    criterion's kind, and the responses whose decision on it the viewer may not see yet
    (a blind reviewer: those read as not decided)."""

    criterion_id: int
    choice: str
    run_id: int | None
    by_option: bool
    panel_id: int | None = None
    hidden: tuple[int, ...] = ()


@dataclass(frozen=True)
class Overlay:
    """Effective scores this view reads otherwise than the kept tables give them, for a
    few reviewed responses: (response, run) -> score computed for a blind viewer;
    responses whose every decision the viewer may not see (their runs' scores are the
    judges'); (response, panel) -> the panel column's effective score (people's
    verdicts in place of the panel's, computed when read)."""

    runs: dict[tuple[int, int], float | None]
    judged: frozenset[int]
    panels: dict[tuple[int, int], float | None]

    def rows(self) -> list[tuple[int, int, float | None]]:
        """(response, column, score): a run's id, 0 for "the judges'", minus a panel's."""
        return ([(rid, run, score) for (rid, run), score in self.runs.items()]
                + [(rid, 0, None) for rid in sorted(self.judged)]
                + [(rid, -panel, score) for (rid, panel), score in self.panels.items()])


@dataclass(frozen=True)
class PageQuery:
    dataset_id: int
    rubric_version_id: int
    runs: tuple[int, ...]
    search: str = ""
    metadata: tuple[tuple[str, str], ...] = ()
    verdict: VerdictClause | None = None
    failed_only: bool = False
    disagree_only: bool = False
    reviewed: str = "any"
    min_score: float | None = None
    max_score: float | None = None
    score_run_id: int | None = None  # None: any selected run (and panel)
    score_gap: float = 0.2
    panels: tuple[int, ...] = ()  # judge panels read as columns (score, range, histogram)
    score_panel_id: int | None = None
    overlay: Overlay | None = None


# The overlay's rows, keyed for the joins: a temporary table (one per connection) filled
# for one page and dropped after it. A VALUES list has no index: SQLite then scanned it for
# every response of the dataset (10,000 x 500 comparisons per statement).
OVERLAY_TABLE = Table(
    "results_overlay", MetaData(),
    Column("col", Integer, primary_key=True), Column("rid", Integer, primary_key=True),
    Column("score", Float), prefixes=["TEMPORARY"])


@contextlib.contextmanager
def overlay_table(session: Session, overlay: Overlay | None) -> Iterator[bool]:
    """Fill ``OVERLAY_TABLE`` with the overlay's rows for the statements run inside;
    yields whether it has any."""
    rows = overlay.rows() if overlay is not None else []
    if not rows:
        yield False
        return
    connection = session.connection()
    OVERLAY_TABLE.create(connection, checkfirst=True)
    try:
        connection.execute(OVERLAY_TABLE.delete())
        connection.execute(insert(OVERLAY_TABLE), [
            {"rid": rid, "col": col, "score": score} for rid, col, score in rows])
        yield True
    finally:
        OVERLAY_TABLE.drop(connection)
