"""Start: what the app does, the samples in one click, how to connect a model, where to go."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from grading.errors import RubricValidationError
from grading.llm import API_BASE_ENV, API_KEY_ENV, MODEL_ENV
from storage.connection_check import key_variables
from storage.errors import StorageError
from storage.model_presets import list_model_presets
from storage.services.samples import load_sample
from ui import catalog
from ui.auth import current_actor
from ui.boundary import page_boundary, plain
from ui.runtime import database_key, get_sessions

state = st.session_state
SAMPLES = Path(__file__).resolve().parents[1] / "samples"
SAMPLE_RUBRIC = "Sample: refund support"
SAMPLE_DATASET = "Sample: refund replies"


def handle_load_sample() -> None:
    try:
        loaded = load_sample(
            get_sessions(), rubric_name=SAMPLE_RUBRIC, dataset_name=SAMPLE_DATASET,
            rubric_text=(SAMPLES / "sample_rubric.yaml").read_text(encoding="utf-8"),
            rubric_filename="sample_rubric.yaml",
            responses_data=(SAMPLES / "sample_responses.csv").read_bytes(),
            responses_filename="sample_responses.csv",
            description="Loaded from the Start page: answers to a customer asking about a "
                        "late refund.", actor=current_actor(),
        )
    except (RubricValidationError, StorageError) as exc:
        st.error(plain(f"The samples could not be loaded: {exc}"))
        return
    catalog.clear_rubric_readers()
    catalog.clear_dataset_readers()
    state["rubrics_goto"] = (loaded.rubric_id, None)
    state["responses_goto"] = loaded.dataset_id
    # Grade opens on the sample, and the Start page points there next.
    state["grade_rubric_id"] = loaded.rubric_id
    state["grade_version_id"] = None
    state["grade_dataset_id"] = loaded.dataset_id
    state["grade_selection_mode"] = "all"
    state["home_sample_loaded"] = True
    if loaded.already_loaded:
        state["home_flash"] = ("info", f"The samples are already loaded: '{SAMPLE_RUBRIC}' "
                                       f"and '{SAMPLE_DATASET}'. Nothing was changed.")
    else:
        state["home_flash"] = ("success", f"Loaded the rubric '{SAMPLE_RUBRIC}' (5 criteria, "
                                          f"2 of them penalties) and the dataset "
                                          f"'{SAMPLE_DATASET}' (4 responses).")
    st.rerun()


def render_flash() -> None:
    if state["home_flash"]:
        kind, message = state["home_flash"]
        state["home_flash"] = None
        (st.success if kind == "success" else st.info)(plain(message))


def render_status() -> None:
    url = database_key()
    rubric_count = len(catalog.get_rubrics(url, False))
    dataset_count = len(catalog.get_datasets(url, False))
    keys = [k.name for k in key_variables() if k.present]
    presets = list_model_presets_or_empty()
    cols = st.columns(4)
    cols[0].metric("Rubrics", rubric_count)
    cols[1].metric("Datasets", dataset_count)
    cols[2].metric("Models listed", len(presets))
    cols[3].metric("Provider keys set", len(keys))


def list_model_presets_or_empty():
    try:
        return list_model_presets()
    except StorageError:
        return ()


def render_samples() -> None:
    with st.container(border=True):
        st.markdown("#### Try it with the sample")
        st.markdown(
            "A rubric for customer-support replies about a late refund — three things a good "
            "reply does and two **penalties** (wrong policy, blaming the customer) — and four "
            "replies to grade.")
        loaded = state["home_sample_loaded"]
        if loaded:
            render_next_step()
        if st.button("Load sample rubric and responses", key="home_load_sample",
                     type="secondary" if loaded else "primary"):
            handle_load_sample()
        st.caption("Loading twice changes nothing.")


def render_next_step() -> None:
    """After loading the samples: the one thing to do next (a model first, if none)."""
    has_model = bool(list_model_presets_or_empty()) or any(
        k.present for k in key_variables())
    st.markdown("**Next step**")
    if not has_model:
        # a short label: a page link cuts a long one in the sample's narrow column
        st.page_link("app_pages/settings.py", icon=":material/arrow_forward:",
                     label="Point it at a model on Settings")
        st.caption("A local OpenAI-compatible server needs no key. Then grade the sample on "
                   "the Grade page; it opens on the sample.")
    st.page_link("app_pages/grade.py", icon=":material/play_circle:",
                 label="Grade the sample: pick a judge and launch")
    st.page_link("app_pages/rubrics.py", icon=":material/checklist:",
                 label="Or look at the sample rubric first")


def render_connect() -> None:
    with st.container(border=True):
        st.markdown("#### Point it at a model")
        st.markdown("The judges call models through litellm. Pick one of two ways, then add "
                    "the model on **Settings** and press *Test connection*.")
        hosted, local = st.columns(2)
        hosted.markdown(
            "**A hosted provider.** Set its key in the environment before starting the app, "
            "e.g. `export OPENAI_API_KEY=...` (also `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, "
            "`OPENROUTER_API_KEY`, …), and use a model such as `openai/gpt-4.1-mini`.")
        local.markdown(
            "**A local OpenAI-compatible server** (vLLM, LM Studio, Ollama, llama.cpp). Use "
            "`openai/<model>` with its api_base, e.g. `http://127.0.0.1:11434/v1`; if the "
            f"server wants a key, put it in `{API_KEY_ENV}`.")
        st.caption(f"Keys are never stored by the app; Settings shows only which ones are set. "
                   f"Scripts and the command line read `{MODEL_ENV}` and `{API_BASE_ENV}`.")
        st.page_link("app_pages/settings.py", label="Open Settings", icon=":material/settings:")


def render_next() -> None:
    with st.container(border=True):
        st.markdown("#### Your own rubrics and responses")
        st.page_link("app_pages/rubrics.py", label="Write or import a rubric",
                     icon=":material/checklist:")
        st.page_link("app_pages/responses.py", label="Upload responses (CSV, JSONL, JSON)",
                     icon=":material/description:")
        st.page_link("app_pages/grade.py", label="Grade them with one or more judges",
                     icon=":material/play_arrow:")
        st.page_link("app_pages/results.py", label="Compare the judges' scores",
                     icon=":material/table_chart:")
        st.page_link("app_pages/review.py", label="Review and correct verdicts by hand",
                     icon=":material/rate_review:")


def render_page() -> None:
    st.title("Rubric Workbench")
    st.markdown(
        "Grade model responses against **weighted rubrics** with LLM judges. Write criteria "
        "(negative weights are penalties), run several judges and models side by side, see "
        "where they disagree, and correct their verdicts by hand — every score comes from "
        "the same rules.")
    render_flash()
    render_status()
    left, right = st.columns(2)
    with left:
        render_samples()
    with right:
        render_next()
    render_connect()


def clear_readers() -> None:
    catalog.clear_rubric_readers()
    catalog.clear_dataset_readers()


with page_boundary(clear_readers):
    render_page()
