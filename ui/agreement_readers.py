"""Cached readers of the Agreement page, keyed by the database URL and a data stamp.

The stamp (runs' graded counts and the human verdicts' count and newest id) changes whenever a
grade or a verdict is written, by this app or by a worker elsewhere, so the report is rebuilt
exactly then; the short TTL of the stamp itself is the only polling.
"""

from __future__ import annotations

import streamlit as st

from storage.services import agreement, human_baseline, results
from storage.services.agreement import AgreementReport, CriterionAgreement, Disagreement
from storage.services.human_baseline import HumanBaseline
from storage.services.results import ResultSet
from ui import results_readers
from ui.runtime import sessions_for

Stamp = tuple[tuple[tuple[int, int, str], ...], tuple[int, int], tuple[int, ...]]


@st.cache_data(ttl=30, max_entries=20, show_spinner=False)
def get_agreement_sets(db: str) -> list[ResultSet]:
    """(dataset, rubric version) pairs with at least one run."""
    return results.list_result_sets(sessions_for(db))


@st.cache_data(ttl=5, max_entries=50, show_spinner=False)
def get_stamp(db: str, rubric_version_id: int, dataset_id: int) -> Stamp:
    return agreement.data_stamp(sessions_for(db), rubric_version_id, dataset_id)


@st.cache_data(ttl=3600, max_entries=20, show_spinner="Comparing the judges…")
def get_report(db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp) -> AgreementReport:
    return agreement.agreement_report(sessions_for(db), rubric_version_id, dataset_id)


@st.cache_data(ttl=3600, max_entries=20, show_spinner=False)
def get_baseline(db: str, rubric_version_id: int, dataset_id: int,
                 stamp: Stamp) -> HumanBaseline:
    report = get_report(db, rubric_version_id, dataset_id, stamp)
    return human_baseline.build_baseline(report.data)


@st.cache_data(ttl=3600, max_entries=50, show_spinner=False)
def get_criterion_table(
    db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp, a: str | None,
    b: str | None,
) -> list[CriterionAgreement]:
    report = get_report(db, rubric_version_id, dataset_id, stamp)
    return agreement.criterion_table(report, a, b)


@st.cache_data(ttl=3600, max_entries=100, show_spinner=False)
def get_disagreements(
    db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp, keys: tuple[str, ...],
    criterion_id: int,
) -> list[Disagreement]:
    report = get_report(db, rubric_version_id, dataset_id, stamp)
    return agreement.disagreements(report.data, keys, criterion_id)


def clear_after_import() -> None:
    """Imported verdicts change the report and, on the Results and Review pages, the
    effective scores."""
    get_stamp.clear()
    get_report.clear()
    get_criterion_table.clear()
    get_disagreements.clear()
    get_baseline.clear()
    results_readers.clear_after_verdict()
