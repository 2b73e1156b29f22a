"""Creating a comparison run: two sources matched into stored pairs, every row that cannot be
judged listed with why; bad input is refused with a message and nothing written; roles as
for runs. (Judging them over the fake provider: tests/jobs/test_comparison_runs.py.)"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from grading.types import Criterion
from storage import models as m
from storage.errors import InvalidInputError
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from storage.services.reviewers import Actor, PermissionDeniedError, Role
from tests.actors import ADMIN

CRITERIA = [Criterion(name="complete", requirement="Covers every step", weight=4),
            Criterion(name="rude", requirement="Insults the reader", weight=-2)]
REVIEWER = Actor(key="rev@example.org", name="Rev", roles=frozenset({Role.REVIEWER}),
                 signed_in=True)


def dataset(sessions, name: str, rows: list[tuple]) -> int:
    """rows: (id, query, text[, metadata])."""
    return datasets.create_dataset(sessions, name, responses=[
        {"id": r[0], "query": r[1], "text": r[2], **(r[3] if len(r) > 3 else {})}
        for r in rows], actor=ADMIN).id


def rubric(sessions) -> int:
    return rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN).id


def counts(sessions) -> tuple[int, int, int]:
    with sessions() as session:
        return tuple(session.scalar(select(func.count()).select_from(t)) for t in (
            m.ComparisonRow, m.ComparisonPairRow, m.ComparisonPreferenceRow))


def test_creating_a_comparison_stores_pairs_and_lists_what_is_not_judged(sessions):
    a = dataset(sessions, "Old prompt", [("q1", "How?", "short"), ("q2", "Why?", "same text"),
                                         ("q3", "When?", "soon"), ("q4", "Who?", "me")])
    b = dataset(sessions, "New prompt", [("q1", "How?", "a longer answer"),
                                         ("q2", "Why?", "same text"),
                                         ("q3", "When?", "very soon now"), ("q9", "Hm?", "x")])

    made = comparisons.create_comparison(
        sessions, rubric_version_id=rubric(sessions), a=Source(a), b=Source(b),
        model="openai/fake-judge", actor=ADMIN)

    assert (made.status, made.pair_count, made.identical_count, made.unmatched_count) == (
        "queued", 2, 1, 2)
    assert (made.a_label, made.b_label) == ("Old prompt", "New prompt")
    results = comparisons.comparison_results(sessions, made.id)
    assert results.summary is None  # nothing judged yet
    assert [(n.kind, n.key, n.a_id, n.b_id) for n in results.not_judged] == [
        ("identical", "q2", "q2", "q2"), ("only_a", "q4", "q4", None),
        ("only_b", "q9", None, "q9")]
    assert results.not_judged[1].reason == "no response in B with this id"
    assert rubrics.get_version(sessions, made.rubric_version_id).frozen_at is not None


def test_one_dataset_split_by_a_metadata_column_is_two_sources_matched_by_query(sessions):
    both = dataset(sessions, "Both models", [
        ("1", "How?", "short", {"model": "small"}), ("2", "How?", "a longer one",
                                                      {"model": "large"}),
        ("3", "Why?", "because", {"model": "small"}), ("4", "Why?", "because of this",
                                                        {"model": "large"}),
        ("5", "Who?", "me", {"model": "other"})])

    made = comparisons.create_comparison(
        sessions, rubric_version_id=rubric(sessions), a=Source(both, "model", "small"),
        b=Source(both, "model", "large"), model="openai/fake-judge", match_by="query",
        actor=ADMIN)

    assert (made.pair_count, made.unmatched_count) == (2, 0)
    assert made.b_label == "Both models: model = large"


@pytest.mark.parametrize(("a_rows", "b_rows", "by", "words"), [
    pytest.param([("q1", "How?", "x")], [("z1", "Why?", "y")], "id",
                 ["no id in common", "match by query"], id="no-id-in-common"),
    pytest.param([("q1", "How?", "x")], [("z1", "Why?", "y")], "query",
                 ["no query in common"], id="no-query-in-common"),
    pytest.param([("q1", "How?", "x"), ("q2", "How?", "z")], [("z1", "How?", "y")], "query",
                 ["A (A)", "response q2", "repeats the query", "'How?'"],
                 id="duplicate-query"),
    pytest.param([("q1", "How?", "same")], [("q1", "How?", "same")], "id",
                 ["same text", "nothing to compare"], id="only-identical-pairs"),
])
def test_bad_sources_are_refused_with_a_message_and_nothing_is_written(
        sessions, a_rows, b_rows, by, words):
    a, b = dataset(sessions, "A", a_rows), dataset(sessions, "B", b_rows)
    version = rubric(sessions)

    with pytest.raises(InvalidInputError) as caught:
        comparisons.create_comparison(sessions, rubric_version_id=version, a=Source(a),
                                      b=Source(b), model="openai/j", match_by=by, actor=ADMIN)

    assert all(w in str(caught.value) for w in words), str(caught.value)
    assert counts(sessions) == (0, 0, 0)
    assert rubrics.get_version(sessions, version).frozen_at is None


def test_the_same_source_twice_and_a_value_without_rows_are_refused(sessions):
    a = dataset(sessions, "A", [("1", "How?", "x", {"model": "small"})])
    version = rubric(sessions)
    with pytest.raises(InvalidInputError, match="the same responses"):
        comparisons.create_comparison(sessions, rubric_version_id=version, a=Source(a),
                                      b=Source(a), model="openai/j", actor=ADMIN)
    with pytest.raises(InvalidInputError, match="source B has no responses whose 'model'"):
        comparisons.create_comparison(
            sessions, rubric_version_id=version, a=Source(a, "model", "small"),
            b=Source(a, "model", "huge"), model="openai/j", actor=ADMIN)
    assert counts(sessions) == (0, 0, 0)


def test_a_reviewer_cannot_start_or_cancel_a_comparison(sessions):
    a = dataset(sessions, "A", [("q1", "How?", "x")])
    b = dataset(sessions, "B", [("q1", "How?", "y z")])
    version = rubric(sessions)
    with pytest.raises(PermissionDeniedError, match="start a comparison"):
        comparisons.create_comparison(sessions, rubric_version_id=version, a=Source(a),
                                      b=Source(b), model="openai/j", actor=REVIEWER)
    assert counts(sessions) == (0, 0, 0)
    made = comparisons.create_comparison(sessions, rubric_version_id=version, a=Source(a),
                                         b=Source(b), model="openai/j", actor=ADMIN)
    with pytest.raises(PermissionDeniedError, match="cancel a comparison"):
        comparisons.cancel_comparison(sessions, made.id, actor=REVIEWER)
    assert comparisons.get_comparison(sessions, made.id).status == "queued"
    assert comparisons.cancel_comparison(sessions, made.id, actor=ADMIN).status == "cancelled"


def test_deleting_a_dataset_or_rubric_a_comparison_used_deletes_the_comparison(sessions):
    a = dataset(sessions, "A", [("q1", "How?", "x")])
    b = dataset(sessions, "B", [("q1", "How?", "y z")])
    c = dataset(sessions, "C", [("q1", "How?", "y z w")])
    version = rubric(sessions)
    other = rubrics.create_rubric(sessions, "Other", CRITERIA, actor=ADMIN).id
    comparisons.create_comparison(sessions, rubric_version_id=version, a=Source(a),
                                  b=Source(b), model="openai/j", actor=ADMIN)
    kept = comparisons.create_comparison(sessions, rubric_version_id=other, a=Source(c),
                                         b=Source(a), model="openai/j", actor=ADMIN)

    datasets.delete_dataset(sessions, b, confirm=True, actor=ADMIN)
    assert [x.id for x in comparisons.list_comparisons(sessions)] == [kept.id]
    rubrics.delete_rubric(sessions, rubrics.get_version(sessions, other).rubric_id,
                          confirm=True, actor=ADMIN)
    assert comparisons.list_comparisons(sessions) == []
    assert counts(sessions) == (0, 0, 0)
