"""Cached readers of the Agreement page, keyed by the database URL and a data stamp.

Blind review: every reader after ``get_stamp`` takes the viewer's ``Sight``
(storage/services/blindness.py); a reviewer's report is built from the verdicts they may see
(storage/services/agreement_blind.py), adjudicators and admins share the full one.

The stamp (runs' graded counts and the human verdicts' count and newest id) changes whenever a
grade or a verdict is written, by this app or by a worker elsewhere, so the report is rebuilt
exactly then; the short TTL of the stamp itself is the only polling. The judges' share of the
report's count is kept by the judges' part of the stamp only (``get_judge_patterns``; in the
database too, storage.services.agreement_judge_store), and the
report itself between saved verdicts (``get_kept_slot``): a saved verdict re-reads the
responses it is on, not every reviewed one. The trust report's judges' share is kept by the
judges' stamp as well (``get_trust_judges``; in the database too,
storage.services.trust_share_store).
"""

from __future__ import annotations

import streamlit as st

from storage.services import (
    agreement,
    agreement_blind,
    agreement_inputs_store,
    agreement_judge_counts,
    agreement_judge_store,
    agreement_lists,
    baseline_grid,
    baseline_rows,
    blindness,
    human_baseline,
    results,
    trust_report,
    trust_share_store,
)
from storage.services.agreement import AgreementReport, CriterionAgreement, Disagreement
from storage.services.agreement_inputs import JudgeInputs
from storage.services.agreement_judge_counts import JudgePatterns
from storage.services.agreement_kept import KeptSlot
from storage.services.agreement_listing import JudgeListing
from storage.services.baseline_grid import BaselineGrid
from storage.services.blindness import Sight
from storage.services.human_baseline import HumanBaseline
from storage.services.results import ResultSet
from storage.services.trust_report import TrustJudges, TrustReport
from ui import results_readers
from ui.runtime import sessions_for
from ui.stamp_cache import drop_moved, newest_only

Stamp = tuple[tuple[tuple[int, int, str], ...], tuple[int, int], tuple[int, ...]]


@st.cache_data(ttl=30, max_entries=20, show_spinner=False)
def get_agreement_sets(db: str) -> list[ResultSet]:
    """(dataset, rubric version) pairs with at least one run."""
    return results.list_result_sets(sessions_for(db))


@st.cache_data(ttl=5, max_entries=50, show_spinner=False)
def get_stamp(db: str, rubric_version_id: int, dataset_id: int) -> Stamp:
    return agreement.data_stamp(sessions_for(db), rubric_version_id, dataset_id)


@st.cache_resource(ttl=3600, max_entries=10, show_spinner=False)
def get_judge_patterns(db: str, rubric_version_id: int, dataset_id: int,
                       judge_stamp: tuple) -> JudgePatterns | None:
    """The judges' share of the report's count, kept until a judge's stamp moves (a grade
    lands, a panel is filled): a saved verdict then recounts only the reviewed responses.
    Read from the database when counted there at this stamp (a new process does not count
    again). A shared, immutable object (not copied per reader as cache_data would)."""
    newest_only(get_judge_patterns, (db, rubric_version_id, dataset_id, judge_stamp), 3)
    return agreement_judge_store.kept_patterns(sessions_for(db), rubric_version_id,
                                               dataset_id)


# The reports are cache_resource: one shared object, not unpickled on every rerun (a counted
# report at 100,000 responses is 16 MB pickled, 0.23 s to read back). Nothing mutates them.
@st.cache_resource(ttl=3600, max_entries=20, show_spinner="Comparing the judges…")
def get_full_report(db: str, rubric_version_id: int, dataset_id: int,
                    stamp: Stamp) -> AgreementReport:
    """Over everyone's verdicts: what adjudicators and admins see. Built from the judges'
    inputs kept by their stamp (``get_judge_inputs``); the judges' count itself is read only
    when they must be made again, or the report cannot be kept."""
    newest_only(get_full_report, (db, rubric_version_id, dataset_id, stamp), 3)
    judge_stamp = agreement_judge_counts.judge_stamp(stamp)
    # what is kept by an older judges' stamp is not read again: let go before the making
    drop_moved(get_trust_judges, (db, rubric_version_id, dataset_id), 3, judge_stamp)
    drop_moved(get_judge_listing, (db, rubric_version_id, dataset_id), 3, judge_stamp, 7)

    def patterns() -> JudgePatterns | None:
        return get_judge_patterns(db, rubric_version_id, dataset_id, judge_stamp)

    judges = get_judge_inputs(db, rubric_version_id, dataset_id, judge_stamp)
    return get_kept_slot(db, rubric_version_id, dataset_id).report(
        sessions_for(db), rubric_version_id, dataset_id,
        judges if judges is not None else patterns(), patterns)


