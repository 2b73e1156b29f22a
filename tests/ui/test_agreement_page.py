"""AppTest checks of the Agreement page: empty state, seeded comparison, downloads (its verdict
import: test_agreement_import.py)."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from grading.types import ScoringSettings, Verdict
from storage.services import datasets, reviews, rubrics, runs
from tests.actors import ADMIN
from tests.storage.agreement_seed import seed
from tests.storage.helpers import CRITERIA, judge_report
from tests.ui.pages import agreement_tab, unescape
from ui.agreement_text import TABS

APP = str(Path(__file__).resolve().parents[2] / "ui" / "app.py")


def _open(at: AppTest | None = None) -> AppTest:
    at = at or AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("app_pages/agreement.py")
    return at.run()


def _markdown(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown + at.caption + at.info)


def test_empty_database_says_what_to_do(sessions):
    at = _open()
    assert not at.exception
    assert at.title[0].value == "Agreement"
    assert "Grade this dataset with at least two runs" in at.info[0].value


def test_seeded_page_shows_the_matrix_the_criteria_and_the_judges(sessions):
    seeded = seed(sessions)
    at = _open()
    assert not at.exception, at.exception
    assert at.selectbox(key="agreement_set").value == (
        f"{seeded.dataset.id}:{seeded.version.id}")
    # One section at a time: the criteria first, each other section in its own tab.
    assert [t.label for t in at.tabs] == list(TABS)
    headers = [h.value for h in at.subheader]
    assert headers == ["Cohen's κ between sources", "Per criterion, worst first"]
    # Human vs the cheap judge is compared by default; its table is sorted worst first.
    assert at.selectbox(key="agreement_pair").value == f"human|run:{seeded.cheap.id}"
    criteria = at.dataframe[0].value
    kappas = [float(k) for k in criteria["κ"] if k != "—"]
    assert kappas == sorted(kappas) and len(kappas) >= 2
    assert set(criteria["Criterion"]) == {"accurate", "cites", "concise", "harmful"}
    assert list(criteria["Pairs used"]) and "Note" in criteria.columns
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Verdict sources"] == "3"
    assert metrics["Fully reviewed"] == "4"
    for tab, shown in (("Confusion matrices", ["Confusion matrices"]),
                       ("Human baseline", ["Human baseline"]),
                       ("Trust a judge", ["How far to trust this judge"]),
                       ("Judges and cost", ["Judge score vs human score",
                                            "Judges: agreement next to cost"])):
        assert [h.value for h in agreement_tab(at, tab).subheader] == shown, tab
    judges = next(d.value for d in at.dataframe if "Judge" in d.value.columns)
    assert list(judges["Judge"]) == [
        f"#{seeded.cheap.id} · per-criterion · openai/mini-judge",
        f"#{seeded.strong.id} · one-shot · openai/big-judge",
        f"#{seeded.holistic.id} · rubric-as-judge · openai/mini-judge"]
    assert list(judges["Cost / grade"]) == ["$0.0004", "$0.0090", "unknown"]
    assert any(unescape(c.value).endswith(
        "rubric-as-judge · openai/mini-judge: holistic: scores only")
               for c in at.caption)


def test_disagreement_examples_list_the_responses_and_reasons(sessions):
    seeded = seed(sessions)
    at = _open()
    at.selectbox(key="agreement_criterion").set_value(seeded.version.criteria[1].id).run()
    assert not at.exception
    examples = at.dataframe[1].value
    assert list(examples["Response"]) == ["r3", "r4"]
    assert "checked r3" in set(examples[next(c for c in examples.columns if c.startswith("Why"))])


def test_a_long_disagreement_list_shows_its_first_items_and_says_how_many(sessions,
                                                                        monkeypatch):
    from ui import agreement_criteria

    seeded = seed(sessions)
    at = _open()
    at.selectbox(key="agreement_criterion").set_value(seeded.version.criteria[1].id).run()
    assert not any("responses where they disagree" in c.value for c in at.caption)
    monkeypatch.setattr(agreement_criteria, "LISTED", 1)  # the page lists 500 at most
    at.run()
    assert not at.exception
    assert list(at.dataframe[1].value["Response"]) == ["r3"]  # the first of r3, r4
    assert any("The first 1 of 2 responses where they disagree" in c.value
               for c in at.caption)
    assert at.selectbox(key="agreement_open_response").options == ["r3"]


def test_all_sources_view_ranks_criteria_by_alpha(sessions):
    seed(sessions)
    at = _open()
    at.selectbox(key="agreement_pair").set_value("all").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert "α" in table.columns and "Units" in table.columns
    # the same comparison on the confusion matrices' tab: no pair, so none drawn
    at = agreement_tab(at, "Confusion matrices")
    assert at.selectbox(key="agreement_pair").value == "all"
    assert any("Pick two sources" in c.value for c in at.caption)


def test_download_buttons_are_offered(sessions):
    seed(sessions)
    at = agreement_tab(_open(), "Labels and pairwise")
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Download gold set (JSONL)", "Download training set (JSONL)",
                      "Download the verdict sheet (CSV)"]


def test_a_disagreement_opens_on_the_results_page(sessions):
    seeded = seed(sessions)
    at = _open()
    at.selectbox(key="agreement_criterion").set_value(seeded.version.criteria[1].id).run()
    r4 = seeded.responses["r4"].id
    at.selectbox(key="agreement_open_response").set_value(r4).run()
    next(b for b in at.button if b.label == "Open in Results").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Results"
    assert at.session_state["results_open_response"] == r4
    assert at.session_state["results_run_ids"] == [seeded.cheap.id]
    assert [d.proto.dialog.title for d in at.get("dialog")] == ["Response r4"]


def test_a_disagreement_opens_in_review(sessions):
    seeded = seed(sessions)
    at = _open()
    # The first disagreement listed is r2 (criterion "harmful", worst first).
    assert seeded.responses["r2"].id == at.session_state["agreement_open_response"]
    next(b for b in at.button if b.label == "Review it").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Review"
    # The Review page consumes review_response_id and opens that response in its queue.
    assert any("of 6** · r2 ·" in m.value for m in at.markdown)


def test_one_run_without_reviews_explains_what_is_missing(sessions):
    version = rubrics.create_rubric(sessions, "Solo", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "One", responses=[{"id": "a", "text": "t"}],
                                      actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id)
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/solo", actor=ADMIN)
    runs.record_grade(sessions, run.id, response.id, judge_report(
        CRITERIA, [Verdict.MET] * 4, ScoringSettings(), "t"))
    at = _open()
    assert not at.exception, at.exception
    assert any(i.value.startswith("Fewer than two sources") for i in at.info)
    at = agreement_tab(at, "Judges and cost")
    infos = [i.value for i in at.info]
    assert any("No response has a human score yet" in i for i in infos)
    assert any(unescape(c.value).endswith("openai/solo: no human verdicts yet")
               for c in at.caption)


def test_charts_are_drawn_with_seeded_data(sessions):
    seed(sessions)
    at = _open()
    assert len(at.get("vega_lite_chart")) == 1  # the kappa matrix
    assert len(agreement_tab(at, "Confusion matrices").get("vega_lite_chart")) == 5
    # the score scatter and cost vs agreement
    assert len(agreement_tab(at, "Judges and cost").get("vega_lite_chart")) == 2


def test_the_human_baseline_section_shows_reviewers_and_judges(sessions):
    from storage.services.reviewers import local_actor

    seeded = seed(sessions)  # ana reviewed r0-r4; bo reviews r0-r2 too, differing once
    for key in ("r0", "r1", "r2"):
        for criterion in seeded.version.criteria:
            current = reviews.current_verdicts(sessions, seeded.responses[key].id,
                                               seeded.version.id).get(criterion.id)
            verdict = current.verdict.value if current else "MET"
            if key == "r2" and criterion.name == "cites":
                verdict = "UNMET" if verdict == "MET" else "MET"
            reviews.set_human_verdict(sessions, actor=local_actor("bo"),
                                      response_id=seeded.responses[key].id,
                                      criterion_id=criterion.id, verdict=verdict)
    at = agreement_tab(_open(), "Human baseline")
    table = next(d.value for d in at.dataframe if "Among reviewers" in d.value.columns)
    assert list(table["Criterion"]) == ["accurate", "cites", "concise", "harmful"]
    assert set(table["Reviewers"]) == {2}
    people = next(d.value for d in at.dataframe if "Reviewer" in d.value.columns)
    assert set(people["Reviewer"]) == {"ana", "bo"}
    assert any("the people's macro-F1" in t.value for t in at.text)
    # per criterion, plainly: each judge's position is shown under the criterion's name
    positions = [m.value for m in at.markdown if "the people]" in m.value
                 or "can't tell yet]" in m.value or "no baseline]" in m.value]
    named = [p.rsplit("**", 2)[1] for p in positions]
    assert list(dict.fromkeys(named)) == ["accurate", "cites", "concise", "harmful"]
    assert len({named.count(label) for label in named}) == 1  # every judge on every one


def test_confusion_cells_without_pairs_are_drawn_empty(sessions):
    """Issue 9 item 11: n=0 cells were filled with the scale's colour, reading as counts."""
    import json

    seed(sessions)
    at = agreement_tab(_open(), "Confusion matrices")
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    matrices = [spec for spec in specs if "(n=" in str(spec.get("title", ""))]
    assert len(matrices) == 5
    for spec in matrices:
        rect = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "rect")
        color = rect["encoding"]["color"]
        # Filled only where there are pairs; an empty cell is white with an outline.
        assert color["condition"]["test"] == "(datum.count > 0)"
        assert color["value"] == "white" and rect["mark"]["stroke"] != "white"


