"""AppTest: the Responses page — datasets, pasting, uploads with mapping, problems, browsing."""

from __future__ import annotations

import json

import pytest

from grading.types import Criterion
from storage.services import datasets, rubrics
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.ui.pages import SAMPLES, db, frame_with, frames, open_page, texts, unescape

SAMPLE_CSV = (SAMPLES / "sample_responses.csv").read_bytes()


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _dataset(name="Replies", rows=()):
    return datasets.create_dataset(db(), name, responses=list(rows), actor=ADMIN)


def _click(at, label):
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception


def _upload(at, name, data, mime="text/csv"):
    at.get("file_uploader")[0].upload(name, data, mime).run()
    assert not at.exception, at.exception


def _responses(dataset_id):
    return datasets.list_responses(db(), dataset_id, limit=None)


def _into(at, dataset):
    """Pick an existing dataset as the upload's target (a new one is the default)."""
    at.selectbox(key="responses_target_responses_map_0").set_value(dataset.id).run()


def test_empty_state_offers_to_create_or_upload():
    at = open_page("responses")
    assert "No datasets yet" in texts(at)
    assert "Upload a file" in [s.value for s in at.subheader]


def test_create_a_dataset():
    at = open_page("responses")
    at.text_input[0].input("November replies")
    _click(at, "Create dataset")
    [info] = datasets.list_datasets(db())
    assert info.name == "November replies"
    assert at.selectbox(key="responses_dataset_id").value == info.id
    assert "This dataset is empty" in texts(at)


def test_paste_one_response_with_thinking_and_id():
    dataset = _dataset()
    at = open_page("responses")
    query, output, thinking = at.text_area[0], at.text_area[1], at.text_area[2]
    query.input("Where is my refund?")
    output.input("Refunds take 5 to 7 business days.")
    thinking.input("The user wants a time frame.")
    next(t for t in at.text_input if t.label == "ID (optional)").input("r-1")
    _click(at, "Add response")
    [response] = _responses(dataset.id)
    assert (response.external_id, response.query, response.output, response.thinking) == (
        "r-1", "Where is my refund?", "Refunds take 5 to 7 business days.",
        "The user wants a time frame.")
    assert "Added the response as 'r-1'" in texts(at)


def test_pasting_an_empty_response_says_so_and_writes_nothing():
    dataset = _dataset()
    at = open_page("responses")
    at.text_area[0].input("A question")
    _click(at, "Add response")
    assert "The response text is empty" in texts(at)
    assert _responses(dataset.id) == []


def test_pasting_a_taken_id_is_refused_with_the_reason():
    dataset = _dataset(rows=[{"id": "r-1", "text": "first"}])
    at = open_page("responses")
    at.text_area[1].input("second")
    next(t for t in at.text_input if t.label == "ID (optional)").input("r-1")
    _click(at, "Add response")
    assert "id 'r-1' is already in this dataset" in " ".join(
        frames(at)[-1]["Problem"].tolist())
    assert len(_responses(dataset.id)) == 1


def test_upload_a_valid_csv_previews_then_imports_into_a_dataset_picked_by_the_user():
    dataset = _dataset()
    at = open_page("responses")
    _upload(at, "sample_responses.csv", SAMPLE_CSV)
    assert "sample_responses.csv: 4 rows, CSV" in texts(at)
    assert "All 4 rows are valid." in texts(at)
    assert at.selectbox(key="responses_map_0_text").value == "response"
    assert at.selectbox(key="responses_map_0_query").value == "query"
    assert at.selectbox(key="responses_map_0_id").value == "id"
    assert _responses(dataset.id) == []  # nothing before the import button
    _into(at, dataset)
    _click(at, "Import 4 responses")
    stored = _responses(dataset.id)
    assert [r.external_id for r in stored] == ["r1", "r2", "r3", "r4"]
    assert stored[0].query.startswith("I returned my shoes")
    assert "Imported 4 responses from sample_responses.csv into 'Replies'" in texts(at)


