"""Formatting shared by the Agreement page's parts: numbers, costs, source names."""

from __future__ import annotations

from storage.services.agreement_sources import AgreementSource
from ui import safe_text

ALL_SOURCES = "all"
# The Agreement page's sections, one tab each (only the open one is drawn).
TABS = ("Criteria", "Confusion matrices", "Judges and cost", "Human baseline",
        "Trust a judge", "Labels and pairwise")
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


def kappa_name(result: object) -> str:
    """The kappa a pairwise result carries: "Cohen's kappa" on MET/UNMET, "quadratic-weighted
    kappa" on a rating (ordinal) criterion, "Cohen's kappa" on a category (nominal) one."""
    return getattr(result, "metric", "Cohen's kappa")


def alpha_name(result: object) -> str:
    """"Krippendorff's alpha (nominal)" on MET/UNMET and categories, "(ordinal)" on ratings."""
    return getattr(result, "metric", "Krippendorff's alpha (nominal)")


def confusion_grid(result: object) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    """(labels, rows) of a pairwise result's confusion matrix: MET/UNMET, or the criterion's
    options in the rubric's order (NA options are not classes)."""
    confusion = result.confusion  # type: ignore[attr-defined]
    labels = tuple(str(getattr(label, "value", label)) for label in confusion.labels)
    return labels, tuple(tuple(row) for row in confusion.rows)


def verdict_text(verdict: object) -> str:
    """A verdict or an option label as shown in a table; "—" for no verdict."""
    if verdict is None:
        return "—"
    return safe_text.text(str(getattr(verdict, "value", verdict)))