def test_every_human_baseline_figure_shows_its_interval_and_n(sessions):
    from storage.services.reviewers import local_actor

    seeded = seed(sessions)  # ana reviewed r0-r4; bo reviews them too, differing on two
    for key in ("r0", "r1", "r2", "r3", "r4"):
        for criterion in seeded.version.criteria:
            current = reviews.current_verdicts(sessions, seeded.responses[key].id,
                                               seeded.version.id).get(criterion.id)
            verdict = current.verdict.value if current else "MET"
            if key in ("r2", "r4") and criterion.name == "cites":
                verdict = "UNMET" if verdict == "MET" else "MET"
            reviews.set_human_verdict(sessions, actor=local_actor("bo"),
                                      response_id=seeded.responses[key].id,
                                      criterion_id=criterion.id, verdict=verdict)
    at = agreement_tab(_open(), "Human baseline")
    table = next(d.value for d in at.dataframe if "Among reviewers" in d.value.columns)
    [cites] = [r for _, r in table.iterrows() if r["Criterion"] == "cites"]
    # "κ 0.17 [-0.67, 1.00] (n=5)": the figure, its 95% interval, n
    interval = r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\] \(n=\d+\)"
    assert re.fullmatch(r"κ " + interval, cites["Among reviewers"]), cites["Among reviewers"]
    assert re.fullmatch(r"\d+% \[\d+%, \d+%\] \(n=\d+\)", cites["Percent agreement"])
    judged = [c for c in table.columns if c.endswith("vs human")]
    assert judged and all(re.fullmatch(interval, cites[c]) or cites[c].startswith("—")
                          for c in judged)
    assert any(re.fullmatch(interval, cites[c]) for c in judged)
    # the people's own figures as they are (two reviewers: one number, each with its
    # interval), and each judge against the people: the n behind them too
    assert re.fullmatch(r"\d\.\d\d \[\d\.\d\d, \d\.\d\d\] \(each of 2 reviewers, n=\d+\)",
                        cites["People's macro-F1"]), cites["People's macro-F1"]
    against_people = [c for c in table.columns if c.endswith("vs people")]
    assert against_people and all(re.fullmatch(interval, cites[c]) or
                                  re.fullmatch(r"-?\d\.\d\d \(n=\d+\)", cites[c])
                                  for c in against_people)
    sentences = [t.value for t in at.text if "the people's macro-F1" in t.value]
    assert sentences and all(re.search(r"the people's macro-F1: [^(]*\([^)]*n=\d+", s)
                             for s in sentences), sentences
    # five responses: no judge is called above or below the people; where they differ
    # ('cites'), the page says it can't tell yet and about how many responses would tell
    assert not any("above the people" in s or "below the people" in s for s in sentences)
    assert any("can't tell yet" in s and re.search(r"need about \d+ reviewed", s)
               for s in sentences), sentences
    people = next(d.value for d in at.dataframe if "Reviewer" in d.value.columns)
    assert all(re.fullmatch(r"\d+% \[\d+%, \d+%\] \(n=\d+\)", v)
               for v in people["Agreement with the final verdict"])
    assert all(re.search(r"\(n=\d+\)$", v) for v in people["κ with the final verdict"])


