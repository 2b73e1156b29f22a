"""The Grade page's settings form and the RunSettings it stands for."""

from __future__ import annotations

import streamlit as st

from grading.samples import MAX_SAMPLES
from grading.structured_output import DESCRIPTIONS, MODES
from storage import run_rules
from storage.jobs.provider_breaker import DEFAULT_PAUSE_AFTER

NO_FALLBACK = "(none: the criterion fails)"
SAMPLES_HELP = (
    "Ask the judge this many times about each criterion (per-criterion grader only). The "
    "verdict is the samples' majority (a MET/UNMET tie is CANNOT_ASSESS); a rating takes "
    "the samples' median, as a panel does. Every sample is kept, and the "
    "Agreement page measures the judge's stability from them. Provider calls and cost "
    "multiply by this number; cached samples are replayed, so raising it later pays only "
    "for the new samples.")


SHUFFLE_CRITERIA_HELP = (
    "One-shot grader only: list the criteria in a different order for each response (the "
    "same response always gets the same order, so cached answers still count) and record "
    "where each criterion was listed. The Agreement page then shows whether criteria listed "
    "early are judged differently from those listed late.")


SHUFFLE_OPTIONS_HELP = (
    "Per-criterion and one-shot graders: show each multi-choice criterion's options in a "
    "different order for each response (the same response always gets the same order, so "
    "cached answers still count) and record the order. The Agreement page then shows "
    "whether the option shown first is chosen more often than chance.")


def options_shuffle_problem(graders: list[str], version) -> str | None:
    """Why shuffling the options cannot be launched with these graders and this rubric
    version, or None."""
    refused = run_rules.options_shuffle_refusal(
        bool(st.session_state.grade_shuffle_options), graders,
        any(c.options for c in version.criteria))
    if refused is run_rules.OptionsShuffle.ONE_SCORE_GRADER:
        return ("Shuffling the options does not apply to rubric-as-judge: it gives one overall "
                "score and shows no options. Turn option shuffling off or drop that grader.")
    if refused is run_rules.OptionsShuffle.NO_OPTIONS:
        return ("Shuffling the options does nothing with this rubric version: none of its "
                "criteria has options (multi-choice). Turn option shuffling off.")
    return None


def shuffle_problem(graders: list[str]) -> str | None:
    """Why shuffling the criteria cannot be launched with these graders, or None."""
    if run_rules.criteria_shuffle_needs_other_graders(
            bool(st.session_state.grade_shuffle_criteria), graders):
        return ("Shuffling the criteria needs the one-shot grader only: the other graders do "
                "not list the criteria in one prompt. Turn shuffling off or pick only the "
                "one-shot grader.")
    return None


def samples_problem(graders: list[str]) -> str | None:
    """Why the chosen samples cannot be launched with these graders, or None."""
    count = int(st.session_state.grade_samples)
    if run_rules.samples_need_other_graders(count, graders):
        return (f"{count} samples per criterion need the per-criterion grader only: the other "
                "graders ask about the whole rubric in one call. Set samples to 1 or pick "
                "only the per-criterion grader.")
    return None


def launch_settings() -> dict:
    """The run settings from the widgets, as RunSettings' JSON shape (validated on launch)."""
    s = st.session_state
    settings: dict = {
        "normalize": s.grade_normalize,
        "cannot_assess": s.grade_ca_strategy,
        "partial_credit": s.grade_partial_credit,
        "allow_cannot_assess": s.grade_allow_ca,
        "num_retries": int(s.grade_retries),
        "system_prompt": s.grade_system_prompt.strip() or None,
        "extra": {"use_cache": s.grade_use_cache,
                  "call_deadline": float(s.grade_call_deadline)},
    }
    if int(s.grade_pause_after) != DEFAULT_PAUSE_AFTER:  # the default is not stored
        settings["extra"]["pause_after_failures"] = int(s.grade_pause_after)
    if s.grade_structured_output != "auto":
        settings["extra"]["structured_output"] = s.grade_structured_output
    if int(s.grade_samples) > 1:  # one sample, the default, is not stored
        settings["extra"]["samples"] = int(s.grade_samples)
    if s.grade_shuffle_options:  # off, the default, is not stored
        settings["extra"]["shuffle_options"] = True
    if s.grade_shuffle_criteria:  # off, the default, is not stored
        settings["extra"]["shuffle_criteria"] = True
    if float(s.grade_temperature):  # 0, the judge's default, is not stored
        settings["extra"]["temperature"] = float(s.grade_temperature)
    if s.grade_concurrency:  # 0: no cap, the runner discovers the provider's capacity
        settings["extra"]["concurrency"] = int(s.grade_concurrency)
    if s.grade_lp_on:
        settings["length_penalty"] = {
            "free_budget": int(s.grade_lp_free_budget), "max_cap": int(s.grade_lp_max_cap),
            "penalty_at_cap": float(s.grade_lp_penalty_at_cap),
            "exponent": float(s.grade_lp_exponent), "penalty_type": s.grade_lp_type,
        }
    fallbacks = {k: v for k, v in (("positive", s.grade_fallback_pos),
                                   ("negative", s.grade_fallback_neg)) if v != NO_FALLBACK}
    settings["fallback_verdicts"] = fallbacks or None
    return settings


