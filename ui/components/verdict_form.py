"""The Review page's verdict form as a browser component: the answers live in the browser, keys
change them there at once (no Streamlit rerun per key, so none is lost or lands on the wrong
criterion), and one save sends the whole form back as one submission.

The form is a list of criteria, each with its own list of allowed answers (value, label, key):
verdicts (M / U / N) on a binary criterion, the options by number keys (1-9) on a
multi-choice one (:func:`option_answers`; the value sent is the option's label).
Parts of one form: "keys" (focus and key buttons), one "criterion" per criterion (its answers
and note, drawn inside the criterion's box), "save". This module holds the data shapes, the
check of a submission (pure) and the mounting; the JavaScript is ``verdict_form.js``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import resources
from typing import Any, Literal

import streamlit as st

from grading.options import CriterionOption

Part = Literal["keys", "criterion", "save"]
NOTE_LIMIT = 10_000  # characters; the service checks its own limits too


@dataclass(frozen=True)
class Answer:
    value: str
    label: str
    key: str  # one character typed to give it to the criterion in focus ("" for none)
    na: bool = False  # a not-applicable option (an abstention, scored as CANNOT_ASSESS)


@dataclass(frozen=True)
class FormCriterion:
    id: int
    label: str
    answers: tuple[Answer, ...]
    initial: str | None = None  # the answer the form starts from (the saved one, or kept)
    note: str = ""
    agreed: str | None = None  # every judge gave this (for "accept the judges")


VERDICT_ANSWERS = (
    Answer("MET", "MET", "m"),
    Answer("UNMET", "UNMET", "u"),
    Answer("CANNOT_ASSESS", "CANNOT ASSESS", "n"),
)


OPTION_KEYS = "123456789"


def option_answers(options: Sequence[CriterionOption]) -> tuple[Answer, ...]:
    """A multi-choice criterion's answers: its options in the author's order, keys 1-9 (a
    tenth option on is picked by click only), each shown with its value or as NA. Without
    an NA option, CANNOT ASSESS (N) stays available: the services store it as an abstention
    that names no option."""
    answers = [Answer(o.label, f"{o.label} · {'NA' if o.na else f'{o.value:g}'}",
                      OPTION_KEYS[i] if i < len(OPTION_KEYS) else "", na=o.na)
               for i, o in enumerate(options)]
    if not any(o.na for o in options):
        answers.append(VERDICT_ANSWERS[2])
    return tuple(answers)


@dataclass(frozen=True)
class Submission:
    """One save of the whole form: criterion id -> (answer, note), answered criteria only."""

    id: str
    form: str
    advance: bool
    answers: dict[int, tuple[str, str]]


class InvalidSubmissionError(ValueError):
    """A submission the form could not have sent (shown to the reviewer, nothing saved)."""


def form_key(response_id: int, nonce: int) -> str:
    return f"{response_id}:{nonce}"


def form_data(key: str, criteria: Sequence[FormCriterion], *, done: str | None,
              blind: bool, saving_as: str | None = None, answer_label: str = "Your verdict",
              accept_judges: bool = True) -> dict[str, Any]:
    """What every part of the form is given (JSON). ``saving_as``: the name the form's saves
    carry, shown beside its buttons; ``answer_label``: what a criterion's choices are called;
    ``accept_judges``: offer "Accept the judges where they agree" (not where nothing can be
    accepted, as when reviewing pairs)."""
    return {
        "form": key, "done": done, "blind": blind, "saving_as": saving_as,
        "answer_label": answer_label, "accept_judges": accept_judges,
        "criteria": [{"id": c.id, "label": c.label, "initial": c.initial, "note": c.note,
                      "agreed": None if blind else c.agreed,
                      "answers": [{"value": a.value, "label": a.label, "key": a.key, "na": a.na}
                                  for a in c.answers]} for c in criteria],
    }


def parse_submission(raw: object, key: str,
                     criteria: Sequence[FormCriterion]) -> Submission:
    """Check what the browser sent against the form it was drawn as."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
        raise InvalidSubmissionError("The form sent something that is not a save; nothing "
                                     "was saved. Reload the page and give your verdicts again.")
    if raw.get("form") != key:
        raise InvalidSubmissionError("Not saved: this form was replaced (another save or "
                                     "response) before it was sent. Give your verdicts again.")
    by_id = {c.id: c for c in criteria}
    answers: dict[int, tuple[str, str]] = {}
    for item in raw.get("answers") or ():
        if not isinstance(item, Mapping):
            raise InvalidSubmissionError("Not saved: an answer in the form is malformed.")
        criterion = by_id.get(item.get("criterion"))  # type: ignore[arg-type]
        if criterion is None:
            raise InvalidSubmissionError(
                f"Not saved: criterion {item.get('criterion')!r} is not in this form.")
        value, note = item.get("answer"), item.get("note") or ""
        if value not in {a.value for a in criterion.answers}:
            raise InvalidSubmissionError(
                f"Not saved: {value!r} is not an answer of criterion “{criterion.label}”.")
        if not isinstance(note, str) or len(note) > NOTE_LIMIT:
            raise InvalidSubmissionError(
                f"Not saved: the note on “{criterion.label}” is not text of at most "
                f"{NOTE_LIMIT} characters.")
        answers[criterion.id] = (value, note.strip())
    return Submission(id=raw["id"], form=key, advance=bool(raw.get("advance")),
                      answers=answers)


def _asset(name: str) -> str:
    return resources.files("ui.components").joinpath(name).read_text(encoding="utf-8")


_COMPONENT = st.components.v2.component(
    "rubric_workbench_verdict_form", js=_asset("verdict_form.js"),
    css=_asset("verdict_form.css"), isolate_styles=False)


def mount(part: Part, data: Mapping[str, Any], *, key: str, criterion: int | None = None,
          on_submit: Callable[..., None] | None = None, args: tuple = ()) -> None:
    """Draw one part of the form. ``on_submit(*args)`` (keys and save parts) runs before the
    rerun a save causes; it reads the submission with :func:`submitted`."""
    callbacks = {"on_submit_change": partial(on_submit, *args)} if on_submit else {}
    _COMPONENT(key=key, data={**data, "part": part, "criterion": criterion}, **callbacks)


def submitted(key: str) -> object:
    """The submission the part mounted under ``key`` sent in this rerun, if any."""
    state = st.session_state.get(key)
    return state.get("submit") if state is not None else None