def test_an_unknown_reviewer_is_refused_until_new_reviewers_may_be_created(sessions):
    seeded = seed(sessions)
    at = agreement_tab(_open(), "Labels and pairwise")
    at.session_state.reviewer_name = "lead"
    sheet = b"response_id,criterion,verdict,reviewer\nr5,cites,met,BO\nr5,accurate,met,zed\n"
    at.file_uploader(key="agreement_import_file_0").upload("verdicts.csv", sheet, "text/csv")
    next(b for b in at.button if b.label == "Import verdicts").click().run()
    [error] = at.error
    shown = unescape(error.value)
    assert shown.startswith("Nothing was imported")
    assert "'zed' is not a known reviewer" in shown and "BO" not in shown
    assert reviews.current_verdicts(sessions, seeded.responses["r5"].id,
                                    seeded.version.id) == {}
    at.checkbox(key="agreement_import_create").check().run()
    at.file_uploader(key="agreement_import_file_0").upload("verdicts.csv", sheet, "text/csv")
    next(b for b in at.button if b.label == "Import verdicts").click().run()
    assert not at.exception
    assert "new reviewers: zed" in unescape(at.success[0].value)
    current = reviews.current_verdicts(sessions, seeded.responses["r5"].id, seeded.version.id)
    assert sorted(v.reviewer for v in current.values()) == ["bo", "zed"]  # BO is bo


