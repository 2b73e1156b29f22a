"""AppTest checks of the Results page: table, filters, pagination, sorting, one response."""

from __future__ import annotations

import time

import pytest

from storage.services import datasets, reviews
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.ui.pages import open_page, texts
from tests.ui.seed import M, U, seed_graded

RUN_A, RUN_B = "#1 judge-a", "#2 judge-b"  # score columns: run number and model


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _table(at):
    return at.dataframe[0].value


def _open(at, response_id: int):
    """What a click on the response's row does (a browser test clicks the row itself)."""
    at.session_state["results_open_response"] = response_id
    at.session_state["results_dialog_pending"] = True
    return at.run()


def test_no_runs_points_to_the_grade_page():
    at = open_page("results")
    assert "No runs yet — go to Grade" in texts(at)


def test_table_shows_each_response_with_one_effective_score_per_run():
    seed_graded(count=3)
    at = open_page("results")
    table = _table(at)
    assert list(table["ID"]) == ["r0", "r1", "r2"]
    assert list(table[RUN_A]) == pytest.approx([1.0, 1.0, 1.0])
    assert table[RUN_B][1] == pytest.approx(12.5 / 17.5) and table[RUN_B].isna()[2]
    assert list(table["Flags"]) == ["", "≠ verdicts", "⚠ failed"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Judges disagree"] == "1" and metrics["Judge failed or fell back"] == "1"


@pytest.mark.parametrize(("key", "expected"), [
    pytest.param("results_failed_only", ["r2"], id="failed"),
    pytest.param("results_disagree_only", ["r1"], id="disagree"),
])
def test_checkbox_filters_narrow_the_table(key, expected):
    seed_graded(count=3)
    at = open_page("results")
    at.checkbox(key=key).check().run()
    assert list(_table(at)["ID"]) == expected


def test_text_search_and_an_empty_result_say_what_to_do():
    seed_graded(count=3)
    at = open_page("results")
    at.text_input(key="results_search").input("question 2").run()
    assert list(_table(at)["ID"]) == ["r2"]
    at.text_input(key="results_search").input("no such words").run()
    assert not at.dataframe and "No response matches these filters" in texts(at)


def test_score_range_filters_on_effective_scores_after_an_override():
    seeded = seed_graded(count=3)
    at = open_page("results")
    at.slider(key="results_score_range").set_value((0.0, 0.9)).run()
    assert list(_table(at)["ID"]) == ["r1"]  # judge-b gave r1 0.714
    reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[1].id,
                              criterion_id=seeded.version.criteria[1].id, verdict="MET",
                              actor=local_actor("ana"))
    time.sleep(2.1)  # another reviewer's verdict shows within the stamp's 2 s
    at.run()
    assert not at.dataframe
    at.radio(key="results_reviewed").set_value("reviewed").run()
    at.slider(key="results_score_range").set_value((0.0, 1.0)).run()
    table = _table(at)
    assert list(table["ID"]) == ["r1"] and list(table["Reviewed"]) == ["1/4"]
    assert table[RUN_B][0] == pytest.approx(1.0)


def test_pagination_and_sorting_are_done_over_the_whole_set():
    seed_graded(count=30)
    at = open_page("results")
    at.selectbox(key="results_page_size").select(25).run()
    assert len(_table(at)) == 25
    at.number_input(key="results_page").set_value(2).run()
    assert list(_table(at)["ID"]) == [f"r{i}" for i in range(25, 30)]
    assert "Showing 26–30 of 30" in texts(at)
    at.selectbox(key="results_sort").select("score").run()
    at.selectbox(key="results_sort_run").select(2).run()
    assert at.session_state.results_page == 1  # a new order starts at the first page
    table = _table(at)
    assert list(table["ID"][:1]) == ["r1"]  # the lowest judge-b score first
    at.number_input(key="results_page").set_value(2).run()
    assert list(_table(at)["ID"])[-1] == "r2"  # no score: last


def test_opening_a_response_shows_both_judges_reasons_and_the_disagreement():
    seeded = seed_graded(count=3)
    at = open_page("results")
    _open(at, seeded.responses[1].id)
    assert not at.exception
    shown = texts(at)
    assert [d.proto.dialog.title for d in at.get("dialog")] == ["Response r1"]
    assert "**2. cites** · weight 5 · Accuracy · :orange-badge[judges disagree]" in shown
    assert "penalty if met" in shown
    assert shown.count("reason 1") == 2  # both runs' reasons for the 'cites' criterion
    assert [c.value for c in at.code][:2] == ["question 1", "answer 1"]
    scores = {m.label: m.value for m in at.metric}
    assert (scores["#1 Per criterion"], scores["#2 One-shot"]) == ("1.000", "0.714")
    assert "openai/judge-b · judge 0.714 · reviewed 0/4" in shown


