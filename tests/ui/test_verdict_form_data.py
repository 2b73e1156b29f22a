"""The verdict form's data and the check of what the browser sends back (pure: no Streamlit
run). The keys in a real browser: tests/e2e/test_review_keys.py."""

from __future__ import annotations

import pytest

from grading.options import CriterionOption as O
from ui.components.verdict_form import (
    VERDICT_ANSWERS,
    Answer,
    FormCriterion,
    InvalidSubmissionError,
    form_data,
    option_answers,
    parse_submission,
)

CRITERIA = [FormCriterion(id=1, label="dose", answers=VERDICT_ANSWERS, initial="MET"),
            FormCriterion(id=2, label="tone", answers=(
                Answer("a", "Formal", "1"), Answer("b", "Casual", "2")))]


def _sent(*answers, form="7:0", **extra):
    return {"id": "7:0#1", "form": form, "advance": False, "answers": list(answers), **extra}


def test_each_criterion_carries_its_own_answers_and_keys():
    data = form_data("7:0", CRITERIA, done=None, blind=False)
    assert [[(a["value"], a["key"]) for a in c["answers"]] for c in data["criteria"]] == [
        [("MET", "m"), ("UNMET", "u"), ("CANNOT_ASSESS", "n")], [("a", "1"), ("b", "2")]]
    assert data["criteria"][0]["initial"] == "MET"


def test_blind_mode_gives_the_form_no_judges_verdict():
    agreed = [FormCriterion(id=1, label="dose", answers=VERDICT_ANSWERS, agreed="MET")]
    assert form_data("7:0", agreed, done=None, blind=False)["criteria"][0]["agreed"] == "MET"
    assert form_data("7:0", agreed, done=None, blind=True)["criteria"][0]["agreed"] is None


def test_a_whole_form_is_read_with_notes_trimmed():
    sent = _sent({"criterion": 1, "answer": "UNMET", "note": " why "},
                 {"criterion": 2, "answer": "b"}, advance=True)
    submission = parse_submission(sent, "7:0", CRITERIA)
    assert submission.answers == {1: ("UNMET", "why"), 2: ("b", "")}
    assert submission.advance and submission.id == "7:0#1"


@pytest.mark.parametrize(("sent", "says"), [
    pytest.param("save", "not a save", id="not-a-mapping"),
    pytest.param({"form": "7:0"}, "not a save", id="no-id"),
    pytest.param(_sent(form="7:1"), "this form was replaced", id="another-form"),
    pytest.param(_sent({"criterion": 3, "answer": "MET"}), "criterion 3 is not in this form",
                 id="unknown-criterion"),
    pytest.param(_sent({"criterion": 2, "answer": "MET"}), "'MET' is not an answer of "
                 "criterion “tone”", id="answer-of-another-criterion"),
    pytest.param(_sent({"criterion": 1, "answer": "MET", "note": ["x"]}),
                 "the note on “dose” is not text", id="note-not-text"),
    pytest.param(_sent({"criterion": 1, "answer": "MET", "note": "x" * 10_001}),
                 "at most 10000 characters", id="note-too-long"),
    pytest.param(_sent("MET"), "an answer in the form is malformed", id="answer-not-a-mapping"),
])
def test_what_the_form_could_not_have_sent_is_refused_with_what_is_wrong(sent, says):
    with pytest.raises(InvalidSubmissionError) as raised:
        parse_submission(sent, "7:0", CRITERIA)
    assert says in str(raised.value)


def test_options_are_numbered_1_to_9_with_values_and_na_marked():
    ten = option_answers([O(label=f"L{i}", value=i / 10) for i in range(10)])
    assert [a.key for a in ten] == [*"123456789", "", "n"]  # the tenth: by click only
    assert (ten[0].value, ten[0].label) == ("L0", "L0 · 0")
    assert ten[-1].value == "CANNOT_ASSESS"  # no NA option: the abstention stays offered
    with_na = option_answers([O(label="yes", value=1.0), O(label="n/a", value=0.0, na=True)])
    assert [(a.value, a.label, a.key, a.na) for a in with_na] == [
        ("yes", "yes · 1", "1", False), ("n/a", "n/a · NA", "2", True)]
    # the form refuses an option label that is not one of the criterion's
    form = [FormCriterion(id=3, label="scale", answers=with_na)]
    assert parse_submission(_sent({"criterion": 3, "answer": "n/a"}), "7:0",
                            form).answers == {3: ("n/a", "")}
    with pytest.raises(InvalidSubmissionError, match="'maybe' is not an answer"):
        parse_submission(_sent({"criterion": 3, "answer": "maybe"}), "7:0", form)