@st.cache_resource(ttl=3600, max_entries=10, show_spinner=False)
def get_judge_inputs(db: str, rubric_version_id: int, dataset_id: int,
                     judge_stamp: tuple) -> JudgeInputs | None:
    """The report's judges-only inputs (their count folded, their grades as arrays), kept
    until a judge's stamp moves; read from the database when made there at this stamp
    (storage.services.agreement_inputs_store), else made from the judges' count. Shared
    and immutable, as ``get_judge_patterns``."""
    newest_only(get_judge_inputs, (db, rubric_version_id, dataset_id, judge_stamp), 3)
    sessions = sessions_for(db)
    # the judges' count read (or counted) for the making only, not kept beside the inputs
    # made from it: ~40 MB of rows at 100,000 responses that nothing reads again while the
    # report is kept (``get_full_report`` reads it through ``get_judge_patterns`` if not)
    return agreement_inputs_store.kept_inputs(
        sessions, rubric_version_id, dataset_id,
        lambda: agreement_judge_store.kept_patterns(sessions, rubric_version_id, dataset_id),
        judge_stamp)


@st.cache_resource(ttl=3600, max_entries=10, show_spinner=False)
def get_kept_slot(db: str, rubric_version_id: int, dataset_id: int) -> KeptSlot:
    """The set's report kept between saved verdicts (storage.services.agreement_kept): a
    new stamp made of appended verdicts re-reads only the responses they are on."""
    return KeptSlot()


@st.cache_resource(ttl=3600, max_entries=50, show_spinner="Comparing the judges…")
def get_blind_report(db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp,
                     sight: Sight) -> AgreementReport:
    """Over the verdicts one reviewer may see (those on what they answered themselves):
    from the kept full report's count (storage.services.agreement_blind.seen_report), else
    from every verdict read again."""
    newest_only(get_blind_report, (db, rubric_version_id, dataset_id, stamp, sight), 3)
    full = get_full_report(db, rubric_version_id, dataset_id, stamp)
    kept = get_kept_slot(db, rubric_version_id, dataset_id).kept_of(full)
    seen = None if kept is None else agreement_blind.seen_report(kept, sight)
    if seen is not None:
        return seen
    data = agreement_lists.complete_data(sessions_for(db), full.data)
    return agreement.build_report(agreement_blind.as_seen(data, sight))


def get_report(db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp,
               sight: Sight = blindness.EVERYTHING) -> AgreementReport:
    if sight.sees_all:
        return get_full_report(db, rubric_version_id, dataset_id, stamp)
    return get_blind_report(db, rubric_version_id, dataset_id, stamp, sight)


@st.cache_data(ttl=3600, max_entries=20, show_spinner=False)
def get_baseline(db: str, rubric_version_id: int, dataset_id: int,
                 stamp: Stamp, sight: Sight = blindness.EVERYTHING) -> HumanBaseline:
    newest_only(get_baseline, (db, rubric_version_id, dataset_id, stamp, sight), 3, 4)
    report = get_report(db, rubric_version_id, dataset_id, stamp, sight)
    return human_baseline.report_baseline(report, baseline_rows.ROWS)


@st.cache_data(ttl=3600, max_entries=20, show_spinner="Measuring how far to trust each judge…")
def get_trust(db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp,
              sight: Sight = blindness.EVERYTHING) -> TrustReport:
    """From the report ``sight`` sees: a reviewer's corrected estimates use only the
    verdicts they may see. The judges' share is kept by the judges' stamp
    (``get_trust_judges``): a saved verdict recomputes only what uses people's verdicts."""
    newest_only(get_trust, (db, rubric_version_id, dataset_id, stamp, sight), 3, 4)
    report = get_report(db, rubric_version_id, dataset_id, stamp, sight)
    judges = get_trust_judges(db, rubric_version_id, dataset_id,
                              agreement_judge_counts.judge_stamp(stamp),
                              get_full_report(db, rubric_version_id, dataset_id, stamp))
    return trust_report.build_trust(
        sessions_for(db), report,
        get_baseline(db, rubric_version_id, dataset_id, stamp, sight), judges)