def test_a_failed_criterion_shows_the_judges_error():
    seeded = seed_graded(count=3)
    at = open_page("results")
    _open(at, seeded.responses[2].id)
    shown = texts(at)
    assert "no verdict" in shown and "Error: no answer" in shown


def test_review_this_response_opens_it_in_the_review_queue():
    seeded = seed_graded(count=3)
    at = open_page("results")
    _open(at, seeded.responses[2].id)
    at.button(key="results_to_review").click().run()
    assert not at.exception
    assert "**2 of 3** · r2" in texts(at)


def test_model_and_uploaded_text_is_shown_as_text_never_markup():
    from grading.types import CriterionReport, EvaluationReport
    from storage.config import database_url
    from storage.engine import open_database
    from storage.services import datasets, runs
    from tests.storage.helpers import CRITERIA, make_rubric

    sessions = open_database(database_url())
    version = make_rubric(sessions)
    hostile = "<script>alert(1)</script> **not bold** [link](http://example.invalid)"
    dataset = datasets.create_dataset(sessions, "Hostile", responses=[
        {"id": "x1", "query": hostile, "text": hostile}], actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge", actor=ADMIN)
    report = EvaluationReport(score=0.5, raw_score=8.75, report=[
        CriterionReport(**c.model_dump(), verdict="MET" if i else "UNMET",
                        reason=f"<img src=x onerror=alert({i})>",
                        error="fell back after 3 failed answers" if i == 2 else None)
        for i, c in enumerate(CRITERIA)])
    runs.record_grade(sessions, run.id, response.id, report)
    at = open_page("results")
    _open(at, response.id)
    assert not at.exception
    assert [c.value for c in at.code][:2] == [hostile, hostile]  # verbatim, in code blocks
    reasons = [t.value for t in at.text]
    assert "<img src=x onerror=alert(1)>" in reasons  # st.text: never HTML
    assert not any("<img" in m.value or "<script>" in m.value for m in at.markdown)
    shown = texts(at)
    assert ":orange-badge[fallback verdict]" in shown
    assert "Error: fell back after 3 failed answers" in shown


def test_a_run_still_grading_can_be_refreshed_into_the_table():
    from grading.types import ScoringSettings
    from storage.services import runs
    from tests.storage.helpers import CRITERIA, judge_report

    seeded = seed_graded(count=3, grade=False)
    first = seeded.runs[0]
    runs.start_run(seeded.sessions, first.id, worker="test")
    at = open_page("results")
    assert "Still grading: #1 (0/3)" in texts(at)
    assert _table(at)[RUN_A].isna().all()
    report = judge_report(CRITERIA, [M, M, M, U], ScoringSettings(), "answer 0")
    runs.record_grade(seeded.sessions, first.id, seeded.responses[0].id, report)
    time.sleep(2.1)  # the stamp's TTL
    at.button(key="results_refresh").click().run()
    assert "Still grading: #1 (1/3)" in texts(at)
    assert _table(at)[RUN_A][0] == pytest.approx(1.0)


def _seed_with_models():
    """Four responses with a `model` column kept from the upload, graded by two runs that
    differ on 'cites' for r1 only."""
    from grading.types import ScoringSettings
    from storage.config import database_url
    from storage.engine import open_database
    from storage.services import datasets, runs
    from tests.storage.helpers import CRITERIA, judge_report, make_rubric, make_run

    sessions = open_database(database_url())
    version = make_rubric(sessions)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}", "model": ("gpt", "claude")[i % 2]}
        for i in range(4)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    first = make_run(sessions, version.id, dataset.id)
    second = make_run(sessions, version.id, dataset.id, grader="one_shot")
    for index, response in enumerate(responses):
        for run in (first, second):
            cites = U if (run is second and index == 1) or index == 3 else M
            runs.record_grade(sessions, run.id, response.id, judge_report(
                CRITERIA, [M, cites, M, U], ScoringSettings(), response.output))
    return version


