"""Grade: pick a rubric version, responses, judges and settings; estimate; launch; watch."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.dto import RunInfo
from storage.services import runs
from ui import grade_settings, runtime
from ui import results_readers as readers
from ui.auth import current_actor
from ui.verdict_view import GRADER_HELP, GRADER_LABELS, STATUS_BADGES, md_escape, run_label

POLL_SECONDS = 2.0


@dataclass(frozen=True)
class Judge:
    grader: str
    model: str
    api_base: str | None


def _judges(presets) -> list[Judge]:
    s = st.session_state
    models: list[tuple[str, str | None]] = []
    by_label = {p.label: p for p in presets}
    for label in s.grade_presets:
        if label in by_label:
            models.append((by_label[label].model, by_label[label].api_base))
    typed_base = s.grade_api_base.strip() or None
    for line in s.grade_custom_models.replace(",", "\n").splitlines():
        if line.strip():
            models.append((line.strip(), typed_base))
    models = list(dict.fromkeys(models))
    return [Judge(g, model, base) for g in s.grade_graders for model, base in models]


def _credential_problems(judges: list[Judge]) -> list[str]:
    from storage.jobs.runner import missing_credentials

    seen: dict[tuple[str, str | None], str | None] = {}
    for judge in judges:
        key = (judge.model, judge.api_base)
        if key not in seen:
            seen[key] = missing_credentials(judge.model, judge.api_base)
    return [problem for problem in seen.values() if problem]


def handle_launch(version_id: int, dataset_id: int, response_ids: tuple[int, ...] | None,
                  judges: list[Judge]) -> None:
    """One run per grader x model, queued for the worker; all or nothing for invalid input."""
    s = st.session_state
    settings = grade_settings.launch_settings()
    sessions = runtime.get_sessions()
    created: list[RunInfo] = []
    try:
        for judge in judges:
            created.append(runs.create_run(
                sessions, rubric_version_id=version_id, dataset_id=dataset_id,
                grader=judge.grader, model=judge.model,
                settings={**settings, "api_base": judge.api_base},
                response_ids=list(response_ids) if response_ids is not None else None,
                name=s.grade_run_name.strip(), actor=current_actor()))
    except RubricWorkbenchError as exc:
        s.grade_flash = ("error", f"Nothing more was launched: {md_escape(str(exc))}")
    else:
        noun = "run" if len(created) == 1 else "runs"
        s.grade_flash = ("success", f"Queued {len(created)} {noun}: "
                         + ", ".join(f"#{r.id}" for r in created)
                         + ". They are graded in the background; you can leave this page.")
    finally:
        if created:
            readers.clear_after_launch()


def handle_cancel(run_id: int) -> None:
    try:
        runs.cancel_run(runtime.get_sessions(), run_id, actor=current_actor())
        st.session_state.grade_flash = ("info", f"Run #{run_id} was cancelled; the grades it "
                                        "stored are kept.")
    except RubricWorkbenchError as exc:
        st.session_state.grade_flash = ("error", md_escape(str(exc)))
    readers.get_runs.clear()


def handle_requeue(run_id: int) -> None:
    try:
        runs.requeue_run(runtime.get_sessions(), run_id, actor=current_actor())
        st.session_state.grade_flash = ("info", f"Run #{run_id} is queued again; only the "
                                        "responses without a grade are graded.")
    except RubricWorkbenchError as exc:
        st.session_state.grade_flash = ("error", md_escape(str(exc)))
    readers.get_runs.clear()


def render_stopped(current: list[RunInfo]) -> None:
    """Failed and cancelled runs, newest first, with their error and a way to resume."""
    stopped = [r for r in reversed(current) if r.status in ("failed", "cancelled")][:5]
    for run in stopped:
        with st.container(border=True):
            head, action = st.columns([5, 1], vertical_alignment="center")
            head.markdown(f"{STATUS_BADGES[run.status]} **{md_escape(run_label(run))}** · "
                          f"{run.graded_count:,}/{run.response_count:,} graded")
            if run.error:
                head.text(run.error)
            action.button("Requeue", key=f"grade_requeue_{run.id}", on_click=handle_requeue,
                          args=(run.id,), width="stretch",
                          help="Grade the responses this run has not graded yet")




def render_flash() -> None:
    flash = st.session_state.grade_flash
    if flash:
        kind, message = flash
        getattr(st, kind)(message)
        st.session_state.grade_flash = None


def _keep_valid(key: str, options: list) -> None:
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if options else None


def render_what(db: str):
    """Rubric version and responses; returns (version, dataset, response_ids) or None."""
    rubric_list = [r for r in readers.get_rubric_list(db) if not r.archived]
    dataset_list = [d for d in readers.get_dataset_list(db) if not d.archived]
    if not rubric_list or not dataset_list:
        missing = []
        if not rubric_list:
            missing.append("a rubric (Rubrics page)")
        if not dataset_list:
            missing.append("a dataset of responses (Responses page)")
        st.info("To grade you need " + " and ".join(missing) + ". The Start page can load a "
                "sample rubric and sample responses in one click.")
        cols = st.columns(3)
        cols[0].page_link("app_pages/home.py", label="Start: load samples",
                          icon=":material/home:")
        cols[1].page_link("app_pages/rubrics.py", label="Rubrics", icon=":material/checklist:")
        cols[2].page_link("app_pages/responses.py", label="Responses",
                          icon=":material/description:")
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
        st.caption(f"{len(version.criteria)} criteria"
                   + (f", {negatives} negative (penalties)" if negatives else ""))
    with right:
        dataset_ids = [d.id for d in dataset_list]
        dnames = {d.id: f"{d.name} ({d.response_count} responses)" for d in dataset_list}
        _keep_valid("grade_dataset_id", dataset_ids)
        dataset_id = st.selectbox("Dataset", dataset_ids, format_func=dnames.get,
                                  key="grade_dataset_id")
        dataset = next(d for d in dataset_list if d.id == dataset_id)
        mode = st.radio("Responses", ["all", "first", "pick"], horizontal=True,
                        key="grade_selection_mode",
                        format_func={"all": f"All {dataset.response_count}",
                                     "first": "The first N", "pick": "Pick"}.get)
        response_ids: tuple[int, ...] | None = None
        if mode == "first":
            count = st.number_input("How many", min_value=1,
                                    max_value=max(1, dataset.response_count),
                                    key="grade_first_n")
            response_ids = readers.get_first_response_ids(db, dataset_id, int(count),
                                                          dataset.response_count)
        elif mode == "pick":
            labels_ = dict(readers.get_response_labels(db, dataset_id))
            st.session_state.grade_picked_ids = [
                i for i in st.session_state.grade_picked_ids if i in labels_]
            picked = st.multiselect("Responses to grade", list(labels_),
                                    format_func=labels_.get, key="grade_picked_ids",
                                    placeholder="Choose responses")
            if dataset.response_count > len(labels_):
                st.caption(f"Showing the first {len(labels_):,} responses; use “The first N” "
                           "or a smaller dataset for the rest.")
            response_ids = tuple(picked)
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


def render_estimate(db: str, version, dataset, response_ids, judges: list[Judge]) -> bool:
    """The estimate table; True when launching is possible."""
    st.subheader("Estimate")
    if not st.session_state.grade_graders:
        st.warning("Pick at least one grader.")
        return False
    if not judges:
        st.warning("Pick at least one model: save models on the Settings page, or type a "
                   "litellm model name above (with an api_base for a local server).")
        st.page_link("app_pages/settings.py", label="Settings: models and keys",
                     icon=":material/settings:")
        return False
    if response_ids is not None and not response_ids:
        st.warning("Pick at least one response.")
        return False
    s = st.session_state
    estimates = [readers.get_estimate(
        db, version.id, dataset.id, response_ids, judge.grader, judge.model,
        s.grade_system_prompt.strip() or None, s.grade_allow_ca) for judge in judges]
    st.dataframe([{
        "Grader": GRADER_LABELS[judge.grader], "Model": judge.model,
        "api_base": judge.api_base or "", "Responses": e.responses, "Calls": e.calls,
        "Tokens (approx.)": e.prompt_tokens + e.completion_tokens,
        "Cost (USD)": "unknown" if e.cost is None else f"${e.cost:,.4f}",
    } for judge, e in zip(judges, estimates, strict=True)], hide_index=True, width="stretch")
    calls = sum(e.calls for e in estimates)
    tokens = sum(e.prompt_tokens + e.completion_tokens for e in estimates)
    costs = [e.cost for e in estimates]
    cost = ("unknown (litellm has no price for some models)" if any(c is None for c in costs)
            else f"${sum(costs):,.4f}")
    st.caption(f"{len(judges)} run(s): {calls:,} provider calls, about {tokens:,} tokens, "
               f"cost {cost}. {estimates[0].note}")
    problems = _credential_problems(judges)
    for problem in problems:
        st.error(problem + " Or give an api_base for a local OpenAI-compatible server.")
    return not problems


def _progress_line(progress) -> str:
    parts = [f"{progress.graded:,}/{progress.total:,} graded"]
    if progress.failed:
        parts.append(f"{progress.failed:,} failed")
    if progress.known_cost or progress.unknown_cost_count:
        parts.append(f"${progress.known_cost:,.4f}"
                     + (" + unknown" if progress.unknown_cost_count else ""))
    if progress.cache_hits:
        parts.append(f"{progress.cache_hits:,} cached")
    if progress.eta_s is not None and not progress.finished:
        parts.append(f"ETA {_duration(progress.eta_s)}")
    if progress.notice and not progress.finished:
        parts.append(progress.notice)
    return " · ".join(parts)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _cost(run: RunInfo) -> str:
    if not run.unknown_cost_count:
        return f"${run.cost:,.4f}"
    if run.cost:
        return f"${run.cost:,.4f} + unknown"
    return "unknown (no price)"


def _runs_table(all_runs: list[RunInfo]) -> list[dict]:
    return [{
        "Run": f"#{r.id}", "Status": r.status, "Name": r.name,
        "Grader": GRADER_LABELS.get(r.grader, r.grader), "Model": r.model,
        "Graded": f"{r.graded_count:,}/{r.response_count:,}", "Failed": r.failed_count,
        "Tokens": r.total_tokens,
        "Cost": _cost(r),
        "Created": r.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
        "Launched by": r.launched_by or "",
        "Error": r.error or "",
    } for r in reversed(all_runs)]


def render_runs(db: str) -> None:
    """Active runs with live progress, then every run. Polls only while something is active."""
    all_runs = readers.get_runs(db)
    active = [r for r in all_runs if r.status in ("queued", "running")]

    @st.fragment(run_every=POLL_SECONDS if active else None)
    def live() -> None:
        readers.get_runs.clear()  # the fragment is the poll: always read fresh totals
        current = readers.get_runs(db)
        now_active = [r for r in current if r.status in ("queued", "running")]
        if active and not now_active:
            st.rerun()  # everything finished: redraw the page once and stop polling
        st.subheader("Runs")
        if not current:
            st.info("No runs yet. Pick a rubric, responses and judges above, then launch.")
            return
        for run in now_active:
            progress = readers.get_progress(db, run.id)
            with st.container(border=True):
                head, cancel = st.columns([5, 1])
                head.markdown(f"{STATUS_BADGES[run.status]} **{md_escape(run_label(run))}**")
                head.progress(progress.fraction, text=_progress_line(progress))
                if run.status == "queued":
                    head.caption("Waiting for a worker to pick it up.")
                cancel.button("Cancel", key=f"grade_cancel_{run.id}", on_click=handle_cancel,
                              args=(run.id,), width="stretch")
        render_stopped(current)
        st.dataframe(_runs_table(current), hide_index=True, width="stretch")
        if any(r.status == "done" for r in current):
            st.page_link("app_pages/results.py", label="Compare the results",
                         icon=":material/table_chart:")
        st.caption(f"Updated {datetime.now(UTC):%H:%M:%S} UTC"
                   + (f"; refreshing every {POLL_SECONDS:g} s." if now_active else "."))

    live()


st.title("Grade")
st.caption("Run LLM judges over responses with a rubric. Launching queues the runs; a worker "
           "grades them in the background, so you can leave this page or close the tab.")
db = runtime.database_key()
if not runtime.ensure_worker():
    st.caption(f"This app's own worker is off ({runtime.WORKER_VARIABLE}=0): queued runs wait "
               "for a `rubric-workbench worker` process.")
render_flash()
try:
    picked = render_what(db)
    if picked is not None:
        version, dataset, response_ids = picked
        judges = render_judges(db)
        grade_settings.render_settings()
        can_launch = render_estimate(db, version, dataset, response_ids, judges)
        label = f"Launch {len(judges)} run{'s' if len(judges) != 1 else ''}" if judges else (
            "Launch")
        if st.button(label, type="primary", disabled=not can_launch, key="grade_launch"):
            handle_launch(version.id, dataset.id, response_ids, judges)
            st.rerun()
    if picked is not None or readers.get_runs(db):
        render_runs(db)
except RubricWorkbenchError as exc:
    st.error(md_escape(str(exc)))
