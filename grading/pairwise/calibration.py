"""Few-shot calibration for a pairwise judge: pairs people decided, shown as worked examples.

Pure: candidates in, examples out, as ``grading.calibration`` for single grading. Per
criterion (holistic: the one whole-rubric question), :func:`choose_pair_examples` picks up to
``k`` pairs people decided, balanced between A, B and TIE in an order fixed by a seed. An
example is shown in the order of the question it goes with: when the judge is shown B first,
each example's two responses are swapped too and people's answer mapped with them, so the
examples teach no side. A pair is never its own example (:meth:`PairExampleSet.for_pair`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from grading.calibration import NO_NOTE, _rank, _shares
from grading.errors import ConfigurationError
from grading.pairwise.prompts import EXAMPLE_BLOCK_TAGS, PAIR_TAGS
from grading.prompts import neutralize

SIDES = ("A", "B", "TIE")
EXAMPLE_TAGS = (*PAIR_TAGS, *EXAMPLE_BLOCK_TAGS)
_SWAP = {"A": "B", "B": "A", "TIE": "TIE"}


@dataclass(frozen=True)
class PairExample:
    """A pair people decided on one criterion: ``preference`` is A (``first`` is better),
    B (``second``) or TIE, with the reviewer's note as the reason."""

    key: Hashable
    first: str
    second: str
    preference: str
    query: str | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.preference not in SIDES:
            raise ValueError(f"an example's preference is A, B or TIE, not {self.preference!r}")

    def swapped(self) -> PairExample:
        return PairExample(self.key, self.second, self.first, _SWAP[self.preference],
                           self.query, self.reason)

    def same_texts(self, a: str, b: str) -> bool:
        """The same two texts as the pair (a, b), in either order."""
        mine, theirs = {self.first.strip(), self.second.strip()}, {a.strip(), b.strip()}
        return mine == theirs


@dataclass(frozen=True)
class PairExampleSet:
    examples: tuple[PairExample, ...]
    requested: int = 0
    note: str = ""

    def for_pair(self, a: str, b: str) -> tuple[PairExample, ...]:
        """The examples to show when comparing (a, b): never the same two texts."""
        return tuple(e for e in self.examples if not e.same_texts(a, b))


@dataclass(frozen=True)
class PairExamples:
    """One :class:`PairExampleSet` per question (criterion, or the one holistic question),
    pinned to the questions' requirement texts so they are never shown with another."""

    sets: tuple[PairExampleSet, ...]
    requirements: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.sets) != len(self.requirements):
            raise ValueError("one example set per criterion is needed")

    def check(self, requirements: Sequence[str]) -> None:
        if tuple(requirements) != self.requirements:
            raise ConfigurationError(
                f"the examples were chosen for {len(self.requirements)} criteria that differ "
                f"from the {len(requirements)} being compared; choose the examples for this "
                "rubric")

    @property
    def keys(self) -> frozenset[Hashable]:
        return frozenset(e.key for s in self.sets for e in s.examples)


def choose_pair_examples(candidates: Sequence[PairExample], *, k: int,
                         seed: int | str = 0) -> PairExampleSet:
    """Up to ``k`` examples balanced between A, B and TIE (a short side topped up from the
    others), in an order fixed by ``seed``."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1, got {k!r}")
    keys = [c.key for c in candidates]
    if len(set(keys)) != len(keys):
        raise ValueError("a pair is a candidate twice")
    groups = {side: sorted((c for c in candidates if c.preference == side),
                           key=lambda c: _rank(seed, c.key)) for side in SIDES}
    taken = _shares(SIDES, {s: len(g) for s, g in groups.items()}, k)
    picked = sorted((e for s in SIDES for e in groups[s][:taken[s]]),
                    key=lambda c: _rank(seed, c.key))
    note = ""
    if len(picked) < k:
        counts = ", ".join(f"{len(groups[s])} {s}" for s in SIDES)
        note = f"only {len(picked)} decided pair(s) for {k} requested ({counts})"
    return PairExampleSet(tuple(picked), k, note)


def _escape(text: str) -> str:
    return neutralize(text, tags=EXAMPLE_TAGS)


def render_pair_examples(examples: Sequence[PairExample], *, swapped: bool = False) -> str:
    """The worked-examples block ("" when none); ``swapped``: the question shows B first,
    so each example does too. Reviewed text is delimited and cannot close its tags."""
    if not examples:
        return ""
    blocks = []
    for number, example in enumerate(examples, start=1):
        shown = example.swapped() if swapped else example
        query = (f"<query>\n{_escape(shown.query)}\n</query>\n"
                 if shown.query and shown.query.strip() else "")
        blocks.append(
            f'<example number="{number}">\n{query}'
            f"<response_a>\n{_escape(shown.first)}\n</response_a>\n"
            f"<response_b>\n{_escape(shown.second)}\n</response_b>\n"
            f"<human_preference>{shown.preference}</human_preference>\n"
            f"<reason>{_escape(shown.reason.strip()) or NO_NOTE}</reason>\n</example>")
    return ("People compared these pairs of responses on the same criterion. Decide the new "
            "pair the way they did; the examples are not the pair to compare, which follows "
            "the examples.\n<examples>\n" + "\n".join(blocks) + "\n</examples>")
