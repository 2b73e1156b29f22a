"""Few-shot calibration on the pages: what a calibrated run showed its judge, and what its
agreement is measured on."""

from __future__ import annotations

import streamlit as st

from storage.dto import RunInfo
from storage.exports import examples_export
from storage.services import calibration
from storage.services.agreement_sources import AgreementData
from ui import safe_text
from ui.runtime import sessions_for
from ui.verdict_view import run_label

ROLE_LABELS = {"example": "example", "reserve": "reserve (shown in an example's own place)"}


def held_out_sentence(held: calibration.HeldOut) -> str:
    return (f"held out: {held.held_out:,} of {held.reviewed:,} reviewed responses; "
            f"{held.examples:,} {'was an example' if held.examples == 1 else 'were examples'}")


def render_held_out(data: AgreementData) -> None:
    """One line per calibrated run: its agreement leaves out the responses it was shown."""
    for source in data.sources:
        held = data.held_out.get(source.key)
        if held is None:
            continue
        st.info(f"{safe_text.md(source.label)}: shown {held.k} reviewed examples per "
                "criterion, so its agreement with people (κ, confusion, scores, baseline) is "
                "computed on the responses it was not shown as examples — "
                f"{held_out_sentence(held)}.", icon=":material/school:")


@st.cache_data(ttl=60, max_entries=50, show_spinner=False)
def get_run_examples(db: str, run_id: int) -> list[calibration.RunExampleInfo]:
    return calibration.list_run_examples(sessions_for(db), run_id)


@st.cache_data(ttl=60, max_entries=50, show_spinner=False)
def get_examples_jsonl(db: str, run_id: int) -> str:
    # Recorded at launch and never changed: the Grade page's poll reads it from the cache.
    return examples_export(sessions_for(db), run_id, "jsonl")


def render_run_examples(db: str, runs: list[RunInfo]) -> None:
    """For each calibrated run (newest first), the examples it showed, per criterion."""
    for run in [r for r in reversed(runs) if r.settings.calibration is not None][:5]:
        used = get_run_examples(db, run.id)
        settings = run.settings.calibration
        with st.expander(f"Examples shown to the judge: {safe_text.text(run_label(run))}"):
            st.caption(f"Calibrated with up to {settings.k} reviewed examples per criterion "
                       f"(seed {settings.seed}), drawn when the run was launched and reused "
                       "by every requeue. A response is never shown as its own example: a "
                       "reserve of the same verdict (or option) takes its place. Reasons are "
                       "the reviewers' notes.")
            st.dataframe([{
                "Criterion": safe_text.text(f"{e.criterion_position + 1}. {e.criterion_label}"),
                "Role": ROLE_LABELS.get(e.role, e.role),
                "Response": safe_text.text(e.response_label),
                "Dataset": safe_text.text(e.dataset_name),
                # on a multi-choice criterion, the option people chose (stored beside MET)
                "Verdict": e.verdict if e.option is None else safe_text.text(e.option),
                "Reason": safe_text.text(e.reason) or "(the reviewer gave no reason)",
                "Decided": e.status + (f", carried from v{e.carried_from}"
                                       if e.carried_from else ""),
            } for e in used], hide_index=True, width="stretch")
            st.download_button(
                "Download the examples (JSONL)", key=f"grade_examples_{run.id}",
                data=get_examples_jsonl(db, run.id),
                file_name=f"examples-run-{run.id}.jsonl", mime="application/x-ndjson")
