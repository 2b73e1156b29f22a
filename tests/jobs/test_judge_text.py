"""A judge's words are stored whatever characters they hold: a NUL or a lone surrogate in a
reason (which PostgreSQL refuses as text) becomes U+FFFD instead of failing the grade, on SQLite
and PostgreSQL alike, through the real runner and litellm's HTTP path."""

from __future__ import annotations

import json

from grading.types import Criterion, CriterionReport, EvaluationReport, Verdict
from storage.limits import storable
from storage.services import runs
from tests.jobs.helpers import make_dataset, make_rubric, make_run, run_now

ONE = [Criterion(name="accurate", requirement="States the dose correctly", weight=10)]


def test_storable_replaces_only_what_cannot_be_stored():
    assert storable(None) is None
    assert storable("plain ünïcode ✓") == "plain ünïcode ✓"
    assert storable("a\x00b") == "a\ufffdb"
    assert storable("x\ud800y\udfffz") == "x\ufffdy\ufffdz"
    assert storable("emoji 😀 stays") == "emoji 😀 stays"


def test_a_reason_with_a_nul_from_the_provider_is_stored(sessions, fake_provider):
    version = make_rubric(sessions, criteria=ONE)
    dataset, _ = make_dataset(sessions, 1)
    answer = json.dumps({"criterion_status": "MET", "explanation": "dose ok\u0000 (5 mg)"})
    fake_provider.enqueue(answer)
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base)
    result = run_now(sessions, run.id)
    assert (result.status, result.graded, result.failed) == ("done", 1, 0)
    [grade] = runs.list_grades(sessions, run.id)
    [criterion] = grade.criteria
    assert criterion.verdict is Verdict.MET
    assert criterion.reason == "dose ok\ufffd (5 mg)"


def test_record_grade_keeps_every_text_field_storable(sessions):
    version = make_rubric(sessions, criteria=ONE)
    dataset, responses = make_dataset(sessions, 1)
    run = make_run(sessions, version.id, dataset.id, "http://127.0.0.1:9")
    report = EvaluationReport(
        score=1.0, raw_score=10.0, reason="overall\x00", error=None,
        report=[CriterionReport(requirement="States the dose correctly", weight=10,
                                verdict=Verdict.MET, reason="lone \ud83d half",
                                error="note\x00")])
    grade = runs.record_grade(sessions, run.id, responses[0].id, report)
    assert grade.reason == "overall\ufffd"
    assert (grade.criteria[0].reason, grade.criteria[0].error) == ("lone \ufffd half",
                                                                   "note\ufffd")
    [stored] = runs.list_grades(sessions, run.id)
    assert stored.criteria[0].reason == "lone \ufffd half"
