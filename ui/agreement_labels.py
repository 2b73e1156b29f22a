"""Agreement page, labels: gold/training/verdict-sheet downloads and the verdict import."""

from __future__ import annotations

from functools import partial

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.errors import ImportProblemsError
from storage.services import blindness, labels
from ui import agreement_readers as readers
from ui.auth import current_actor
from ui.boundary import plain
from ui.runtime import get_sessions
from ui.wording import plural


def handle_import(version_id: int, dataset_id: int) -> bool:
    """Import the uploaded CSV in one transaction; True when something was written."""
    upload = st.session_state.get(f"agreement_import_file_{st.session_state.agreement_nonce}")
    if upload is None:
        st.session_state.agreement_import_problems = ["Choose a CSV file first."]
        return False
    try:
        actor = current_actor()
        if actor is None:
            st.session_state.agreement_import_problems = [
                "Sign in first: an import records who made it."]
            return False
        summary = labels.import_human_verdicts(
            get_sessions(), version_id, dataset_id, upload.getvalue(), upload.name,
            actor=actor, create_reviewers=bool(st.session_state.agreement_import_create))
    except ImportProblemsError as exc:
        st.session_state.agreement_import_problems = [str(p) for p in exc.problems]
        return False
    except RubricWorkbenchError as exc:
        st.session_state.agreement_import_problems = [str(exc)]
        return False
    st.session_state.agreement_import_problems = None
    left_out = [f"{n} {what}" for n, what in ((summary.unchanged, "unchanged"),
                                              (summary.blank, "without a verdict")) if n]
    reviewers = f" (reviewers: {summary.reviewers_text()})" if summary.per_reviewer else ""
    if summary.created:
        reviewers += (f"; new reviewers: {', '.join(summary.created[:5])}"
                      + (f" and {len(summary.created) - 5} more" if len(summary.created) > 5
                         else ""))
    st.session_state.agreement_flash = (
        f"Imported {plural(summary.verdicts, 'verdict')} on "
        f"{plural(summary.responses, 'response')}{reviewers}."
        + (f" Left out: {', '.join(left_out)}." if left_out else "")
        + " Earlier verdicts stay in the history.")
    st.session_state.agreement_nonce += 1
    readers.clear_after_import()
    return True


def render_labels(version_id: int, dataset_id: int) -> None:
    st.subheader("Export and import labels")
    sessions = get_sessions()
    # Blind review: a reviewer's downloads hold other people's verdicts only where
    # they answered too (storage/services/blindness.py).
    sight = blindness.sight_of(current_actor())
    name = partial(labels.export_file_name, sessions, rubric_version_id=version_id,
                   dataset_id=dataset_id)
    st.markdown("**Gold set** — the human-reviewed responses as JSONL in a HealthBench-like "
                "shape: `prompt` (chat messages), `completion`, `rubrics` (criterion, "
                "points, criteria_met, explanation) and the human score.")
    complete = st.checkbox("Only fully reviewed responses", key="agreement_gold_complete")
    left, right = st.columns(2)
    left.download_button(
        "Download gold set (JSONL)", on_click="ignore", icon=":material/download:",
        data=partial(labels.export_gold_jsonl, sessions, version_id, dataset_id,
                     complete_only=complete, sight=sight),
        file_name=name(kind="gold", ext="jsonl"), mime="application/jsonl")
    right.download_button(
        "Download training set (JSONL)", on_click="ignore", icon=":material/download:",
        data=partial(labels.export_training_jsonl, sessions, version_id, dataset_id,
                     sight=sight),
        file_name=name(kind="training", ext="jsonl"), mime="application/jsonl",
        help="One line per response × run: the text with its effective score (normalized "
             "when the run normalizes) and raw score.")
    st.divider()
    st.markdown("**Import human verdicts** from a CSV with the columns `response_id` (the "
                "response's id in the dataset), `criterion` (its name), `verdict` (MET, "
                "UNMET or CANNOT_ASSESS), `reviewer` (someone the workbench knows) and "
                "an optional `note`. Nothing is "
                "imported unless every row is valid. Rows without a verdict, and rows "
                "equal to the current verdict, are left out.")
    st.download_button(
        "Download the verdict sheet (CSV)", on_click="ignore", icon=":material/download:",
        data=partial(labels.export_verdict_sheet_csv, sessions, version_id, dataset_id,
                     sight=sight),
        file_name=name(kind="verdicts", ext="csv"), mime="text/csv",
        help="Every response × criterion with its current human verdict (blank when "
             "none): fill it in a spreadsheet and import it here.")
    st.checkbox("Create new reviewers", key="agreement_import_create",
                help="Reviewers in the sheet must be people the workbench knows "
                     "(case and invisible characters do not matter). Tick this to add "
                     "the names it does not know as new reviewers.")
    st.file_uploader("Verdicts CSV", type=["csv"],
                     key=f"agreement_import_file_{st.session_state.agreement_nonce}")
    if st.button("Import verdicts") and handle_import(version_id, dataset_id):
        st.rerun()
    problems = st.session_state.agreement_import_problems
    if problems:
        listed = "\n".join(f"- {plain(p)}" for p in problems[:50])
        more = f"\n- … and {len(problems) - 50} more" if len(problems) > 50 else ""
        st.error(f"Nothing was imported; fix these {len(problems)} problems and upload "
                 f"the file again:\n{listed}{more}")