def test_an_invalid_csv_lists_row_numbers_and_writes_nothing():
    dataset = _dataset()
    data = (b"id,query,response\n"
            b"a,q1,fine\n"
            b"b,q2,\n"
            b"a,q3,duplicate id\n"
            b"c,q4,too,many\n")
    at = open_page("responses")
    _upload(at, "bad.csv", data)
    shown = texts(at)
    assert "Nothing was written: bad.csv has" in shown
    problems = frames(at)[-1]
    # A malformed row is a file problem: reported before any row is validated.
    assert problems.to_dict("records") == [
        {"Where": "row 4 (line 5)", "Problem": "4 values but the header has 3 columns"}]
    assert not [b for b in at.button if b.label.startswith("Import ")]
    assert _responses(dataset.id) == []


def test_row_problems_are_listed_by_row_and_line_before_any_import():
    dataset = _dataset()
    data = b"id,query,response\na,q1,fine\nb,q2,\na,q3,duplicate id\n"
    at = open_page("responses")
    _upload(at, "rows.csv", data)
    problems = frames(at)[-1].to_dict("records")
    assert problems == [
        {"Where": "row 2 (line 3)", "Problem": "the text column 'response' is empty"},
        {"Where": "row 3 (line 4)", "Problem": "id 'a' is already used by row 1 (line 2)"},
    ]
    assert not [b for b in at.button if b.label.startswith("Import ")]
    assert _responses(dataset.id) == []


def test_a_latin1_file_is_explained_as_not_utf8():
    _dataset()
    at = open_page("responses")
    _upload(at, "excel.csv", "id,response\n1,Café crème déjà vu\n".encode("latin-1"))
    shown = texts(at) + " ".join(frames(at)[-1]["Problem"].tolist())
    assert "not UTF-8" in shown
    assert "save it as 'CSV UTF-8'" in shown


def test_column_mapping_can_be_changed_and_unmapped_columns_become_metadata():
    dataset = _dataset()
    data = b"prompt,answer_a,answer_b,model\nq,first answer,second answer,m1\n"
    at = open_page("responses")
    _upload(at, "pairs.csv", data)
    # the longer answer is guessed as the text, the prompt as the query
    assert at.selectbox(key="responses_map_0_text").value == "answer_b"
    assert at.selectbox(key="responses_map_0_query").value == "prompt"
    at.selectbox(key="responses_map_0_text").set_value("answer_b").run()
    at.selectbox(key="responses_map_0_query").set_value("prompt").run()
    assert "Kept as metadata: answer_a, model" in texts(at)
    _into(at, dataset)
    _click(at, "Import 1 response")
    [response] = _responses(dataset.id)
    assert (response.output, response.query) == ("second answer", "q")
    assert response.metadata == {"answer_a": "first answer", "model": "m1"}


def test_an_item_id_column_is_guessed_as_the_id_and_the_preview_shows_the_answers():
    """``item id, prompt, answer text, ...``: the id was guessed as the response text and
    "All 60 rows are valid" was said of 60 ids."""
    lines = ["item id,prompt,answer text,model"]
    lines += [f"it-{i:03d},question {i}?,\"The answer to question {i}, in full.\",m1"
              for i in range(60)]
    at = open_page("responses")
    _upload(at, "items.csv", ("\n".join(lines) + "\n").encode())
    assert at.selectbox(key="responses_map_0_text").value == "answer text"
    assert at.selectbox(key="responses_map_0_query").value == "prompt"
    assert at.selectbox(key="responses_map_0_id").value == "item id"
    shown = texts(at)
    assert "The first 8 rows as they will be imported with this mapping:" in shown
    preview = frame_with(at, "Response")
    assert list(preview["ID"][:2]) == ["it-000", "it-001"]
    assert preview["Response"][0].startswith("The answer to question 0")
    assert "holds short unique values, like ids" not in shown
    # picked by hand anyway: the page asks whether the ids really are the answers
    at.selectbox(key="responses_map_0_id").set_value("(none)").run()
    at.selectbox(key="responses_map_0_text").set_value("item id").run()
    assert ("The response text column 'item id' holds short unique values, like ids"
            in texts(at))


def test_the_same_column_twice_is_refused():
    _dataset()
    at = open_page("responses")
    _upload(at, "s.csv", SAMPLE_CSV)
    at.selectbox(key="responses_map_0_query").set_value("response").run()
    assert "Each column can be used once" in texts(at)


