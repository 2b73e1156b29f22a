"""Reading a pairwise judge's answer: ``{"reason": ..., "preference": "A" | "B" | "TIE"}``.

Tolerated as in ``grading.parsing``: code fences, prose around the JSON, key and value case,
``winner``/``better`` for ``preference``, "tie"/"equal"/"same"/"neither"/"both" for TIE. An
answer that names neither A, B nor a tie raises ``ParseError`` saying what it named: the
retry loop asks again, and what is still unusable after the retries fails that criterion's
verdict with this reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from grading.parsing import ParseError, _pick, _reason, answer_object

Side = Literal["A", "B", "TIE", "CANNOT_ASSESS"]
PREFERENCE_KEYS = ("preference", "winner", "better", "choice", "verdict")
_TIES = {"TIE", "TIED", "EQUAL", "SAME", "NEITHER", "BOTH", "DRAW"}
_SIDES = {"A": "A", "RESPONSE A": "A", "RESPONSE_A": "A",
          "B": "B", "RESPONSE B": "B", "RESPONSE_B": "B"}


def read_side(value: object, *, allow_cannot_assess: bool = False) -> Side:
    """``A`` / ``B`` / ``TIE`` (/ ``CANNOT_ASSESS``) from a judge's word; ParseError else."""
    if not isinstance(value, str):
        raise ParseError(f"the preference must be A, B or TIE, got {value!r}")
    word = " ".join(value.strip().upper().replace("-", " ").split())
    if word in _SIDES:
        return _SIDES[word]  # type: ignore[return-value]
    if word in _TIES:
        return "TIE"
    if allow_cannot_assess and word.replace(" ", "_") == "CANNOT_ASSESS":
        return "CANNOT_ASSESS"
    raise ParseError(f"the judge answered {value!r}, which names neither A, B nor a tie")


def parse_preference_answer(text: str, *, allow_cannot_assess: bool = False,
                            quoted: Sequence[str] = ()) -> tuple[Side, str]:
    """(side, reason) from the judge's answer; ``quoted``: texts it may cite
    (``grading.answer_json.choose_answer_object``)."""
    obj = answer_object(text, PREFERENCE_KEYS, quoted)
    key, value = _pick(obj, *PREFERENCE_KEYS)
    if key is None:
        raise ParseError("the answer has no 'preference'", text)
    try:
        side = read_side(value, allow_cannot_assess=allow_cannot_assess)
    except ParseError as exc:
        raise ParseError(str(exc), text) from None
    return side, _reason(obj, text)
