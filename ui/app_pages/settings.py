"""Settings: the models people can pick, which provider keys are present, where data lives."""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from grading.llm import API_BASE_ENV, API_KEY_ENV, DEFAULT_MODEL, MODEL_ENV
from storage.config import DATA_DIR_VARIABLE, DATABASE_URL_VARIABLE, data_dir, describe_url
from storage.connection_check import check_connection, key_variables, needed_key_variable
from storage.errors import InvalidInputError, StorageError
from storage.model_presets import (
    ModelPreset,
    add_model_preset,
    list_model_presets,
    presets_path,
    price_text,
    remove_model_preset,
    set_model_price,
)
from ui.auth import current_actor
from ui.boundary import plain
from ui.people_admin import render_people
from ui.runtime import database_key, get_sessions

state = st.session_state


def flash(message: str, kind: str = "success") -> None:
    """Say what the last action did, where it was done (under the models' controls); the
    result of an earlier connection test is no longer current."""
    state["settings_flash"] = (kind, message)
    state["settings_check"] = None


def render_flash() -> None:
    if state["settings_flash"]:
        kind, message = state["settings_flash"]
        state["settings_flash"] = None
        (st.success if kind == "success" else st.info)(plain(message))


def handle_add(model: str, api_base: str, input_price: float | None,
               output_price: float | None) -> None:
    try:
        preset = add_model_preset(model, api_base or None, actor=current_actor(),
                                  input_price=input_price, output_price=output_price,
                                  sessions=get_sessions())
    except StorageError as exc:
        st.error(plain(f"Not added: {exc}"))
        return
    flash(f"Added {preset.label}. Press “Test connection” before grading with it.")
    st.rerun()


def handle_price(preset: ModelPreset, input_price: float | None,
                 output_price: float | None) -> None:
    try:
        saved = set_model_price(preset.model, preset.api_base, input_price=input_price,
                                output_price=output_price, actor=current_actor(),
                                sessions=get_sessions())
    except StorageError as exc:
        st.error(plain(f"Price not saved: {exc}"))
        return
    flash(f"Price of {saved.label}: {price_text(saved)}. New estimates and runs use it."
          if saved.price else f"{saved.label} has no price of its own now: litellm's is used.")
    st.rerun()


def handle_remove(preset: ModelPreset) -> None:
    try:
        remove_model_preset(preset.model, preset.api_base, actor=current_actor(),
                            sessions=get_sessions())
    except StorageError as exc:
        st.error(plain(f"Not removed: {exc}"))
        return
    state["settings_check"] = None
    flash(f"Removed {preset.label}.", "info")
    st.rerun()


def handle_check(preset: ModelPreset) -> None:
    with st.spinner(f"Calling {preset.label}…"):
        result = check_connection(preset)
    state["settings_check"] = (preset.label, result.ok, result.message)
    state["settings_flash"] = None  # the test's result is the news now


# -- drawing ---------------------------------------------------------------------------------
PRICE_HELP = ("For a local model or one litellm has no price for, so estimates and run costs "
              "are known: US dollars per million tokens (0 for a free local model). Leave "
              "both empty to use litellm's price.")


def render_price_inputs(prefix: str, current: tuple[float, float] | None = None):
    left, right = st.columns(2)
    values = current or (None, None)
    input_price = left.number_input("Input price (USD per 1M tokens)", min_value=0.0,
                                    value=values[0], step=0.1, format="%.4g",
                                    key=f"{prefix}_input_price", help=PRICE_HELP)
    output_price = right.number_input("Output price (USD per 1M tokens)", min_value=0.0,
                                      value=values[1], step=0.1, format="%.4g",
                                      key=f"{prefix}_output_price", help=PRICE_HELP)
    return input_price, output_price
