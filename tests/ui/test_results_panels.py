"""AppTest checks of panels on the Results page: combined from the runs shown, a score column
like a run's with ties flagged, and the panel's verdicts in the response dialog."""

from __future__ import annotations

import pytest

from grading.types import ScoringSettings
from storage.services import datasets, panels, reviews
from tests.actors import ADMIN
from tests.ui.pages import open_page, texts, unescape
from tests.ui.seed import seed_graded
from ui import results_readers as readers


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _results(name: str = "Ada"):
    at = open_page("results")
    at.session_state["reviewer_name"] = name
    return at.run()


def _create_button(at):
    """The dialog's submit button, after opening the dialog."""
    at.button(key="results_combine").click().run()
    return next(b for b in at.button if b.label == "Create panel")


def test_combine_as_a_panel_on_results_adds_its_column_with_ties_flagged():
    seeded = seed_graded(3)
    at = _results()
    assert not at.exception, at.exception
    assert "Panels to compare" not in [m.label for m in at.multiselect]
    _create_button(at).click().run()
    assert not at.exception, at.exception
    [panel] = panels.list_panels(seeded.sessions)
    assert [m.run.id for m in panel.members] == [r.id for r in seeded.runs]
    assert panel.rule == "majority"
    assert f"Created {panel.label}" in texts(at)
    picker = next(m for m in at.multiselect if m.label == "Panels to compare")
    assert picker.value == [panel.id]
    assert not [b for b in at.button if b.label == "Create panel"]  # the dialog closed
    table = at.dataframe[0].value
    column = f"P{panel.id} majority"
    assert list(table.columns).index(column) == list(table.columns).index("Flags") - 1
    # r0 both MET but harmful UNMET; r1 'cites' MET vs UNMET: a tie, undecided (grading.ties;
    # changed deliberately: it went to UNMET); r2 the second judge failed on 'concise': one
    # MET of two is no majority, the panel abstains there. CANNOT_ASSESS is skipped.
    assert list(table[column]) == pytest.approx([1.0, 1.0, 1.0])
    assert list(table["Flags"]) == ["", "≠ verdicts ⚖ tie", "⚠ failed"]


def test_the_panels_column_is_effective_people_replace_its_verdict():
    seeded = seed_graded(3)
    panel = panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                                rule="majority", actor=ADMIN)
    cites = seeded.version.criteria[1]
    reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[1].id,
                              criterion_id=cites.id, verdict="MET", actor=ADMIN)
    at = _results()
    at.multiselect(key="results_panel_ids").set_value([panel.id]).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert table[f"P{panel.id} majority"][1] == pytest.approx(1.0)


def test_the_response_dialog_shows_the_panels_verdicts_how_and_its_members():
    seeded = seed_graded(3)
    panel = panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                                rule="majority", actor=ADMIN, name="pair")
    at = _results()
    at.multiselect(key="results_panel_ids").set_value([panel.id]).run()
    at.session_state["results_open_response"] = seeded.responses[1].id
    at.session_state["results_dialog_pending"] = True
    at.run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert " · 1 ties" in shown
    frame = next(f.value for f in at.dataframe if "How" in f.value.columns)
    cites = frame[frame["Criterion"] == "cites"].iloc[0]
    assert cites["Panel"] == "CANNOT_ASSESS"
    assert cites["How"] == "tie (MET 1, UNMET 1, abstained 0): undecided, CANNOT_ASSESS"
    assert (cites[f"#{seeded.runs[0].id} judge-a"],
            cites[f"#{seeded.runs[1].id} judge-b"]) == ("MET", "UNMET")


def test_weights_that_are_not_numbers_are_refused_and_nothing_is_made():
    seeded = seed_graded(3)
    at = _results()
    at.button(key="results_combine").click().run()
    rule = next(s for s in at.selectbox if s.label == "Rule")
    rule.set_value("weighted")
    next(t for t in at.text_input if t.label == "Weights (weighted rule only)").set_value(
        "two, one")
    next(b for b in at.button if b.label == "Create panel").click().run()
    assert "Weights must be numbers" in texts(at)
    assert panels.list_panels(seeded.sessions) == []


