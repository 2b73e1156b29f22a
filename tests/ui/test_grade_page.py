"""AppTest checks of the Grade page: launching, validation, credentials, progress, cancel."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from grading.types import ScoringSettings
from storage.config import database_url
from storage.engine import open_database
from storage.services import datasets, runs
from tests.actors import ADMIN
from tests.fake_provider import fake_provider, fake_provider_server
from tests.storage.helpers import CRITERIA, judge_report, make_dataset, make_rubric
from tests.ui.seed import APP, M, U, seed_graded

__all__ = ["fake_provider", "fake_provider_server"]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _grade_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/grade.py").run()
    assert not at.exception
    return at


def st_cache_clear() -> None:
    """Another tab's change reaches this page at once (the page's readers are cached)."""
    st.cache_data.clear()


def _texts(elements) -> list[str]:
    return [e.value for e in elements]


@pytest.fixture
def sessions():
    sessions = open_database(database_url())
    make_rubric(sessions)
    make_dataset(sessions, count=3)
    return sessions


def test_empty_database_says_what_to_create_first():
    at = _grade_page()
    [info] = at.info
    assert "a rubric (Rubrics page)" in info.value and "Responses page" in info.value


def test_no_model_disables_launch_and_says_where_to_add_one(sessions):
    at = _grade_page()
    assert any("Pick at least one model" in w for w in _texts(at.warning))
    assert at.button(key="grade_launch").disabled


def test_missing_provider_key_is_named_and_blocks_launch(sessions):
    at = _grade_page()
    at.text_input(key="grade_custom_models").input("openai/gpt-4.1-mini").run()
    assert any("OPENAI_API_KEY" in e for e in _texts(at.error))
    assert at.button(key="grade_launch").disabled


def test_launch_queues_one_run_per_grader_and_model(sessions):
    at = _grade_page()
    at.multiselect(key="grade_graders").set_value(["per_criterion", "rubric_as_judge"]).run()
    at.text_input(key="grade_custom_models").input("openai/judge-a, openai/judge-b").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    estimate = at.dataframe[0].value
    assert list(estimate["Calls"]) == [12, 12, 3, 3]  # 3 responses x 4 criteria, or 3
    launch = at.button(key="grade_launch")
    assert launch.label == "Launch 4 runs" and not launch.disabled
    launch.click().run()
    assert not at.exception
    assert any("Queued 4 runs" in s for s in _texts(at.success))
    created = runs.list_runs(sessions)
    assert [(r.grader, r.model, r.status) for r in created] == [
        ("per_criterion", "openai/judge-a", "queued"),
        ("per_criterion", "openai/judge-b", "queued"),
        ("rubric_as_judge", "openai/judge-a", "queued"),
        ("rubric_as_judge", "openai/judge-b", "queued")]
    assert all(r.settings.api_base == "http://127.0.0.1:9/v1" for r in created)
    # No ceiling by default: the runner finds the provider's capacity (issue 13).
    assert "concurrency" not in created[0].settings.extra
    table = at.dataframe[-1].value
    assert list(table["Status"]) == ["queued"] * 4


def _in_page_order(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _in_page_order(child)


def test_the_launch_message_is_shown_under_the_launch_button(sessions):
    # At the page's top it was out of view of the button at 1280x800: nothing seemed to happen.
    at = _grade_page()
    at.text_input(key="grade_custom_models").input("openai/judge-a").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    at.button(key="grade_launch").click().run()
    order = list(_in_page_order(at.main))
    button = next(i for i, e in enumerate(order) if getattr(e, "key", None) == "grade_launch")
    message = next(i for i, e in enumerate(order)
                   if e.type == "success" and "Queued 1 run" in e.value)
    table = max(i for i, e in enumerate(order) if e.type in ("dataframe", "arrow_data_frame"))
    assert button < message < table  # under the button, above the runs it speaks of


def test_settings_reach_the_stored_run(sessions):
    at = _grade_page()
    at.text_input(key="grade_custom_models").input("openai/judge").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    at.checkbox(key="grade_normalize").uncheck()
    at.checkbox(key="grade_allow_ca").check()
    at.selectbox(key="grade_ca_strategy").select("zero")
    at.selectbox(key="grade_fallback_neg").select("UNMET")
    at.checkbox(key="grade_lp_on").check()
    at.text_area(key="grade_system_prompt").input("Be strict.")
    at.run()
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    settings = run.settings
    assert (settings.normalize, settings.allow_cannot_assess, settings.cannot_assess) == (
        False, True, "zero")
    assert settings.fallback_verdicts == {"negative": "UNMET"}
    assert settings.length_penalty.free_budget == 6000
    assert settings.system_prompt == "Be strict."


def test_a_structured_output_mode_reaches_the_run_and_auto_is_not_stored(sessions):
    at = _grade_page()
    at.text_input(key="grade_custom_models").input("openai/judge").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    at.selectbox(key="grade_structured_output").select("json_object").run()
    at.button(key="grade_launch").click().run()
    at.selectbox(key="grade_structured_output").select("auto").run()
    at.text_input(key="grade_run_name").input("second").run()
    at.button(key="grade_launch").click().run()
    modes = sorted(str(run.settings.extra.get("structured_output")) for run in
                   runs.list_runs(sessions))
    assert modes == ["None", "json_object"]


def test_invalid_settings_are_explained_and_nothing_is_queued(sessions):
    at = _grade_page()
    at.text_input(key="grade_custom_models").input("openai/judge").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    at.checkbox(key="grade_lp_on").check().run()
    at.number_input(key="grade_lp_max_cap").set_value(100).run()
    at.button(key="grade_launch").click().run()
    assert not at.exception
    [error] = [e.replace("\\", "") for e in _texts(at.error)
               if "Nothing more was launched" in e]  # shown with markdown escaped
    assert "max_cap" in error and "free_budget" in error
    assert runs.list_runs(sessions) == []


def test_a_selection_of_responses_is_graded(sessions):
    at = _grade_page()
    at.radio(key="grade_selection_mode").set_value("first").run()
    at.number_input(key="grade_first_n").set_value(2).run()
    at.text_input(key="grade_custom_models").input("openai/judge").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    assert list(at.dataframe[0].value["Calls"]) == [8]
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert run.response_count == 2


def test_active_runs_show_progress_and_can_be_cancelled():
    seeded = seed_graded(count=3, grade=False)
    first = seeded.runs[0]
    runs.start_run(seeded.sessions, first.id, worker="test")
    at = _grade_page()
    [bar, *_] = at.get("progress")
    assert "0/3 graded" in bar.proto.text
    at.button(key=f"grade_cancel_{first.id}").click().run()
    assert not at.exception
    assert runs.get_run(seeded.sessions, first.id).status == "cancelled"
    assert any(f"#{first.id} was cancelled" in i for i in _texts(at.info))


def test_an_unreachable_provider_is_named_on_the_run_card_and_failures_are_apart():
    """Issue 35.7: the card read "running, 50/60 graded, 1 failed, ETA 10 min" while the
    provider was down. The runner's notice (written as the runner writes it) is shown, the
    failure is not counted as graded, and there is no ETA."""
    from datetime import UTC, datetime

    from grading.types import EvaluationReport
    from storage.jobs.notices import set_notice, unreachable

    seeded = seed_graded(count=3, grade=False)
    first = seeded.runs[0]
    runs.start_run(seeded.sessions, first.id, worker="test")
    runs.record_grade(seeded.sessions, first.id, seeded.responses[0].id,
                      EvaluationReport(score=None, error="model failed (HTTP 503)"))
    since = datetime(2026, 1, 1, 20, 31, 5, tzinfo=UTC)
    set_notice(seeded.sessions, first.id, unreachable(since, "connection failed", 7, 2, 4))
    at = _grade_page()
    [bar, *_] = at.get("progress")
    text = bar.proto.text
    assert text.startswith("0/3 graded · 1 failed")
    assert "provider unreachable since 20:31:05 UTC (connection failed, 7 calls failed); " \
        "retrying (attempt 2 of 4)" in text
    assert "ETA" not in text


def test_finished_runs_are_listed_with_totals():
    seeded = seed_graded(count=3)
    at = _grade_page()
    table = at.dataframe[-1].value
    # "Graded" counts grades with a score: a failed grade is counted apart (issue 35.7)
    assert list(table["Graded"]) == ["2/3", "3/3"]
    assert list(table["Failed"]) == [1, 0]  # newest first: the second run failed on r2
    assert seeded.runs[0].id


def test_the_run_list_says_which_rubric_version_and_dataset_each_run_graded():
    seeded = seed_graded(count=3)
    at = _grade_page()
    table = at.dataframe[-1].value
    columns = list(table.columns)
    assert columns.index("Rubric") == columns.index("Name") + 1
    assert columns.index("Dataset") == columns.index("Rubric") + 1
    rubric = f"{seeded.version.rubric_name} v{seeded.version.number}"
    assert list(table["Rubric"]) == [rubric, rubric]
    assert list(table["Dataset"]) == ["Answers", "Answers"]  # seed_graded's dataset


def test_a_run_that_finished_with_failures_says_so_on_its_card(fake_provider, monkeypatch):
    """The real runner against the fake provider: every grade fails; the run's card and the
    table say "finished with 3 failed", never "done" (issue 36.7)."""
    from tests.jobs.helpers import run_now

    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    seeded = seed_graded(count=3, grade=False)
    run = seeded.runs[0]
    runs.cancel_run(seeded.sessions, seeded.runs[1].id, actor=ADMIN)
    with seeded.sessions.begin() as session:  # the seeded run, pointed at the fake provider
        from storage import models as m

        session.get(m.RunRow, run.id).settings = {"api_base": fake_provider.api_base,
                                                  "extra": {"use_cache": False}}
    fake_provider.default = lambda _body: "not json"
    assert run_now(seeded.sessions, run.id).status == "done"

    at = _grade_page()
    card = next(m.value for m in at.markdown if f"#{run.id}" in m.value and "graded" in m.value)
    assert "finished with 3 failed" in card and "0/3 graded" in card
    table = at.dataframe[-1].value
    row = table[table["Run"] == f"#{run.id}"].iloc[0]
    assert (row["Status"], row["Graded"], row["Failed"]) == ("finished with 3 failed", "0/3", 3)


def test_a_failed_run_shows_why_and_can_be_requeued():
    seeded = seed_graded(count=3, grade=False)
    run = seeded.runs[0]
    runs.start_run(seeded.sessions, run.id, worker="test")
    runs.fail_run(seeded.sessions, run.id, "No API key was found for model 'openai/judge-a': "
                  "set OPENAI_API_KEY")
    at = _grade_page()
    assert any("set OPENAI_API_KEY" in t.value for t in at.text)
    at.button(key=f"grade_requeue_{run.id}").click().run()
    assert not at.exception
    assert runs.get_run(seeded.sessions, run.id).status == "queued"
    assert any(f"#{run.id} is queued again" in i for i in _texts(at.info))


def test_the_first_n_responses_are_not_capped_by_the_picker_list():
    sessions = open_database(database_url())
    make_rubric(sessions)
    make_dataset(sessions, count=2_100)  # the "Pick" list shows the first 2,000
    at = _grade_page()
    at.radio(key="grade_selection_mode").set_value("first").run()
    at.number_input(key="grade_first_n").set_value(2_050).run()
    at.text_input(key="grade_custom_models").input("openai/judge").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    assert list(at.dataframe[0].value["Responses"]) == [2_050]


def test_a_saved_model_brings_its_own_api_base(sessions):
    from storage.model_presets import add_model_preset

    preset = add_model_preset("openai/local-judge", "http://127.0.0.1:9/v1", actor=ADMIN,
                              sessions=sessions)
    at = _grade_page()
    at.multiselect(key="grade_presets").set_value([preset.label]).run()
    assert not at.error  # a local server needs no cloud key
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert (run.model, run.settings.api_base) == ("openai/local-judge", "http://127.0.0.1:9/v1")


def _ready_to_launch(at: AppTest) -> AppTest:
    at.text_input(key="grade_custom_models").input("openai/judge").run()
    at.text_input(key="grade_api_base").input("http://127.0.0.1:9/v1").run()
    return at


def test_launching_the_same_runs_again_says_so_and_queues_nothing(sessions):
    at = _ready_to_launch(_grade_page())
    at.button(key="grade_launch").click().run()
    [first] = runs.list_runs(sessions)
    at.text_input(key="grade_run_name").input("clicked again").run()  # a label, not new work
    at.button(key="grade_launch").click().run()
    assert not at.exception
    assert [r.id for r in runs.list_runs(sessions)] == [first.id]
    [message] = [i.replace("\\", "") for i in _texts(at.info) if "Already queued" in i]
    assert f"#{first.id}" in message and "not launched again" in message
    assert not at.button(key="grade_launch").disabled  # changing something launches anew
    at.checkbox(key="grade_normalize").uncheck().run()
    at.button(key="grade_launch").click().run()
    assert len(runs.list_runs(sessions)) == 2


def test_the_run_name_is_in_view_next_to_launch_not_in_the_settings(sessions):
    at = _ready_to_launch(_grade_page())
    [settings] = [e for e in at.expander if "settings" in e.label]
    assert "grade_run_name" not in [t.key for t in settings.text_input]
    at.text_input(key="grade_run_name").input("baseline").run()
    at.button(key="grade_launch").click().run()
    assert runs.list_runs(sessions)[0].name == "baseline"


def test_one_criterion_and_one_response_are_singular():
    sessions = open_database(database_url())
    make_rubric(sessions, criteria=CRITERIA[:1])
    make_dataset(sessions, count=1)
    at = _ready_to_launch(_grade_page())
    shown = " ".join(_texts(at.caption))
    assert "1 criterion" in shown and "1 criteria" not in shown
    assert "1 run: 1 provider call," in shown
    assert at.button(key="grade_launch").label == "Launch 1 run"


def test_cost_is_a_dash_before_any_grade_and_unknown_stays_unknown():
    seeded = seed_graded(count=2, grade=False)
    first, second = seeded.runs
    runs.start_run(seeded.sessions, first.id, worker="test")
    at = _grade_page()
    bars = {bar.proto.text for bar in at.get("progress")}
    assert "0/2 graded · cost —" in bars  # nothing spent yet: not "$0.0000"
    assert all("$0.0000" not in text for text in bars)
    report = judge_report(CRITERIA, [M, M, M, U], ScoringSettings(), "a", cost=None)
    runs.record_grade(seeded.sessions, first.id, seeded.responses[0].id, report)
    at = _grade_page()
    bars = {bar.proto.text for bar in at.get("progress")}
    assert any(text.startswith("1/2 graded · cost unknown (no price)") for text in bars)
    table = at.dataframe[-1].value.set_index("Run")
    assert table.loc[f"#{first.id}", "Cost"] == "unknown (no price)"
    assert table.loc[f"#{second.id}", "Cost"] == "—"


def test_a_saved_models_price_reaches_the_estimate_and_the_run(sessions):
    from storage.model_presets import add_model_preset

    preset = add_model_preset("openai/local-judge", "http://127.0.0.1:9/v1",
                              input_price=1.0, output_price=4.0, actor=ADMIN, sessions=sessions)
    at = _grade_page()
    at.multiselect(key="grade_presets").set_value([preset.label]).run()
    [cost] = list(at.dataframe[0].value["Cost (USD)"])
    assert cost.startswith("$") and "unknown" not in " ".join(_texts(at.caption))
    at.button(key="grade_launch").click().run()
    [run] = runs.list_runs(sessions)
    assert (run.settings.price.input_per_million, run.settings.price.output_per_million) == (
        1.0, 4.0)


def test_responses_sent_from_a_results_filter_are_exactly_what_is_graded():
    seeded = seed_graded(count=4)  # r1 disagrees, r2 failed
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/results.py").run()
    at.checkbox(key="results_disagree_only").check().run()
    at.button(key="results_grade_these").click().run()
    assert not at.exception
    mode = at.radio(key="grade_selection_mode")
    assert mode.value == "results" and "The 1 response from Results" in mode.options
    assert any("judges disagree" in c for c in _texts(at.caption))
    at.switch_page("app_pages/grade.py")  # AppTest reruns the page it last switched to
    _ready_to_launch(at)
    assert list(at.dataframe[0].value["Responses"]) == [1]
    at.button(key="grade_launch").click().run()
    newest = runs.list_runs(seeded.sessions)[-1]
    assert runs.pending_response_ids(seeded.sessions, newest.id) == [seeded.responses[1].id]


def test_a_launch_that_found_nothing_to_launch_leaves_launch_usable(sessions):
    """Launch pressed after another tab deleted the dataset: that run of the page ends early
    (nothing to grade). Once responses exist again, nothing is launched until Launch is
    pressed again, and then it works. (The page run that found nothing leaves the
    'launching' flag set; the next run, with no models typed since Streamlit dropped them,
    clears it without launching — this test fails if that stops being true.)"""
    at = _ready_to_launch(_grade_page())
    [dataset] = datasets.list_datasets(sessions)
    datasets.delete_dataset(sessions, dataset.id, confirm=True, actor=ADMIN)
    st_cache_clear()
    at.button(key="grade_launch").click().run()
    assert not at.exception and runs.list_runs(sessions) == []
    assert any("Responses page" in i.value for i in at.info)  # says what to create first

    make_dataset(sessions, count=2)
    st_cache_clear()
    _ready_to_launch(at.run())
    assert runs.list_runs(sessions) == []  # nothing launched without a click
    assert at.button(key="grade_launch").label == "Launch 1 run"
    assert not at.button(key="grade_launch").disabled
    at.button(key="grade_launch").click().run()
    assert len(runs.list_runs(sessions)) == 1