def test_jsonl_upload_into_a_new_dataset_named_after_the_file():
    lines = [json.dumps({"id": f"j{i}", "prompt": "q", "output": f"answer {i}",
                         "reasoning": "because"}) for i in range(3)]
    at = open_page("responses")
    _upload(at, "batch.jsonl", "\n".join(lines).encode(), "application/jsonl")
    assert at.selectbox(key="responses_map_0_thinking").value == "reasoning"
    _click(at, "Import 3 responses")
    [info] = datasets.list_datasets(db())
    assert (info.name, info.response_count) == ("batch", 3)
    assert _responses(info.id)[0].thinking == "because"


def test_ids_already_in_the_dataset_refuse_the_whole_upload():
    dataset = _dataset(rows=[{"id": "r2", "text": "already here"}])
    at = open_page("responses")
    _upload(at, "sample_responses.csv", SAMPLE_CSV)
    _into(at, dataset)
    _click(at, "Import 4 responses")
    assert "id 'r2' is already in this dataset" in " ".join(frames(at)[-1]["Problem"].tolist())
    assert len(_responses(dataset.id)) == 1


def test_invalid_json_names_the_line():
    _dataset()
    at = open_page("responses")
    _upload(at, "broken.json", b'[\n{"text": "a"},\n{"text": }\n]', "application/json")
    assert frames(at)[-1]["Where"].tolist() == ["line 3, column 10"]


def test_an_upload_goes_into_a_new_dataset_named_after_the_file_by_default():
    """Issue 9: the target was whichever dataset happened to be open."""
    opened = _dataset()
    at = open_page("responses")
    _upload(at, "support-march.csv", SAMPLE_CSV)
    assert at.selectbox(key="responses_target_responses_map_0").value == 0
    assert at.text_input(key="responses_new_name_responses_map_0").value == "support-march"
    _click(at, "Import 4 responses")
    assert _responses(opened.id) == []
    created = next(d for d in datasets.list_datasets(db()) if d.id != opened.id)
    assert (created.name, created.response_count) == ("support-march", 4)


def test_search_and_jump_to_a_page_in_ten_thousand_responses():
    rows = [{"id": f"r{i:05d}", "query": f"question {i}", "text": f"answer number {i}"}
            for i in range(10_000)]
    dataset = _dataset(rows=rows)
    at = open_page("responses")
    assert "Responses 1–15 of 10,000 · page 1 of 667" in texts(at)
    at.number_input(key="responses_jump").set_value(500).run()
    assert not at.exception
    table = frame_with(at, "Thinking")
    assert table["ID"].iloc[0] == "r07485" and table["#"].iloc[0] == 7486
    assert "page 500 of 667" in texts(at)
    at.button(key="responses_next").click().run()
    assert frame_with(at, "Thinking")["ID"].iloc[0] == "r07500"
    at.text_input(key="responses_search").input("number 4242").run()
    table = frame_with(at, "Thinking")
    assert table["ID"].tolist() == ["r04242"]
    assert "Responses 1–1 of 1 matching · page 1 of 1" in texts(at)
    assert "answer number 4242" in [t.value for t in at.text]
    at.text_input(key="responses_search").input("no such words").run()
    assert "No response contains these words" in texts(at)
    assert dataset.response_count == 10_000


def test_browsing_is_paginated_and_shows_text_as_text():
    rows = [{"id": f"r{i:02d}", "text": f"answer {i} <b>not bold</b>", "query": "q"}
            for i in range(1, 31)]
    dataset = _dataset(rows=rows)
    at = open_page("responses")
    table = frame_with(at, "Thinking")
    assert len(table) == 15 and table["ID"].iloc[0] == "r01"
    assert "Responses 1–15 of 30 · page 1 of 2" in texts(at)
    assert "answer 1 <b>not bold</b>" in [t.value for t in at.text]
    at.button(key="responses_next").click().run()
    table = frame_with(at, "Thinking")
    assert table["ID"].tolist() == [f"r{i}" for i in range(16, 31)]
    assert at.button(key="responses_next").disabled
    assert dataset.response_count == 30


