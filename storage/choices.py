"""A person's (or a sheet's) answer on one criterion -> the (verdict, option) stored for it.

On a binary criterion the answer is MET / UNMET / CANNOT_ASSESS. On a multi-choice one it
is one of its option labels (case and outer spaces ignored; stored as the option's own
label), or CANNOT_ASSESS for an abstention that names no option; the stored verdict is then
MET, or CANNOT_ASSESS for an NA option (models.GradeCriterionRow says why).
"""

from __future__ import annotations

from grading.options import find_option
from grading.types import Verdict
from storage.dto import CriterionInfo
from storage.errors import InvalidInputError


def stored_choice(criterion: CriterionInfo, answer: Verdict | str) -> tuple[Verdict, str | None]:
    """(verdict, option label or None); InvalidInputError naming the criterion otherwise."""
    where = f"criterion {criterion.label!r}"
    if criterion.options is None:
        try:
            return Verdict.parse(answer), None
        except ValueError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
    if isinstance(answer, str):  # a label wins, even one spelt like a verdict ("Met")
        index = find_option(criterion.options, str(answer))
        if index is not None:
            option = criterion.options[index]
            return (Verdict.CANNOT_ASSESS if option.na else Verdict.MET), option.label
    try:
        if Verdict.parse(answer) is Verdict.CANNOT_ASSESS:
            return Verdict.CANNOT_ASSESS, None
    except ValueError:
        pass
    labels = ", ".join(repr(o.label) for o in criterion.options)
    raise InvalidInputError(
        f"{where} is answered by choosing one of its options ({labels}), or CANNOT_ASSESS; "
        f"{str(answer)!r} is not one of them")
