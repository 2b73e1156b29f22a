"""Required criteria (gates): a required criterion that goes the wrong way scores the whole
response 0, however the other criteria went (OpenEnv's ``Gate``, LangSmith's required
criteria).

The rule, one for every kind of criterion and every CANNOT_ASSESS strategy: **a gate closes
when its criterion contributes no more than its worst case** (the contribution of UNMET on a
positive criterion, of MET on a negative one, of the worst scored option on a multi-choice
one). So a required positive criterion closes on UNMET, a required penalty on MET, a
required rating on its worst option. An abstention (CANNOT_ASSESS, an NA option) follows the
strategy: ``skip`` leaves the criterion out, so its gate stays open; ``zero`` closes a
positive gate (0 is its worst case) and leaves a penalty's open; ``partial`` closes only
when the partial credit is no better than the worst case; ``fail`` closes it.
"""

from __future__ import annotations

from grading.types import Criterion

_EPSILON = 1e-12


def closes(contribution: float | None, worst: float) -> bool:
    """Whether a required criterion's contribution (None: left out) closes its gate."""
    return contribution is not None and contribution <= worst + _EPSILON


def gated_score(score: float, total: float, *, normalize: bool) -> float:
    """The score once a gate closed: 0, or the raw sum when that is already lower (a closed
    gate never raises a score)."""
    return 0.0 if normalize else min(total, 0.0)


def gate_label(index: int, criterion: Criterion) -> str:
    return f"criterion {index + 1}" + (f" ('{criterion.name}')" if criterion.name else "")