def test_archive_hides_a_dataset_and_restore_brings_it_back():
    dataset = _dataset()
    at = open_page("responses")
    at.button(key="responses_archive").click().run()
    assert datasets.list_datasets(db()) == []
    assert "Archived 'Replies'" in texts(at)
    at.toggle(key="responses_show_archived").set_value(True).run()
    at.button(key="responses_restore").click().run()
    assert [d.id for d in datasets.list_datasets(db())] == [dataset.id]


def test_an_uploaded_dataset_is_offered_on_the_grade_page_at_once():
    rubrics.create_rubric(db(), "R", [Criterion(requirement="Is right")], actor=ADMIN)
    at = open_page("grade")  # fills the Grade page's cached dataset list (empty)
    at.switch_page("app_pages/responses.py").run()
    _upload(at, "fresh.csv", SAMPLE_CSV)
    _click(at, "Import 4 responses")
    at.switch_page("app_pages/grade.py").run()
    assert not at.exception
    offered = [option for box in at.selectbox for option in box.options]
    assert any("fresh" in option for option in offered)


def test_a_file_over_the_size_limit_is_refused_with_what_to_do(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_MAX_UPLOAD_MB", "0.01")  # 10 kB
    dataset = _dataset()
    at = open_page("responses")
    big = b"id,response\n" + b"".join(f"r{i},{'x' * 100}\n".encode() for i in range(200))
    _upload(at, "big.csv", big)
    assert "big.csv is 21 kB; the limit is 0.01 MB. Split it into smaller files" in texts(at)
    assert not [b for b in at.button if b.label.startswith("Import ")]
    assert _responses(dataset.id) == []


def test_the_dataset_list_shows_response_counts():
    _dataset("Empty")
    _dataset("Full", rows=[{"text": "a"}, {"text": "b"}])
    at = open_page("responses")
    listed = frame_with(at, "Responses")
    assert dict(zip(listed["Name"], listed["Responses"], strict=True)) == {"Empty": 0, "Full": 2}


def test_names_and_descriptions_are_shown_as_text_not_markup():
    datasets.create_dataset(db(), "**Bold** <b>tag</b> :red[x]",
                            description="[click](http://example.invalid)", actor=ADMIN)
    at = open_page("responses")
    header = at.subheader[0].value
    # Every markup character escaped; a word joiner after each colon so no :shortcode: forms.
    assert header.startswith("\\*\\*Bold\\*\\* \\<b\\>tag\\<\\/b\\> \\:\u2060red\\[x\\]")
    assert unescape(header).startswith("**Bold** <b>tag</b> :red[x]")
    assert ("\\[click\\]\\(http\\:\u2060\\/\\/example\\.invalid\\)"
            in [c.value for c in at.caption])


def test_a_refused_paste_keeps_what_was_typed_and_a_saved_one_clears_the_form():
    _dataset()
    at = open_page("responses")
    at.text_area[0].input("A long question I do not want to type again")
    _click(at, "Add response")
    assert "The response text is empty" in texts(at)
    assert at.text_area[0].value == "A long question I do not want to type again"
    at.text_area[1].input("The answer")
    _click(at, "Add response")
    assert at.text_area[0].value == "" and at.text_area[1].value == ""


def test_delete_needs_a_confirmation_and_removes_the_dataset():
    dataset = _dataset(rows=[{"text": "a"}])
    at = open_page("responses")
    assert at.button(key="responses_delete").disabled
    at.checkbox(key=f"responses_delete_sure_{dataset.id}").check().run()
    at.button(key="responses_delete").click().run()
    assert not at.exception
    assert datasets.list_datasets(db(), include_archived=True) == []
    assert "Deleted 'Replies' with 1 response, 0 grading runs and 0 grades." in texts(at)


def test_a_dataset_with_human_verdicts_offers_only_archiving():
    """Issue 9 item 6: it offered a checkbox and Delete, then refused with library wording."""
    from storage.services.reviews import set_human_verdict

    version = rubrics.create_rubric(db(), "R", [Criterion(requirement="Is right")], actor=ADMIN)
    dataset = _dataset(rows=[{"text": "a"}])
    [response] = _responses(dataset.id)
    set_human_verdict(db(), response_id=response.id, criterion_id=version.criteria[0].id,
                      verdict="MET", actor=local_actor("ana"))
    at = open_page("responses")
    keys = {b.key for b in at.button} | {c.key for c in at.checkbox}
    assert "responses_delete" not in keys
    assert f"responses_delete_sure_{dataset.id}" not in keys
    shown = texts(at)
    assert "has 1 human verdict. People's verdicts are never deleted" in shown
    assert "delete_human_verdicts" not in shown and "=True" not in shown
    at.button(key="responses_archive_instead").click().run()
    assert not at.exception
    [info] = datasets.list_datasets(db(), include_archived=True)
    assert info.archived and len(_responses(dataset.id)) == 1


def test_a_delete_confirmed_before_someone_reviewed_is_refused_and_offers_archiving():
    """The confirmation was drawn and ticked; meanwhile a reviewer saved a verdict in another
    browser. The delete is refused with what to do, nothing is removed, and the next draw
    offers only archiving."""
    from storage.services.reviews import set_human_verdict

    version = rubrics.create_rubric(db(), "R", [Criterion(requirement="Is right")], actor=ADMIN)
    dataset = _dataset(rows=[{"text": "a"}])
    [response] = _responses(dataset.id)
    at = open_page("responses")
    at.checkbox(key=f"responses_delete_sure_{dataset.id}").check().run()
    set_human_verdict(db(), response_id=response.id, criterion_id=version.criteria[0].id,
                      verdict="MET", actor=local_actor("ana"))
    at.button(key="responses_delete").click().run()
    assert not at.exception
    assert ("Not deleted: 'Replies' now has human verdicts, and people's verdicts are never "
            "deleted. Archive it to hide it from lists.") in texts(at)
    assert len(_responses(dataset.id)) == 1
    at.run()
    assert "responses_delete" not in {b.key for b in at.button}
    assert at.button(key="responses_archive_instead")


@pytest.mark.parametrize(("data", "kind"), [
    pytest.param(b"id;query;response\nr1;q;an answer, with a comma\nr2;q2;two\n", "semicolon",
                 id="semicolon"),
    pytest.param(b"id\tquery\tresponse\nr1\tq\tan answer, with a comma\nr2\tq2\ttwo\n", "tab",
                 id="tab"),
])
def test_a_semicolon_or_tab_separated_file_is_detected_and_imports(data, kind):
    dataset = _dataset()
    at = open_page("responses")
    _upload(at, "excel.csv", data)
    assert f"excel.csv: 2 rows, CSV ({kind}-separated)" in texts(at)
    _into(at, dataset)
    _click(at, "Import 2 responses")
    response, _ = _responses(dataset.id)
    assert (response.external_id, response.query, response.output) == (
        "r1", "q", "an answer, with a comma")


def test_a_reference_column_is_guessed_can_be_changed_and_is_stored():
    dataset = _dataset()
    data = (b"id,question,completion,answer,source\n"
            b"a,How much?,Take five milligrams.,5 mg,book\n"
            b"b,How long?,About a week.,7 days,web\n")
    at = open_page("responses")
    _upload(at, "math.csv", data)
    assert at.selectbox(key="responses_map_0_reference").value == "answer"
    assert at.selectbox(key="responses_map_0_text").value == "completion"
    assert "Reference" in frame_with(at, "Reference").columns
    # the user maps another column instead: the guessed one becomes metadata
    at.selectbox(key="responses_map_0_reference").set_value("source").run()
    _into(at, dataset)
    _click(at, "Import 2 responses")
    stored = _responses(dataset.id)
    assert [(r.reference, r.metadata) for r in stored] == [
        ("book", {"answer": "5 mg"}), ("web", {"answer": "7 days"})]


def test_the_delete_confirmation_names_the_judge_panels_that_go_with_the_runs():
    from storage.services import panels
    from tests.storage.helpers import make_rubric, make_run

    dataset = _dataset(rows=[{"text": "a"}])
    version = make_rubric(db())
    run_ids = [make_run(db(), version.id, dataset.id).id for _ in range(2)]
    panels.create_panel(db(), run_ids=run_ids, rule="majority", actor=ADMIN)
    at = open_page("responses")
    assert ("Deletes 'Replies', its 1 response, 2 grading runs, 0 grades and 1 judge panel. "
            "This cannot be undone.") in texts(at)