def test_the_compared_pair_and_criterion_are_in_the_url_and_a_link_shows_them(sessions):
    seeded = seed(sessions)
    at = _open()
    criterion = seeded.version.criteria[1].id
    at.selectbox(key="agreement_pair").set_value("all").run()
    at.selectbox(key="agreement_criterion").set_value(criterion).run()
    # another section: the criterion picked on the first one stays picked (and linked)
    at = agreement_tab(at, "Confusion matrices")
    assert at.selectbox(key="agreement_pair").value == "all"
    params = {key: at.query_params[key] for key in at.query_params}
    assert params["compare"] == "all" and params["criterion"] == str(criterion)
    assert params["section"] == "Confusion matrices"
    agreement_tab(at, "Human baseline")  # a run where neither picker is drawn
    at = agreement_tab(at, "Criteria")
    assert at.selectbox(key="agreement_pair").value == "all"
    assert at.selectbox(key="agreement_criterion").value == criterion
    at = agreement_tab(at, "Confusion matrices")
    params = {key: at.query_params[key] for key in at.query_params}
    # back from another page: the same view, its section open
    at.switch_page("app_pages/rubrics.py").run()
    at.switch_page("app_pages/agreement.py").run()
    assert at.session_state["agreement_tab"] == "Confusion matrices"
    assert [h.value for h in at.subheader] == ["Confusion matrices"]
    at = agreement_tab(at, "Criteria")
    assert at.selectbox(key="agreement_pair").value == "all"
    assert at.selectbox(key="agreement_criterion").value == criterion
    # a link (or a reload) in a new session; a stale comparison falls back with no traceback
    link = AppTest.from_file(APP, default_timeout=60)
    for key, value in {**params, "criterion": "x"}.items():
        link.query_params[key] = value[0] if isinstance(value, list) else value
    link.switch_page("app_pages/agreement.py").run()
    assert not link.exception, link.exception
    assert link.session_state["agreement_tab"] == "Confusion matrices"
    assert link.selectbox(key="agreement_pair").value == "all"
    assert "could not be read" in unescape(
        "\n".join(w.value for w in link.warning))
    # an old link naming a section the page no longer has: the first one, and a note
    old = AppTest.from_file(APP, default_timeout=60)
    old.query_params["section"] = "Everything"
    old.switch_page("app_pages/agreement.py").run()
    assert not old.exception, old.exception
    assert old.session_state["agreement_tab"] == "Criteria"
    assert [h.value for h in old.subheader] == ["Cohen's κ between sources",
                                                "Per criterion, worst first"]
    assert "section “Everything” could not be read" in unescape(
        "\n".join(w.value for w in old.warning))


def test_open_in_results_shows_the_disagreement_not_the_view_results_was_left_with(sessions):
    seeded = seed(sessions)
    at = _open()
    at.switch_page("app_pages/results.py").run()
    at.checkbox(key="results_failed_only").check().run()
    at.switch_page("app_pages/agreement.py").run()
    at.selectbox(key="agreement_criterion").set_value(seeded.version.criteria[1].id).run()
    r4 = seeded.responses["r4"].id
    at.selectbox(key="agreement_open_response").set_value(r4).run()
    next(b for b in at.button if b.label == "Open in Results").click().run()
    assert not at.exception, at.exception
    assert at.checkbox(key="results_failed_only").value is False
    assert [d.proto.dialog.title for d in at.get("dialog")] == ["Response r4"]


def _specs(at: AppTest) -> list[dict]:
    import json
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


def _marks(spec: dict) -> list[str]:
    layers = spec.get("layer", [spec])
    return [layer["mark"] if isinstance(layer["mark"], str) else layer["mark"]["type"]
            for layer in layers]


def test_chart_labels_cannot_run_into_each_other(sessions):
    seed(sessions)
    at = _open()
    specs = _specs(at)
    # the κ matrix: its column labels (long source names) are slanted, not side by side
    matrix = specs[0]
    x_axis = matrix["layer"][0]["encoding"]["x"]["axis"]
    assert x_axis["labelAngle"] != 0 and x_axis["labelAlign"] == "left"
    assert x_axis["labelOverlap"] is False  # every source named, none hidden by Vega
    # its colour scale is no taller than the matrix (3 sources), so "-1" is not cut off
    legend = matrix["layer"][1]["encoding"]["color"]["legend"]
    assert legend["gradientLength"] <= 3 * 45
    # cost vs agreement: judges are named in a legend, never as text beside the points
    specs = _specs(agreement_tab(at, "Judges and cost"))
    cost = next(s for s in specs if s.get("title") == "Cheaper and as good is top left")
    assert "text" not in _marks(cost)
    assert cost["encoding"]["color"]["legend"]["orient"] == "right"
