"""Datasets and responses: round trips, big texts, ids, all-or-nothing imports, delete rules."""

from __future__ import annotations

import pytest

from storage.errors import (
    ConfirmationRequiredError,
    HumanVerdictsExistError,
    ImportProblemsError,
    NameTakenError,
)
from storage.response_files import ColumnMapping, read_responses
from storage.services import datasets, reviews, runs
from tests.actors import ADMIN
from tests.storage.helpers import make_dataset, make_rubric, make_run


def _count(sessions) -> int:
    return sum(d.response_count for d in datasets.list_datasets(sessions, include_archived=True))


def test_response_round_trip_with_thinking_metadata_and_a_megabyte_of_text(sessions):
    big = "word " * 220_000  # ~1.1 MB
    dataset = datasets.create_dataset(sessions, "Big", responses=[
        {"id": "a", "query": "Q?", "text": big, "thinking": "hmm", "lang": "en",
         "metadata": {"source": "eval", "tags": ["x", 1]}},
        {"text": "short"},
    ], actor=ADMIN)
    [first, second] = datasets.list_responses(sessions, dataset.id)
    assert first.output == big and first.thinking == "hmm" and first.query == "Q?"
    assert first.external_id == "a"
    assert first.metadata == {"source": "eval", "tags": ["x", 1], "lang": "en"}
    assert first.to_grade == {"thinking": "hmm", "output": big}
    assert (second.external_id, second.query, second.thinking, second.metadata) == (
        None, None, None, {})
    # Passed as parts, so a plain output is never re-parsed for <output> tags (issue 10.3).
    assert second.to_grade == {"thinking": "", "output": "short"}
    assert datasets.get_response(sessions, first.id) == first
    assert datasets.get_responses(sessions, [second.id, first.id]) == [second, first]
    assert datasets.get_dataset(sessions, dataset.id).response_count == 2


def test_external_ids_are_unique_per_dataset_only(sessions):
    a, _ = make_dataset(sessions, "A")
    b, _ = make_dataset(sessions, "B")  # the same ids r0..r2 in another dataset are fine
    with pytest.raises(ImportProblemsError) as caught:
        datasets.import_responses(sessions, a.id, [
            {"id": "new", "text": "fine"}, {"id": "r1", "text": "clash"},
        ], actor=ADMIN)
    assert [str(p) for p in caught.value.problems] == [
        "row 2: id 'r1' is already in this dataset"]
    assert datasets.get_dataset(sessions, a.id).response_count == 3
    assert datasets.get_dataset(sessions, b.id).response_count == 3


def test_a_failed_import_writes_nothing_and_reports_every_problem(sessions):
    rows = [
        {"id": "1", "text": "ok"},
        {"id": "2", "text": ""},
        {"id": "1", "text": "duplicate id"},
        {"id": "4", "text": {"not": "text"}},
        "not a row",
    ]
    with pytest.raises(ImportProblemsError) as caught:
        datasets.create_dataset(sessions, "Broken", responses=rows, actor=ADMIN)
    problems = [str(p) for p in caught.value.problems]
    assert problems == [
        "row 2: the text column 'text' is empty",
        "row 3: id '1' is already used by row 1",
        "row 4: 'text' must be text, got dict",
        "row 5: must be a mapping of column names to values",
    ]
    assert "nothing was imported" in str(caught.value)
    assert datasets.list_datasets(sessions, include_archived=True) == []


def test_a_failed_file_import_into_an_existing_dataset_leaves_it_unchanged(sessions):
    dataset, _ = make_dataset(sessions)
    data = b"id,text\nx1,fine\nx2,\nx3,also fine\n"
    with pytest.raises(ImportProblemsError, match=r"row 2 \(line 3\)"):
        datasets.import_responses(sessions, dataset.id, read_responses(data, "r.csv"), actor=ADMIN)
    ids = datasets.import_responses(
        sessions, dataset.id, read_responses(b"id,text\nx1,fine\n", "r.csv"), actor=ADMIN)
    assert len(ids) == 1 and _count(sessions) == 4