def _stale_dialog(refresh_lists: bool):
    """The dialog is open; another tab deletes the dataset (with the member runs); then the
    first submits. ``refresh_lists``: the page's cached run list has caught up by then."""
    seeded = seed_graded(3)
    at = _results()
    create = _create_button(at)
    datasets.delete_dataset(seeded.sessions, seeded.responses[0].dataset_id, confirm=True,
                            actor=ADMIN)
    if refresh_lists:
        readers.get_runs.clear()
        readers.get_result_sets.clear()
    create.click().run()
    assert not at.exception, at.exception
    assert panels.list_panels(seeded.sessions) == []
    return texts(at), ", ".join(f"#{r.id}" for r in seeded.runs)


def test_a_stale_combine_dialog_names_the_deleted_runs_and_makes_nothing():
    shown, missing = _stale_dialog(refresh_lists=True)
    assert f"Runs {missing} no longer exist: deleted (with their dataset or rubric)" in shown
    assert "No panel was made; pick the runs again" in shown


def test_a_stale_dialog_over_a_stale_run_list_is_refused_by_the_service_naming_the_runs():
    shown, missing = _stale_dialog(refresh_lists=False)
    assert f"runs {missing} no longer exist" in shown.replace("Runs", "runs")
    assert "Traceback" not in shown


def _with_panel():
    """A majority panel whose undecided verdicts count as zero: its r1 tie on 'cites' makes
    12.5 of 17.5, r2's abstention on 'concise' 15 of 17.5, r0 1."""
    seeded = seed_graded(3)
    panel = panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                                rule="majority", actor=ADMIN,
                                scoring=ScoringSettings(cannot_assess="zero"))
    at = _results()
    at.multiselect(key="results_panel_ids").set_value([panel.id]).run()
    assert not at.exception, at.exception
    return seeded, panel, at


def _ids(at) -> list[str]:
    return list(at.dataframe[0].value["ID"])


def test_the_score_range_can_apply_to_a_panel():
    _seeded, panel, at = _with_panel()
    applies = at.selectbox(key="results_score_run")
    assert any(o.endswith("(judge panel)") and f"Panel P{panel.id}" in o
               for o in applies.options)
    assert applies.options[0] == "any selected run or panel"
    applies.set_value(f"panel:{panel.id}").run()
    at.slider(key="results_score_range").set_value((0.6, 0.8)).run()
    assert not at.exception, at.exception
    assert _ids(at) == ["r1"]  # the panel's tie on 'cites': 12.5 of 17.5


def test_sorting_by_a_panels_score():
    _seeded, panel, at = _with_panel()
    at.selectbox(key="results_sort").set_value("score").run()
    at.selectbox(key="results_sort_run").set_value(f"panel:{panel.id}").run()
    assert not at.exception, at.exception
    assert _ids(at)[0] == "r1"  # the panel's lowest score first
    column = list(at.dataframe[0].value[f"P{panel.id} majority"])
    assert column == sorted(column)


def test_a_criterions_verdict_filter_can_read_the_panel():
    seeded, panel, at = _with_panel()
    cites = seeded.version.criteria[1]
    at.selectbox(key="results_verdict_criterion").set_value(cites.id).run()
    at.selectbox(key="results_verdict_value").set_value("CANNOT_ASSESS").run()
    at.selectbox(key="results_verdict_run").set_value(f"panel:{panel.id}").run()
    assert not at.exception, at.exception
    assert _ids(at) == ["r1"]


def test_the_panels_histogram_is_next_to_the_runs():
    _seeded, panel, at = _with_panel()
    charts = at.get("vega_lite_chart")
    titles = [str(c.proto.spec) for c in charts]
    assert len(charts) == 3  # two runs and the panel
    assert sum(f"Panel P{panel.id} majority" in t for t in titles) == 1