def test_filters_on_an_upload_column_and_on_a_criterion_verdict():
    version = _seed_with_models()
    at = open_page("results")
    at.selectbox(key="results_meta_column").set_value("model").run()
    at.selectbox(key="results_meta_value").set_value("claude").run()
    assert not at.exception
    assert list(_table(at)["ID"]) == ["r1", "r3"]
    at.selectbox(key="results_meta_column").set_value("").run()
    cites = version.criteria[1].id
    at.selectbox(key="results_verdict_criterion").set_value(cites).run()
    at.selectbox(key="results_verdict_value").set_value("MET").run()
    assert list(_table(at)["ID"]) == ["r0", "r1", "r2"]  # the first run's verdicts
    assert at.selectbox(key="results_verdict_run").value == 1
    at.selectbox(key="results_verdict_run").set_value(2).run()  # the one-shot run
    assert list(_table(at)["ID"]) == ["r0", "r2"]


def test_score_gap_is_adjustable_and_the_flag_says_what_it_means():
    seed_graded(count=3)  # r1: the runs differ on 'cites' (verdicts) and by 0.29 (scores)
    at = open_page("results")
    assert "≠ verdicts" in list(_table(at)["Flags"])
    caption = texts(at)
    assert "**Judges disagree** means: Two runs that give per-criterion verdicts differ" in caption
    assert "more than 0.20 apart" in caption and "holistic" in caption
    at.number_input(key="results_score_gap").set_value(0.5).run()
    assert not at.exception
    assert "more than 0.50 apart" in texts(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Judges disagree"] == "1"  # still flagged: the verdicts differ


def test_a_disputed_criterion_shows_in_the_table_until_an_adjudicator_decides():
    seeded = seed_graded(count=3)
    rid = seeded.responses[1].id
    cites, concise = seeded.version.criteria[1], seeded.version.criteria[2]
    for criterion in (cites, concise):  # ana and bo disagree on both
        reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=criterion.id,
                                  verdict="MET", actor=local_actor("ana"))
        reviews.set_human_verdict(seeded.sessions, response_id=rid, criterion_id=criterion.id,
                                  verdict="UNMET", actor=local_actor("bo"))
    at = open_page("results")
    table = _table(at)
    assert list(table["Disputed"]) == ["", "2: cites, concise", ""]
    reviews.adjudicate(seeded.sessions, response_id=rid, criterion_id=cites.id,
                       verdict="UNMET", actor=local_actor("ana"))
    time.sleep(2.1)  # verdicts from elsewhere show within 2 s (the results stamp's TTL)
    at.run()
    assert list(_table(at)["Disputed"]) == ["", "1: concise", ""]


def test_sorting_by_peoples_score_puts_fully_reviewed_responses_first():
    """People's score (every criterion decided, from effective_scores) sorts the table;
    responses people have not fully reviewed come after, in dataset order."""
    seeded = seed_graded(count=4)
    picks = {2: "MET", 1: "UNMET"}  # r2 all MET (1.0), r1 all UNMET (0.0)
    for index, verdict in picks.items():
        reviews.save_review(
            seeded.sessions, actor=local_actor("ana"), response_id=seeded.responses[index].id,
            verdicts={c.id: (verdict, "") for c in seeded.version.criteria})
    at = open_page("results")
    at.selectbox(key="results_sort").select("people").run()
    assert list(_table(at)["ID"]) == ["r1", "r2", "r0", "r3"]
    at.selectbox(key="results_descending").select(True).run()
    assert list(_table(at)["ID"]) == ["r2", "r1", "r0", "r3"]


def test_responses_added_to_the_dataset_elsewhere_show_within_the_stamp():
    """Another person (another tab, the CLI) adds a response to a dataset the runs grade:
    the table lists it (ungraded) within the stamp's 2 s, as a new grade would show, not
    only once a grade or a verdict lands."""
    seeded = seed_graded(count=3)
    at = open_page("results")
    assert list(_table(at)["ID"]) == ["r0", "r1", "r2"]
    datasets.add_response(seeded.sessions, seeded.responses[0].dataset_id, "answer 3",
                          query="question 3", external_id="r3", actor=ADMIN)
    time.sleep(2.1)  # the stamp's TTL
    at.run()
    assert not at.exception
    table = _table(at)
    assert list(table["ID"]) == ["r0", "r1", "r2", "r3"]
    assert table[RUN_A].isna()[3]  # not graded by the runs
