"""Agreement over a rubric that mixes binary and multi-choice criteria: each criterion gets the
figures of its kind.

``kinds`` maps a criterion (the second part of the ``(item, criterion)`` keys) to its
``OptionScale``; a criterion absent from it, or mapped to None, is binary and its verdicts are
MET / UNMET / CANNOT_ASSESS. A multi-choice criterion's verdicts are option labels and its row
is an ``OptionPairwiseAgreement`` / ``OptionMultiSourceAgreement`` (weighted kappa and ordinal
alpha, or Cohen's kappa and nominal alpha: grading/option_agreement.py).

The overall figures pool the binary criteria only: a kappa pooled over MET/UNMET and ratings
on different scales would mean nothing. When multi-choice criteria are left out of them, the
overall note says how many.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from grading.agreement import (
    AgreementByCriterion,
    MultiSourceAgreementByCriterion,
    _criteria,
    _criterion,
    compare_verdicts_by_criterion,
    krippendorff_alpha_by_criterion,
)
from grading.option_agreement import ABSTAIN, OptionScale, compare_options, options_alpha
from grading.types import Verdict

Kinds = Mapping[Hashable, OptionScale | None]


def _split(source: Mapping[Any, Any], kinds: Kinds
           ) -> tuple[dict[Any, Any], dict[Hashable, dict[Any, Any]]]:
    """(the binary criteria's keys, each multi-choice criterion's keys)."""
    binary: dict[Any, Any] = {}
    options: dict[Hashable, dict[Any, Any]] = {}
    for key, value in source.items():
        criterion = _criterion(key)
        if kinds.get(criterion) is None:
            binary[key] = value
        else:
            options.setdefault(criterion, {})[key] = value
    return binary, options


def _left_out_note(note: str, count: int) -> str:
    if not count:
        return note
    which = "criterion is" if count == 1 else "criteria are"
    extra = (f"{count} multi-choice {which} not pooled here (each has its own figures on "
             "its own scale)")
    return f"{note}; {extra}" if note else extra


def compare_by_criterion(a: Mapping[Any, Any], b: Mapping[Any, Any], kinds: Kinds
                         ) -> AgreementByCriterion:
    """``compare_verdicts_by_criterion`` where each multi-choice criterion is compared on its
    options; the overall figures are the binary criteria's."""
    criteria = _criteria([a, b])
    binary_a, options_a = _split(a, kinds)
    binary_b, options_b = _split(b, kinds)
    binary = compare_verdicts_by_criterion(binary_a, binary_b)
    multi = [c for c in criteria if kinds.get(c) is not None]
    per_criterion = {
        c: (compare_options(options_a.get(c, {}), options_b.get(c, {}), kinds[c])
            if kinds.get(c) is not None else binary.per_criterion[c])
        for c in criteria
    }
    overall = replace(binary.overall, note=_left_out_note(binary.overall.note, len(multi)))
    return AgreementByCriterion(overall=overall, per_criterion=per_criterion)


def alpha_by_criterion(sources: Sequence[Mapping[Any, Any]], kinds: Kinds
                       ) -> MultiSourceAgreementByCriterion:
    """``krippendorff_alpha_by_criterion`` with each multi-choice criterion's alpha on its
    options (ordinal or nominal metric); the overall alpha is the binary criteria's."""
    criteria = _criteria(sources)
    split = [_split(source, kinds) for source in sources]
    binary = krippendorff_alpha_by_criterion([b for b, _ in split])
    multi = [c for c in criteria if kinds.get(c) is not None]
    per_criterion = {
        c: (options_alpha([o.get(c, {}) for _, o in split], kinds[c])
            if kinds.get(c) is not None else binary.per_criterion[c])
        for c in criteria
    }
    overall = replace(binary.overall, note=_left_out_note(binary.overall.note, len(multi)))
    return MultiSourceAgreementByCriterion(overall=overall, per_criterion=per_criterion)


def verdicts_differ(verdicts: Sequence[object], scale: OptionScale | None) -> bool:
    """Whether these sources disagree on one key: two different MET/UNMET, or two different
    scored options. Abstentions (CANNOT_ASSESS, NA options) and missing verdicts never do."""
    present = [v for v in verdicts if v is not None]
    if scale is None:
        decided = {Verdict.parse(v) for v in present}
        return len(decided - {Verdict.CANNOT_ASSESS}) > 1
    return len({scale.parse(v) for v in present} - {ABSTAIN}) > 1
