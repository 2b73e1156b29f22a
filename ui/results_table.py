"""Drawing the Results table and its score distribution from a page of results (no reads)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.dto import RunInfo
from storage.services.results import ResultsPage, ResultsRow, ScoreBin
from ui import chart_specs, kept_charts, safe_text
from ui.verdict_view import run_label, short_run_label

DISAGREE_SHADE = "background-color: rgba(255, 164, 33, 0.16)"
FAILED_SHADE = "background-color: rgba(255, 43, 43, 0.10)"


def flags(row: ResultsRow) -> str:
    return " ".join(flag for flag, on in (
        ("⚠ failed", row.failed), ("≠ verdicts", row.verdicts_differ),
        ("≠ scores", row.scores_differ and not row.verdicts_differ)) if on)


def disputed_cell(row: ResultsRow) -> str:
    """How many criteria the reviewers dispute, and which: "2: cites, dose"."""
    if not row.disputed:
        return ""
    return safe_text.text(f"{len(row.disputed)}: {', '.join(row.disputed)}")


def score_column(run: RunInfo) -> str:
    """Short enough for a 100-pixel header: the run number and the model's last part."""
    return safe_text.text(f"#{run.id} {run.model.split('/')[-1]}")[:24]


def table_rows(page: ResultsPage, by_id: dict[int, RunInfo]) -> list[dict]:
    rows = []
    for row in page.rows:
        item: dict = {"ID": safe_text.text(row.external_id or f"#{row.response_id}")}
        for run_id, score, graded in zip(page.run_ids, row.scores, row.graded, strict=True):
            item[score_column(by_id[run_id])] = score if graded else None
        item["Flags"] = flags(row)
        item["Reviewed"] = (f"{row.reviewed_count}/{row.criteria_count}"
                            if row.reviewed_count else "")
        item["Disputed"] = disputed_cell(row)
        item["Query"] = safe_text.text(" ".join(row.query.split()))
        item["Output"] = safe_text.text(" ".join(row.output.split()))
        rows.append(item)
    return rows


def styled_table(rows: list[dict], score_columns: list[str]):
    """Rows where the judges disagree (orange) or failed (red) stand out."""
    frame = pd.DataFrame(rows)

    def shade(row) -> list[str]:
        marks = row["Flags"]
        color = DISAGREE_SHADE if "≠" in marks else (FAILED_SHADE if "failed" in marks else "")
        return [color] * len(row)

    return frame.style.apply(shade, axis=1).format("{:.3f}", subset=score_columns, na_rep="—")


def column_config(page: ResultsPage, by_id: dict[int, RunInfo]) -> dict:
    """Fixed widths so every column fits a 1280-pixel screen; Output takes what is left."""
    config: dict = {score_column(by_id[r]): st.column_config.NumberColumn(
        format="%.3f", width=100,
        help=f"Effective score of {safe_text.md(run_label(by_id[r]))} (human verdicts in "
             "place of the judge's)") for r in page.run_ids}
    config.update({
        "ID": st.column_config.TextColumn(width=80, pinned=True),
        "Flags": st.column_config.TextColumn(
            width=85, help="⚠ a judge failed or fell back · ≠ verdicts: runs differ on a "
                           "criterion · ≠ scores: comparable scores further apart than the "
                           "score gap"),
        "Reviewed": st.column_config.TextColumn(width=70, help="Criteria a person reviewed"),
        "Disputed": st.column_config.TextColumn(
            width=90, help="Criteria whose reviewers disagree, with no adjudication yet: "
                           "the judge's verdict stands until an adjudicator decides "
                           "(Review → Adjudicate)"),
        "Query": st.column_config.TextColumn(width=170),
        "Output": st.column_config.TextColumn(width="large"),
    })
    return config


def render_distribution(page: ResultsPage, by_id: dict[int, RunInfo], panels=()) -> None:
    """One small histogram of effective scores per run, then per judge panel shown, over the
    matching responses (x: effective score, y: number of responses)."""
    by_column: dict[tuple[int | None, int | None], list[ScoreBin]] = {}
    for item in page.distribution:
        by_column.setdefault((item.run_id, item.panel_id), []).append(item)
    if not by_column:
        st.caption("No scores yet among the matching responses.")
        return
    names = {p.id: f"Panel P{p.id} {p.name or p.rule}" for p in panels}
    columns = st.columns(min(3, len(by_column)))
    for index, ((run_id, panel_id), bins) in enumerate(by_column.items()):
        title = (names.get(panel_id, f"Panel P{panel_id}") if panel_id is not None
                 else short_run_label(by_id[run_id]))
        with columns[index % len(columns)]:
            kept_charts.show(chart_specs.histogram,
                             tuple((float(b.low), float(b.high), int(b.count)) for b in bins),
                             safe_text.text(title), width="stretch", height=200)