def test_a_file_import_with_a_column_mapping_round_trips(sessions):
    dataset = datasets.create_dataset(sessions, "Mapped", actor=ADMIN)
    data = b'{"uid": 7, "prompt": "Q", "completion": "A", "cot": "T", "extra": 1}\n'
    mapping = ColumnMapping(text="completion", query="prompt", id="uid", thinking="cot")
    datasets.import_responses(sessions, dataset.id, read_responses(data, "x.jsonl",
                                                                   mapping=mapping), actor=ADMIN)
    [response] = datasets.list_responses(sessions, dataset.id)
    assert (response.external_id, response.query, response.output, response.thinking) == (
        "7", "Q", "A", "T")
    assert response.metadata == {"extra": 1}


def test_add_response_stores_one_pasted_response(sessions):
    dataset = datasets.create_dataset(sessions, "Pasted", actor=ADMIN)
    response = datasets.add_response(sessions, dataset.id, "the answer", query="q",
                                     thinking="t", metadata={"by": "hand"}, actor=ADMIN)
    assert datasets.get_response(sessions, response.id) == response
    assert response.metadata == {"by": "hand"} and response.thinking == "t"
    with pytest.raises(ImportProblemsError, match="empty"):
        datasets.add_response(sessions, dataset.id, "  ", actor=ADMIN)


def test_mixed_rows_keep_their_order(sessions):
    from storage.response_files import NewResponse

    dataset = datasets.create_dataset(sessions, "Mixed", responses=[
        {"text": "first"}, NewResponse(output="second"), {"text": "third"}], actor=ADMIN)
    assert [r.output for r in datasets.list_responses(sessions, dataset.id)] == [
        "first", "second", "third"]


def test_dataset_names_are_unique(sessions):
    make_dataset(sessions, "Same")
    with pytest.raises(NameTakenError):
        make_dataset(sessions, "Same")


def test_list_responses_pages(sessions):
    dataset, responses = make_dataset(sessions, count=7)
    page = datasets.list_responses(sessions, dataset.id, offset=2, limit=3)
    assert page == responses[2:5]


def test_archive_keeps_everything_and_hides_the_dataset(sessions):
    dataset, _ = make_dataset(sessions)
    datasets.archive_dataset(sessions, dataset.id, actor=ADMIN)
    assert datasets.list_datasets(sessions) == []
    assert datasets.list_datasets(sessions, include_archived=True)[0].response_count == 3


def test_deleting_a_dataset_without_results_needs_no_confirmation(sessions):
    dataset, _ = make_dataset(sessions)
    summary = datasets.delete_dataset(sessions, dataset.id, actor=ADMIN)
    assert summary.responses == 3 and _count(sessions) == 0


def test_deleting_a_dataset_with_results_needs_confirmation(sessions):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    make_run(sessions, version.id, dataset.id)
    with pytest.raises(ConfirmationRequiredError):
        datasets.delete_dataset(sessions, dataset.id, actor=ADMIN)
    assert _count(sessions) == 3
    summary = datasets.delete_dataset(sessions, dataset.id, confirm=True, actor=ADMIN)
    assert (summary.runs, summary.responses) == (1, 3)
    assert runs.list_runs(sessions) == [] and _count(sessions) == 0


def test_deleting_a_dataset_never_removes_human_verdicts_silently(sessions):
    version = make_rubric(sessions)
    dataset, [response, *_] = make_dataset(sessions)
    reviews.set_human_verdict(sessions, response_id=response.id,
                              criterion_id=version.criteria[1].id, verdict="UNMET",
                              reviewer="ana")
    with pytest.raises(HumanVerdictsExistError, match="archive it instead"):
        datasets.delete_dataset(sessions, dataset.id, confirm=True, actor=ADMIN)
    assert len(reviews.verdict_history(sessions, response.id)) == 1
    datasets.delete_dataset(sessions, dataset.id, confirm=True, delete_human_verdicts=True,
                            actor=ADMIN)
    assert _count(sessions) == 0
