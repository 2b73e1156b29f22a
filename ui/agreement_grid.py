"""Agreement page: the human baseline as one criterion x judge grid (storage/services/
baseline_grid.py): each judge's figure, its 95% interval, n and a badge per criterion."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.services.agreement import AgreementReport
from storage.services.baseline_decision import MARGIN, Figure
from storage.services.baseline_grid import MIN_N, BaselineGrid, GridCell, GridRow, enough
from ui import safe_text
from ui.agreement_text import compact

BADGES = {"inside": "● inside", "above": "▲ above", "below": "▼ below",
          "unclear": "? can't tell", "unknown": "no baseline"}
# The cell's colour says the badge at a glance; the word says it for everyone.
COLOURS = {"inside": "#d8f3dc", "above": "#dbe9ff", "below": "#ffe0e0"}


def figure_text(figure: Figure) -> str:
    """``0.81 [0.62, 0.95] n=12``, or "not enough reviews (n=2)" below ``MIN_N`` pairs or
    without an interval."""
    if not enough(figure):
        return f"not enough reviews (n={figure.n})"
    assert figure.value is not None and figure.interval is not None
    return (f"{figure.value:.2f} [{figure.interval.low:.2f}, {figure.interval.high:.2f}] "
            f"n={figure.n}")


def cell_text(cell: GridCell) -> str:
    shown = figure_text(cell.figure)
    if not enough(cell.figure):
        return shown
    badge = BADGES[cell.position]
    if cell.position == "unclear" and cell.needed is not None:
        badge += f" (need ~{cell.needed})"
    return f"{badge} · {shown}"


def _among(row: GridRow) -> str:
    if row.among_method == "none":
        return f"not enough reviews ({row.reviewers} reviewer{'s' * (row.reviewers != 1)})"
    if not enough(row.among):
        return figure_text(row.among)
    symbol = "α" if "alpha" in row.among_method else "κ"
    return f"{symbol} {figure_text(row.among)}"


def grid_frame(grid: BaselineGrid, report: AgreementReport) -> tuple[pd.DataFrame, list]:
    """The grid as a table (one row per criterion) and each cell's position, for colour."""
    names = {s.key: compact(s) for s in report.data.verdict_sources}
    rows, positions = [], []
    for row in grid.rows:
        item = {"Criterion": safe_text.text(row.criterion.label)}
        marks = {}
        for key, label in grid.judges:  # the judges first: they are what the grid is for
            column = names.get(key) or safe_text.text(label)
            cell = row.cells.get(key)
            item[column] = cell_text(cell) if cell else "—"
            marks[column] = cell.position if cell and enough(cell.figure) else None
        item.update({"People (compared with)": row.people, "Reviewers agree": _among(row),
                     "Reviewers": row.reviewers, "Scale": row.scale})
        rows.append(item)
        positions.append(marks)
    return pd.DataFrame(rows), positions


def render_grid(grid: BaselineGrid, report: AgreementReport) -> None:
    if not grid.rows or not grid.judges:
        return
    frame, positions = grid_frame(grid, report)

    def colour(data: pd.DataFrame) -> pd.DataFrame:
        styles = pd.DataFrame("", index=data.index, columns=data.columns)
        for i, marks in enumerate(positions):
            for column, position in marks.items():
                if position in COLOURS:
                    styles.iloc[i, data.columns.get_loc(column)] = (
                        f"background-color: {COLOURS[position]}")
        return styles

    judges = {compact(s): safe_text.text(s.label) for s in report.data.verdict_sources}
    config = {"Criterion": st.column_config.TextColumn(pinned=True),
              "Reviewers": st.column_config.NumberColumn(width="small"),
              **{column: st.column_config.TextColumn(help=judges[column], width=300)
                 for column in frame.columns if column in judges}}
    st.dataframe(frame.style.apply(colour, axis=None), hide_index=True, width="stretch",
                 column_config=config)
    st.caption(
        "Each judge's cell: ● inside the people (within "
        f"{MARGIN:.2f} of their figures), ▲ above or ▼ below them only when the 95% "
        "intervals say so; otherwise “? can't tell”, with about how many reviewed "
        "responses would tell. Each reviewer is left out in turn and the judge and that reviewer "
        "are scored against the others on the same responses: by macro-F1 on MET/UNMET "
        "criteria, by the scale's kappa (quadratic-weighted on a rating) on rating and "
        "category criteria. “Not enough reviews”: fewer than "
        f"{MIN_N} shared verdicts, or no interval.")