def render_settings() -> None:
    with st.expander("Scoring and grading settings", expanded=False):
        c1, c2, c3 = st.columns(3)
        c1.checkbox("Normalize scores to 0–1", key="grade_normalize")
        c1.checkbox("Judges may answer CANNOT_ASSESS", key="grade_allow_ca")
        c1.selectbox("CANNOT_ASSESS counts as", ["skip", "zero", "partial", "fail"],
                     key="grade_ca_strategy", format_func={
                         "skip": "skip (left out of the score)", "zero": "zero (not met)",
                         "partial": "partial credit", "fail": "fail the whole grade"}.get)
        c1.slider("Partial credit", 0.0, 1.0, step=0.05, key="grade_partial_credit",
                  disabled=st.session_state.grade_ca_strategy != "partial")
        c2.number_input("Retries per call", min_value=0, max_value=10, key="grade_retries")
        c2.number_input("Concurrent calls per model", min_value=0,
                        max_value=1024, key="grade_concurrency",
                        help="0: the runner finds the provider's capacity by itself (it "
                             "probes upwards and backs off on rate limits). A number caps it.")
        options = [NO_FALLBACK, "MET", "UNMET", "CANNOT_ASSESS"]
        c2.selectbox("If the judge fails on a positive criterion", options,
                     key="grade_fallback_pos")
        c2.selectbox("If the judge fails on a negative criterion", options,
                     key="grade_fallback_neg")
        c2.checkbox("Reuse cached answers for identical requests", key="grade_use_cache")
        c2.selectbox("Structured output", MODES, key="grade_structured_output",
                     format_func=lambda mode: f"{mode}: {DESCRIPTIONS[mode]}",
                     help="How each call asks for a JSON answer. auto suits every server: "
                          "it steps down by itself when a server refuses the JSON schema.")
        c2.number_input("Give up on a call after (seconds)", min_value=5, max_value=3600,
                        step=30, key="grade_call_deadline",
                        help="One deadline per provider call, every retry and slow read "
                             "included; the grade then fails and says so.")
        c2.number_input("Pause the run after this many failed calls in a row",
                        min_value=0, max_value=100_000, step=10, key="grade_pause_after",
                        help="Failed calls of one kind (connection reset, HTTP 5xx, an HTML "
                             "page, no choices, no answer in time) with no answer in between. "
                             "The run then makes no more calls and says why; Resume makes "
                             "one probe call first. 0: never pause.")
        c3.number_input("Samples per criterion", min_value=1, max_value=MAX_SAMPLES,
                        key="grade_samples", help=SAMPLES_HELP)
        c3.number_input("Temperature", min_value=0.0, max_value=2.0, step=0.1,
                        key="grade_temperature",
                        help="The judge's sampling temperature. At 0 (the default) samples "
                             "tend to repeat one answer; raise it to measure how stable the "
                             "judge is.")
        c3.checkbox("Shuffle the options per response (multi-choice)",
                    key="grade_shuffle_options", help=SHUFFLE_OPTIONS_HELP)
        c3.checkbox("Shuffle the criteria per response (one-shot)",
                    key="grade_shuffle_criteria", help=SHUFFLE_CRITERIA_HELP)
        c3.checkbox("Length penalty", key="grade_lp_on")
        lp_off = not st.session_state.grade_lp_on
        c3.number_input("Free budget (tokens)", min_value=0, step=500,
                        key="grade_lp_free_budget", disabled=lp_off)
        c3.number_input("Cap (tokens)", min_value=0, step=500, key="grade_lp_max_cap",
                        disabled=lp_off)
        c3.number_input("Penalty at the cap", min_value=0.0, step=0.05,
                        key="grade_lp_penalty_at_cap", disabled=lp_off)
        c3.number_input("Exponent", min_value=0.1, step=0.1, key="grade_lp_exponent",
                        disabled=lp_off)
        c3.selectbox("Counted text", ["ALL", "OUTPUT_ONLY", "THINKING_ONLY"],
                     key="grade_lp_type", disabled=lp_off)
        st.text_area("Custom system prompt (optional)", key="grade_system_prompt",
                     placeholder="Leave empty to use the grader's own prompt.")
