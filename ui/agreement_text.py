"""Formatting shared by the Agreement page's parts: numbers, costs, source names."""

from __future__ import annotations

from storage.services.agreement_sources import AgreementSource
from ui import safe_text

ALL_SOURCES = "all"
EMPTY_HINT = (
    "Grade this dataset with at least two runs on the **Grade** page, or review some "
    "verdicts on the **Review** page, to compare sources."
)


def fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}%"


def fmt_cost(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def short(source: AgreementSource) -> str:
    label = safe_text.text(source.label)
    return label if len(label) <= 48 else label[:47] + "…"


def compact(source: AgreementSource) -> str:
    """A short name for axis titles: "Human" or "#3 mini-judge"."""
    if source.is_human:
        return "Human"
    if source.is_panel:
        return safe_text.text(f"Panel P{source.panel_id}")
    return safe_text.text(f"#{source.run_id} {(source.model or '').rsplit('/', 1)[-1]}")[:28]