def test_grade_these_sends_exactly_the_responses_a_panel_filter_shows():
    seeded, panel, at = _with_panel()
    at.selectbox(key="results_score_run").set_value(f"panel:{panel.id}").run()
    at.slider(key="results_score_range").set_value((0.6, 0.8)).run()
    at.button(key="results_grade_these").click().run()
    assert not at.exception, at.exception
    handoff = at.session_state["grade_handoff"]
    assert handoff.response_ids == (seeded.responses[1].id,)
    assert handoff.description == f"score 0.6–0.8 in panel P{panel.id}"


def test_a_holistic_run_shown_is_left_out_of_the_panel_and_the_dialog_says_why():
    from grading.types import ScoringSettings
    from storage.services import runs
    from tests.storage.helpers import CRITERIA, holistic_report

    seeded = seed_graded(3)
    holistic = runs.create_run(seeded.sessions, rubric_version_id=seeded.version.id,
                               dataset_id=seeded.responses[0].dataset_id,
                               grader="rubric_as_judge", model="openai/judge-h", actor=ADMIN)
    for response in seeded.responses:
        runs.record_grade(seeded.sessions, holistic.id, response.id, holistic_report(
            CRITERIA, 70, ScoringSettings(), response.output))
    at = _results()
    assert holistic.id in at.session_state.results_run_ids  # shown with the others
    _create_button(at)
    assert ("1 holistic run left out: a holistic judge gives one 0-100 score, not a verdict "
            "per criterion, so it cannot vote.") in texts(at)
    members = next(m for m in at.multiselect if m.label == "Member runs")
    assert len(members.options) == 2 and not any("judge-h" in o for o in members.options)
    next(b for b in at.button if b.label == "Create panel").click().run()
    assert not at.exception, at.exception
    [panel] = panels.list_panels(seeded.sessions)
    assert [m.run.id for m in panel.members] == [r.id for r in seeded.runs]


def test_combining_two_runs_by_majority_warns_that_every_disagreement_is_a_tie():
    seed_graded(3)
    at = _results()
    _create_button(at).click().run()
    assert not at.exception, at.exception
    [warning] = [unescape(w.value) for w in at.warning if "tie" in w.value]
    assert "every disagreement between them is a tie" in warning
    assert "it is shown next to the runs" in warning


def test_peoples_score_is_offered_with_a_panel_shown_and_sorts_the_rows():
    seeded, _panel, at = _with_panel()
    assert "People's score" in at.selectbox(key="results_sort").options
    # people answer every criterion of r1 (a high score) and r2 (a low one), none of r0
    for index, verdicts in ((1, "MET MET MET UNMET"), (2, "UNMET UNMET MET UNMET")):
        for criterion, verdict in zip(seeded.version.criteria, verdicts.split(), strict=True):
            reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[index].id,
                                      criterion_id=criterion.id, verdict=verdict, actor=ADMIN)
    at.selectbox(key="results_sort").set_value("people").run()
    assert not at.exception, at.exception
    assert _ids(at) == ["r2", "r1", "r0"]  # lowest people's score first, unscored last


def test_peoples_score_with_a_panel_member_still_grading_says_why_not_a_traceback():
    from storage.services import runs

    seeded = seed_graded(3)
    late = runs.create_run(seeded.sessions, rubric_version_id=seeded.version.id,
                           dataset_id=seeded.responses[0].dataset_id,
                           grader="per_criterion", model="openai/judge-c", actor=ADMIN)
    runs.start_run(seeded.sessions, late.id, worker="test")
    panel = panels.create_panel(seeded.sessions,
                                run_ids=[*(r.id for r in seeded.runs), late.id],
                                rule="majority", actor=ADMIN)
    at = _results()
    at.multiselect(key="results_panel_ids").set_value([panel.id]).run()
    assert not at.exception, at.exception
    at.selectbox(key="results_sort").set_value("people").run()
    assert not at.exception, at.exception
    shown = unescape(texts(at))
    assert "sorting by people's score waits until the judge panels shown have finished" \
        in shown
    assert "sort by another column" in shown
    assert "Traceback" not in shown
    # the sort can be changed back from the page that said so
    at.selectbox(key="results_sort").set_value("response").run()
    assert not at.exception, at.exception
    assert _ids(at) == ["r0", "r1", "r2"]
