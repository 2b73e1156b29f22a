"""Grade: pick a rubric version, responses, judges and settings; estimate; launch; watch."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.services import runs
from ui import (
    grade_calibration,
    grade_cost_cap,
    grade_handoff,
    grade_panel,
    grade_runs,
    grade_settings,
    grade_url,
    runtime,
)
from ui import results_readers as readers
from ui import url_state as url
from ui.auth import current_actor
from ui.verdict_view import GRADER_HELP, GRADER_LABELS, md_escape, run_label
from ui.wording import estimate_cost_text, plural

SELECTION_MODES = ("all", "first", "pick", "results")


@dataclass(frozen=True)
class Judge:
    grader: str
    model: str
    api_base: str | None
    price: tuple[float, float] | None = None  # USD per million input / output tokens


def _judges(presets) -> list[Judge]:
    """One judge per grader x model; a typed model that is also a saved one brings its price."""
    s = st.session_state
    by_label = {p.label: p for p in presets}
    by_key = {p.key: p for p in presets}
    models = [by_label[label].key for label in s.grade_presets if label in by_label]
    typed_base = s.grade_api_base.strip().rstrip("/") or None
    for line in s.grade_custom_models.replace(",", "\n").splitlines():
        if line.strip():
            models.append((line.strip(), typed_base))
    models = list(dict.fromkeys(models))
    return [Judge(g, model, base, by_key[(model, base)].price if (model, base) in by_key
                  else None)
            for g in s.grade_graders for model, base in models]


def _credential_problems(judges: list[Judge]) -> list[str]:
    from storage.jobs.runner import missing_credentials

    seen: dict[tuple[str, str | None], str | None] = {}
    for judge in judges:
        key = (judge.model, judge.api_base)
        if key not in seen:
            seen[key] = missing_credentials(judge.model, judge.api_base)
    return [problem for problem in seen.values() if problem]


def _run_settings(judge: Judge, settings: dict, cost_cap: float | None = None) -> dict:
    price = ({"input_per_million": judge.price[0], "output_per_million": judge.price[1]}
             if judge.price else None)
    extra = {**settings.get("extra", {}), **({"cost_cap": cost_cap} if cost_cap else {})}
    return {**settings, "api_base": judge.api_base, "price": price, "extra": extra}


def handle_launch_click() -> None:
    st.session_state.grade_launching = True  # drawn disabled until the launch is done


def handle_launch(version_id: int, dataset_id: int, response_ids: tuple[int, ...] | None,
                  judges: list[Judge], panel=None, estimates=()) -> None:
    """One run per grader x model, queued for the worker; runs already queued or running
    for the same work are named, not queued twice. As a panel, the panel over them too."""
    s = st.session_state
    settings = {**grade_settings.launch_settings(), **grade_calibration.launch_settings()}
    sessions = runtime.get_sessions()
    created, existing, launched, panel_messages = [], [], [], []
    caps = (grade_panel.member_caps(panel, estimates) if panel
            else [grade_cost_cap.run_cap(panel)] * len(judges))
    try:
        for judge, cap in zip(judges, caps, strict=True):
            launch = runs.launch_run(
                sessions, rubric_version_id=version_id, dataset_id=dataset_id,
                grader=judge.grader, model=judge.model,
                settings=_run_settings(judge, settings, cap),
                response_ids=list(response_ids) if response_ids is not None else None,
                name=s.grade_run_name.strip(), actor=current_actor())
            (created if launch.created else existing).append(launch.run)
            launched.append(launch.run)
        if panel is not None:
            panel_messages = grade_panel.make_panels(panel, judges, launched,
                                                     s.grade_run_name.strip())
    except RubricWorkbenchError as exc:
        s.grade_flash = ("error", f"Nothing more was launched: {md_escape(str(exc))}")
        return
    finally:
        if created:
            readers.clear_after_launch()
    messages = []
    if created:
        messages.append(f"Queued {plural(len(created), 'run')}: "
                        + ", ".join(f"#{r.id}" for r in created)
                        + ". They are graded in the background; you can leave this page.")
    if existing:
        already = "; ".join(f"{md_escape(run_label(r))} ({r.status})" for r in existing)
        messages.append(f"Already queued or running with these settings and responses, so "
                        f"not launched again: {already}.")
    messages.extend(md_escape(m) for m in panel_messages)
    s.grade_flash = ("success" if created else "info", " ".join(messages))


def render_flash() -> None:
    """The message of the last launch or cancel, in a slot drawn on every run: a message that
    appears must not move the page down under a person's pointer (mid-rerun the browser would
    show the old, disabled Launch button and the new one at once)."""
    slot = st.container()
    flash = st.session_state.grade_flash
    if flash:
        kind, message = flash
        getattr(slot, kind)(message)
        st.session_state.grade_flash = None


def _keep_valid(key: str, options: list) -> None:
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if options else None


def apply_handoff() -> None:
    """Responses sent from Results: preselect their rubric version, dataset and selection."""
    handoff = grade_handoff.take_fresh()
    if handoff is not None:
        s = st.session_state
        s.grade_rubric_id = handoff.rubric_id
        s.grade_version_id = handoff.rubric_version_id
        s.grade_dataset_id = handoff.dataset_id
        s.grade_selection_mode = "results"


def render_missing(rubric_list, dataset_list) -> None:
    missing = []
    if not rubric_list:
        missing.append("a rubric (Rubrics page)")
    if not dataset_list:
        missing.append("a dataset of responses (Responses page)")
    st.info("To grade you need " + " and ".join(missing) + ". The Start page can load a "
            "sample rubric and sample responses in one click.")
    cols = st.columns(3)
    cols[0].page_link("app_pages/home.py", label="Start: load samples", icon=":material/home:")
    cols[1].page_link("app_pages/rubrics.py", label="Rubrics", icon=":material/checklist:")
    cols[2].page_link("app_pages/responses.py", label="Responses",
                      icon=":material/description:")


def render_selection(db: str, dataset) -> tuple[int, ...] | None:
    """Which responses: all, the first N, picked by hand, or those a Results filter showed."""
    handoff = grade_handoff.current(dataset.id)
    modes = [m for m in SELECTION_MODES if m != "results" or handoff is not None]
    _keep_valid("grade_selection_mode", modes)
    labels = {"all": f"All {dataset.response_count:,}", "first": "The first N",
              "pick": "Pick", "results": grade_handoff.option_label(handoff) if handoff
              else ""}
    mode = st.radio("Responses", modes, horizontal=True, key="grade_selection_mode",
                    format_func=labels.get)
    if mode == "first":
        count = st.number_input("How many", min_value=1,
                                max_value=max(1, dataset.response_count), key="grade_first_n")
        return readers.get_first_response_ids(db, dataset.id, int(count),
                                              dataset.response_count)
    if mode == "pick":
        labels_ = dict(readers.get_response_labels(db, dataset.id))
        st.session_state.grade_picked_ids = [
            i for i in st.session_state.grade_picked_ids if i in labels_]
        picked = st.multiselect("Responses to grade", list(labels_), format_func=labels_.get,
                                key="grade_picked_ids", placeholder="Choose responses")
        if dataset.response_count > len(labels_):
            st.caption(f"Showing the first {len(labels_):,} responses; use “The first N”, or "
                       "filter them on Results and press “Grade these”.")
        return tuple(picked)
    if mode == "results" and handoff is not None:
        st.caption(f"Matching the Results filter: {md_escape(handoff.description)}.")
        return handoff.response_ids
    return None


def render_what(db: str):
    """Rubric version and responses; returns (version, dataset, response_ids) or None."""
    rubric_list = [r for r in readers.get_rubric_list(db) if not r.archived]
    dataset_list = [d for d in readers.get_dataset_list(db) if not d.archived]
    if not rubric_list or not dataset_list:
        render_missing(rubric_list, dataset_list)
        return None
    left, right = st.columns(2)
    with left:
        rubric_ids = [r.id for r in rubric_list]
        names = {r.id: r.name for r in rubric_list}
        _keep_valid("grade_rubric_id", rubric_ids)
        rubric_id = st.selectbox("Rubric", rubric_ids, format_func=names.get,
                                 key="grade_rubric_id")
        versions = readers.get_versions(db, rubric_id)
        version_ids = [v.id for v in reversed(versions)]
        labels = {v.id: f"v{v.number}" + (" (frozen)" if v.frozen else "")
                  + (f" — {v.note}" if v.note else "") for v in versions}
        _keep_valid("grade_version_id", version_ids)
        version_id = st.selectbox("Version", version_ids, format_func=labels.get,
                                  key="grade_version_id",
                                  help="Grading freezes the version: later edits make a new one.")
        version = next(v for v in versions if v.id == version_id)
        negatives = sum(1 for c in version.criteria if c.weight < 0)
        st.caption(plural(len(version.criteria), "criterion", "criteria")
                   + (f", {negatives:,} negative (penalties)" if negatives else ""))
    with right:
        dataset_ids = [d.id for d in dataset_list]
        dnames = {d.id: f"{d.name} ({plural(d.response_count, 'response')})"
                  for d in dataset_list}
        _keep_valid("grade_dataset_id", dataset_ids)
        dataset_id = st.selectbox("Dataset", dataset_ids, format_func=dnames.get,
                                  key="grade_dataset_id")
        dataset = next(d for d in dataset_list if d.id == dataset_id)
        response_ids = render_selection(db, dataset)
    return version, dataset, response_ids


def render_judges(db: str) -> list[Judge]:
    presets = readers.get_model_presets(db)
    left, right = st.columns(2)
    with left:
        st.multiselect("Graders", list(GRADER_LABELS), format_func=GRADER_LABELS.get,
                       key="grade_graders", help="; ".join(
                           f"{GRADER_LABELS[k]}: {v}" for k, v in GRADER_HELP.items()))
    with right:
        labels = [p.label for p in presets]
        st.session_state.grade_presets = [x for x in st.session_state.grade_presets
                                          if x in labels]
        st.multiselect("Models from Settings", labels, key="grade_presets",
                       placeholder="No saved models yet" if not labels else "Choose models",
                       disabled=not labels)
    left, right = st.columns(2)
    left.text_input("Other models (litellm names, comma-separated)", key="grade_custom_models",
                    placeholder="openai/gpt-4.1-mini, anthropic/claude-sonnet-4-5")
    right.text_input("api_base for these models (optional)", key="grade_api_base",
                     placeholder="http://127.0.0.1:8000/v1",
                     help="An OpenAI-compatible server (vLLM, LM Studio, Ollama's /v1). "
                          "Leave empty for the provider's own API.")
    return _judges(presets)


def render_estimate(db: str, version, dataset, response_ids, judges: list[Judge],
                    panel=None) -> tuple[bool, list]:
    """The estimate table; (launching is possible, the estimate per judge)."""
    st.subheader("Estimate")
    if not st.session_state.grade_graders:
        st.warning("Pick at least one grader.")
        return False, []
    if not judges:
        st.warning("Pick at least one model: save models on the Settings page, or type a "
                   "litellm model name above (with an api_base for a local server).")
        st.page_link("app_pages/settings.py", label="Settings: models and keys",
                     icon=":material/settings:")
        return False, []
    if response_ids is not None and not response_ids:
        st.warning("Pick at least one response.")
        return False, []
    s = st.session_state
    estimates = [readers.get_estimate(
        db, version.id, dataset.id, response_ids, judge.grader, judge.model,
        s.grade_system_prompt.strip() or None, s.grade_allow_ca, judge.price,
        grade_calibration.estimate_key(judge.grader), int(s.grade_samples))
        for judge in judges]
    st.dataframe([{
        "Grader": GRADER_LABELS[judge.grader], "Model": judge.model,
        "api_base": judge.api_base or "", "Responses": e.responses, "Calls": e.calls,
        "Tokens (approx.)": e.prompt_tokens + e.completion_tokens,
        "Cost (USD)": estimate_cost_text(e.cost),
    } for judge, e in zip(judges, estimates, strict=True)], hide_index=True, width="stretch")
    calls = sum(e.calls for e in estimates)
    tokens = sum(e.prompt_tokens + e.completion_tokens for e in estimates)
    unpriced = sorted({judge.model for judge, e in zip(judges, estimates, strict=True)
                       if e.cost is None})
    cost = (f"unknown (no price for {', '.join(unpriced)}: set one on the Settings page)"
            if unpriced else f"${sum(e.cost for e in estimates if e.cost is not None):,.4f}")
    st.caption(f"{plural(len(judges), 'run')}: {plural(calls, 'provider call')}, about "
               f"{tokens:,} tokens, cost {cost}. {estimates[0].note}")
    problems = _credential_problems(judges)
    for problem in problems:
        st.error(problem + " Or give an api_base for a local OpenAI-compatible server.")
    graders = [judge.grader for judge in judges]
    for problem in (grade_settings.samples_problem(graders),
                    grade_settings.shuffle_problem(graders),
                    grade_settings.options_shuffle_problem(graders, version)):
        if problem:
            st.error(problem)
            problems.append(problem)
    panel_ok = grade_panel.render_panel_problems(panel, estimates, judges)
    cap_ok = grade_cost_cap.render_cap(panel, estimates, judges)
    return not problems and panel_ok and cap_ok, estimates


def render_launch(version, dataset, response_ids, judges: list[Judge], can_launch: bool,
                  panel=None, estimates=()):
    s = st.session_state
    name_col, button_col = st.columns([3, 1], vertical_alignment="bottom")
    name_col.text_input("Run name (optional)", key="grade_run_name",
                        placeholder="e.g. baseline, after prompt fix",
                        help="Shown next to the run's number on every page.")
    label = f"Launch {plural(len(judges), 'run')}" if judges else "Launch"
    if judges and panel is not None:
        label += " as a panel"
    button_col.button(label, type="primary", key="grade_launch", width="stretch",
                      disabled=not can_launch or s.grade_launching,
                      on_click=handle_launch_click)
    busy = st.empty()  # drawn on every run, so the spinner below shifts nothing
    if s.grade_launching:
        try:
            with busy, st.spinner("Queueing…"):
                handle_launch(version.id, dataset.id, response_ids, judges, panel, estimates)
        finally:
            s.grade_launching = False
        st.rerun()


st.title("Grade")
st.caption("Run LLM judges over responses with a rubric. Launching queues the runs; a worker "
           "grades them in the background, so you can leave this page or close the tab.")
db = runtime.database_key()
if not runtime.ensure_worker():
    st.caption(f"This app's own worker is off ({runtime.WORKER_VARIABLE}=0): queued runs wait "
               "for a `rubric-workbench worker` process.")
url.restore("grade", grade_url.URL_FIELDS)  # a reload shows the form as it was
try:
    apply_handoff()
    picked = render_what(db)
    if picked is not None:
        version, dataset, response_ids = picked
        judges = render_judges(db)
        panel = grade_panel.render_panel_choice(judges)
        grade_settings.render_settings()
        calibration_ok = grade_calibration.render_calibration(db, version)
        can_launch, estimates = render_estimate(db, version, dataset, response_ids, judges,
                                                panel)
        can_launch = can_launch and calibration_ok
        render_launch(version, dataset, response_ids, judges, can_launch, panel, estimates)
    render_flash()  # under the Launch button (and above the runs the message is about)
    grade_runs.render_runs(db, say_when_empty=picked is not None)
except RubricWorkbenchError as exc:
    st.error(md_escape(str(exc)))
    render_flash()
url.save("grade", grade_url.URL_FIELDS)