@st.cache_resource(ttl=3600, max_entries=10, show_spinner=False)
def get_trust_judges(db: str, rubric_version_id: int, dataset_id: int, judge_stamp: tuple,
                     _report: AgreementReport) -> TrustJudges:
    """The trust report's judges' share (their verdicts, stability, length slopes over
    every response…), kept until a judge's stamp moves (a grade lands, a run is added, a
    panel is filled), whatever people's verdicts do; made from ``_report``, the full report
    of a stamp with this judges' part (not hashed: the stamp says which). Shared and never
    mutated, as ``get_judge_patterns``. Read from the database when made there at this
    stamp (storage.services.trust_share_store: a new process does not make it again). A
    kept report says the stamp its data was read at: the stored share is then read without
    reading the stamp again."""
    newest_only(get_trust_judges, (db, rubric_version_id, dataset_id, judge_stamp, None), 3)
    kept = get_kept_slot(db, rubric_version_id, dataset_id).kept_of(_report)
    return trust_share_store.kept_share(
        sessions_for(db), _report, judge_stamp,
        None if kept is None else agreement_judge_counts.judge_stamp(kept.stamp))


@st.cache_data(ttl=3600, max_entries=20, show_spinner=False)
def get_baseline_grid(db: str, rubric_version_id: int, dataset_id: int,
                      stamp: Stamp, sight: Sight = blindness.EVERYTHING) -> BaselineGrid:
    newest_only(get_baseline_grid, (db, rubric_version_id, dataset_id, stamp, sight), 3, 4)
    report = get_report(db, rubric_version_id, dataset_id, stamp, sight)
    return baseline_grid.build_grid(
        report.data, get_baseline(db, rubric_version_id, dataset_id, stamp, sight))


@st.cache_data(ttl=3600, max_entries=50, show_spinner=False)
def get_criterion_table(
    db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp, sight: Sight,
    a: str | None, b: str | None,
) -> list[CriterionAgreement]:
    newest_only(get_criterion_table, (db, rubric_version_id, dataset_id, stamp, sight, a, b),
                3)
    report = get_report(db, rubric_version_id, dataset_id, stamp, sight)
    return agreement.criterion_table(report, a, b)


@st.cache_data(ttl=3600, max_entries=100, show_spinner=False)
def get_disagreements(
    db: str, rubric_version_id: int, dataset_id: int, stamp: Stamp, sight: Sight,
    keys: tuple[str, ...], criterion_id: int, first: int | None = None,
) -> list[Disagreement]:
    """As ``sight`` may see them: no other reviewer's verdict or note on a criterion the
    viewer has not answered (a pair that differed only through it is not listed).
    ``first``: the list's first so many only."""
    newest_only(get_disagreements, (db, rubric_version_id, dataset_id, stamp, sight, keys,
                                     criterion_id, first), 3, 7)
    report = get_report(db, rubric_version_id, dataset_id, stamp, sight)
    sessions = sessions_for(db)
    if report.data.complete:
        return agreement_lists.disagreement_list(sessions, report, keys, criterion_id,
                                                 first=first)
    judges = get_judge_listing(db, rubric_version_id, dataset_id,
                               agreement_judge_counts.judge_stamp(stamp), keys, criterion_id,
                               report, first)
    if judges is None:  # a panel's stored decisions are not all the ones read
        return agreement_lists.gathered_list(sessions, report, keys, criterion_id)[:first]
    return agreement_lists.disagreement_list(sessions, report, keys, criterion_id, judges,
                                             first=first)


@st.cache_resource(ttl=3600, max_entries=50, show_spinner=False)
def get_judge_listing(db: str, rubric_version_id: int, dataset_id: int, judge_stamp: tuple,
                      keys: tuple[str, ...], criterion_id: int,
                      _report: AgreementReport, first: int | None = None,
                      ) -> JudgeListing | None:
    """The judges' share of a disagreement list (storage.services.agreement_listing), kept
    until a judge's stamp moves: a saved verdict then lists from the report alone. Shared
    and immutable, as ``get_judge_patterns``."""
    newest_only(get_judge_listing, (db, rubric_version_id, dataset_id, judge_stamp, keys,
                                     criterion_id, None, first), 3, 7)
    return agreement_lists.judge_listing(sessions_for(db), _report.data, keys, criterion_id,
                                         first)


def clear_after_import() -> None:
    """Imported verdicts change the report and, on the Results and Review pages, the
    effective scores (people's verdicts only: the trust report's judges' share stays)."""
    get_stamp.clear()
    get_judge_patterns.clear()
    get_judge_inputs.clear()
    get_kept_slot.clear()
    get_full_report.clear()
    get_blind_report.clear()
    get_criterion_table.clear()
    get_disagreements.clear()
    get_judge_listing.clear()
    get_baseline.clear()
    get_trust.clear()  # (not get_trust_judges: people's verdicts do not move the judges')
    get_baseline_grid.clear()
    results_readers.clear_after_verdict()
