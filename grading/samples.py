"""Asking the judge ``n`` times per criterion: which sample a call is, and the majority rule
for binary criteria.

A call's sample index travels in a context variable rather than as an argument of
``generate_fn``: a ``generate_fn`` that forwards its keywords to the provider would send an
unknown field. Sample 0 is every call made today (``samples=1``), so a cache that keys sample
``i > 0`` apart from sample 0 keeps every existing key (storage.jobs.cache.sample_key).

**Combining rule.** On a binary criterion the verdict is the choice (MET, UNMET,
CANNOT_ASSESS) most samples gave; samples that failed do not vote. A tie between the most
frequent choices is **CANNOT_ASSESS** (an abstention, scored by the run's CANNOT_ASSESS
strategy), with the tally in the reason: a split judge is shown as undecided, never silently
resolved by the order the samples arrived in. On a multi-choice criterion the samples combine
by the rule panels use for options (``grading.panel_options.combine_options``): the median of an
ordinal scale, the most chosen option of a nominal one, a tie to the worse option, NA options
abstaining. A mode is wrong for a rating: samples of 1, 3 and 5 have no mode, and 3 is the
answer.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

MAX_SAMPLES = 20  # per criterion: the cost multiplies by the number of samples

_sample: ContextVar[int] = ContextVar("rubric_workbench_sample", default=0)


def current_sample() -> int:
    """The index (0-based) of the sample the current judge call belongs to."""
    return _sample.get()


@contextlib.contextmanager
def sampling(index: int) -> Iterator[None]:
    """Calls made inside belong to sample ``index`` (set in the call's own task)."""
    token = _sample.set(index)
    try:
        yield
    finally:
        _sample.reset(token)


def check_samples(samples: object) -> int:
    """The number of samples, or ValueError saying what is wrong."""
    if isinstance(samples, bool) or not isinstance(samples, int) or not (
            1 <= samples <= MAX_SAMPLES):
        raise ValueError(f"samples per criterion must be a whole number from 1 to "
                         f"{MAX_SAMPLES}, got {samples!r}")
    return samples


def majority(choices: Sequence[str | None]) -> str | None:
    """The choice most samples gave (failed samples, None, do not vote); ``TIE`` when two or
    more choices share the top count; None when no sample answered. For binary criteria:
    multi-choice samples combine by ``grading.panel_options.combine_options``."""
    counts = Counter(c for c in choices if c is not None)
    if not counts:
        return None
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return TIE
    return ranked[0][0]


TIE = "\x00tie"  # never a verdict nor an option label (labels are printable text)


def tally(choices: Sequence[str | None]) -> str:
    """``MET 2, UNMET 1`` (and ``1 failed``), most frequent first, equal counts in
    alphabetical order (the same words whatever order the samples answered in)."""
    counts = Counter(c for c in choices if c is not None)
    parts = [f"{choice} {count}"
             for choice, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    failed = sum(c is None for c in choices)
    if failed:
        parts.append(f"{failed} failed")
    return ", ".join(parts)