def render_presets(presets: tuple[ModelPreset, ...]) -> None:
    st.subheader("Models", divider="gray")
    st.caption("The models the Grade page offers. Names are litellm's `provider/model`, e.g. "
               "`openai/gpt-4.1-mini` or `anthropic/claude-sonnet-4-5`. For a local "
               "OpenAI-compatible server (vLLM, LM Studio, Ollama, llama.cpp) use "
               "`openai/<model>` with its api_base, e.g. `http://127.0.0.1:11434/v1`.")
    present = {k.name for k in key_variables() if k.present}
    if presets:
        table = pd.DataFrame([
            {"Model": p.model, "api_base": p.api_base or "(provider default)",
             "Key read from": needed_key_variable(p),
             "Key present": needed_key_variable(p) in present,
             "Price (USD)": price_text(p)}
            for p in presets
        ])
        st.dataframe(table, hide_index=True, width="stretch", column_config={
            "Key present": st.column_config.CheckboxColumn("Key present")})
    else:
        st.info("No models yet. Add one below; the Grade page lists them. Until then it "
                f"uses {os.environ.get(MODEL_ENV) or DEFAULT_MODEL}"
                + (f" at {os.environ.get(API_BASE_ENV)}" if os.environ.get(API_BASE_ENV)
                   else "") + f" (set {MODEL_ENV} / {API_BASE_ENV} to change that).")

    with st.form("settings_add_form", clear_on_submit=True):
        left, right = st.columns(2)
        model = left.text_input("Model", placeholder="openai/gpt-4.1-mini")
        api_base = right.text_input("api_base (optional)",
                                    placeholder="http://127.0.0.1:8000/v1")
        input_price, output_price = render_price_inputs("settings_add")
        if st.form_submit_button("Add model", type="primary"):
            handle_add(model, api_base, input_price, output_price)

    if not presets:
        render_flash()  # e.g. "Removed …": under the form just used, not above the fold
        return
    labels = {p.label: p for p in presets}
    if state["settings_preset"] not in labels:
        state["settings_preset"] = next(iter(labels))
    left, test, remove = st.columns([4, 1, 1], vertical_alignment="bottom")
    label = left.selectbox("Model to test or remove", list(labels), key="settings_preset")
    preset = labels[label]
    if test.button("Test connection", type="primary", key="settings_test", width="stretch",
                   help="Makes one tiny call (a few tokens) to the model"):
        handle_check(preset)
    if remove.button("Remove", key="settings_remove", width="stretch"):
        handle_remove(preset)
    number = list(labels).index(label)  # the inputs start from this model's own price
    with (st.popover(f"Price: {price_text(preset)}", icon=":material/payments:"),
          st.form(f"settings_price_form_{number}", border=False)):
        input_price, output_price = render_price_inputs(f"settings_price_{number}",
                                                        preset.price)
        if st.form_submit_button("Save price", type="primary"):
            handle_price(preset, input_price, output_price)
    render_flash()  # added, removed, priced: next to the controls just used
    if state["settings_check"] and state["settings_check"][0] == label:
        _, ok, message = state["settings_check"]
        (st.success if ok else st.error)(plain(
            ("Connected. " if ok else "Connection failed. ") + message))


def render_keys() -> None:
    st.subheader("Provider keys", divider="gray")
    st.caption("Keys are read from the environment of the process that runs the app and are "
               "never stored or shown. Set them before starting the app, e.g. "
               "`export OPENAI_API_KEY=...`; a local server that needs a key reads "
               f"`{API_KEY_ENV}`.")
    keys = key_variables()
    present = [k.name for k in keys if k.present]
    if present:
        # Names match [A-Z0-9_]+_API_KEY, so they cannot open markup inside a badge.
        st.markdown("**Set:** " + " ".join(
            f":green-badge[:material/check: {name}]" for name in present))
    with st.expander(f"All key variables the app knows ({len(keys)})"):
        table = pd.DataFrame([{"Variable": k.name, "Set": k.present} for k in keys])
        st.dataframe(table, hide_index=True, width="stretch",
                     height=35 * (len(table) + 1) + 3,
                     column_config={"Set": st.column_config.CheckboxColumn("Set")})
    if not present:
        st.warning("No provider key is set. Cloud models will fail until one is; a local "
                   "OpenAI-compatible server works with an api_base (and, if it needs one, "
                   f"{API_KEY_ENV}).")


def render_storage() -> None:
    st.subheader("Where your data is", divider="gray")
    rows = [
        ("Database", describe_url(database_key()), f"Set {DATABASE_URL_VARIABLE}"),
        ("Data directory", str(data_dir()), f"Set {DATA_DIR_VARIABLE}"),
        ("Model list", str(presets_path()), "A small JSON file; no keys in it"),
    ]
    st.dataframe(pd.DataFrame(rows, columns=["What", "Where", "How to change"]),
                 hide_index=True, width="stretch")
    st.caption("Set the variables before starting the app. For PostgreSQL use a URL such as "
               "`postgresql+psycopg://user@host:5432/workbench`; passwords are never shown "
               "here.")


def render_page() -> None:
    st.title("Settings")
    st.caption("Models to grade with, provider keys and where your data is stored.")
    try:
        presets = list_model_presets()
    except InvalidInputError as exc:
        st.error(plain(f"{exc}."))
        presets = ()
    render_presets(presets)
    render_keys()
    render_storage()
    render_people()


render_page()
