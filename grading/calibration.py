"""Few-shot calibration: reviewed responses shown to a judge as worked examples.

Pure: candidates in, examples out. For one criterion, :func:`choose_examples` picks up to ``k``
responses people have reviewed, balanced between MET and UNMET, in an order fixed by a seed, so
a run that records ``(seed, chosen ids)`` can be reproduced and audited. A response is never its
own example: :meth:`ExampleSet.for_response` swaps it for a reserve of the same verdict (or
drops it when there is none), and the run's held-out set is every response it did not use.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from grading.errors import ConfigurationError
from grading.prompts import RESERVED_TAGS, neutralize
from grading.types import Criterion, Verdict

# The examples block's own tags, escaped like the response's: with the same folding of
# look-alike and invisible characters (an ASCII-only pattern let "\uff1c/example>" through).
EXAMPLE_TAGS = (*RESERVED_TAGS, "example", "examples", "human_verdict", "reason")


@dataclass(frozen=True)
class ReviewedExample:
    """One reviewed response on one criterion: what the judge is shown as a worked example."""

    response_key: Hashable
    verdict: Verdict
    output: str
    query: str | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        verdict = Verdict.parse(self.verdict)
        if verdict is Verdict.CANNOT_ASSESS:
            raise ValueError("an example must be MET or UNMET, not CANNOT_ASSESS")
        object.__setattr__(self, "verdict", verdict)


@dataclass(frozen=True)
class ExampleSet:
    """The examples chosen for one criterion, plus one reserve per verdict."""

    examples: tuple[ReviewedExample, ...]
    reserves: tuple[ReviewedExample, ...] = field(default=())
    requested: int = 0
    note: str = ""

    @property
    def keys(self) -> tuple[Hashable, ...]:
        return tuple(e.response_key for e in self.examples)

    def for_response(self, response_key: Hashable,
                     output: str | None = None) -> tuple[ReviewedExample, ...]:
        """The examples to show when grading ``response_key``: never the response itself.

        With ``output``, an example whose text is the very same (a duplicate uploaded under
        another id) counts as the response too: showing it would hand the judge the answer.
        """
        def own(example: ReviewedExample) -> bool:
            return example.response_key == response_key or (
                output is not None and example.output.strip() == output.strip())

        if not any(own(e) for e in self.examples):
            return self.examples
        chosen: list[ReviewedExample] = []
        for example in self.examples:
            if not own(example):
                chosen.append(example)
                continue
            reserve = next((r for r in self.reserves if r.verdict is example.verdict
                            and not own(r) and r not in chosen), None)
            if reserve is not None:
                chosen.append(reserve)
        return tuple(chosen)


@dataclass(frozen=True)
class RubricExamples:
    """One :class:`ExampleSet` per criterion of a rubric, in the rubric's order.

    ``requirements`` pins each set to its criterion's text, so examples can never be shown
    with another criterion than the one people judged (a reordered or edited rubric is
    refused instead).
    """

    sets: tuple[ExampleSet, ...]
    requirements: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.sets) != len(self.requirements):
            raise ValueError("one example set per criterion is needed")

    def check(self, criteria: Sequence[Criterion]) -> None:
        """Refuse criteria these examples were not chosen for."""
        given = tuple(c.requirement for c in criteria)
        rated = [i for i, (c, s) in enumerate(zip(criteria, self.sets, strict=False), 1)
                 if c.options is not None and (s.examples or s.reserves)]
        if rated:
            raise ConfigurationError(
                f"criterion {rated[0]} is multi-choice: reviewed examples carry MET/UNMET "
                "verdicts, not options, so they cannot calibrate it yet; leave its examples "
                "empty")
        if given != self.requirements:
            raise ConfigurationError(
                f"the examples were chosen for {len(self.requirements)} criteria that differ "
                f"from the {len(given)} being graded; choose the examples for this rubric")

    def for_response(self, response_key: Hashable, output: str | None = None
                     ) -> tuple[tuple[ReviewedExample, ...], ...]:
        """Per criterion, the examples to show when grading this response (never itself)."""
        return tuple(s.for_response(response_key, output) for s in self.sets)

    @property
    def response_keys(self) -> frozenset[Hashable]:
        """Every response shown as an example (reserves included): not held out."""
        return frozenset(e.response_key for s in self.sets
                         for e in (*s.examples, *s.reserves))


def _rank(seed: int | str, key: Hashable) -> str:
    return hashlib.sha256(f"{seed}\x00{key!r}".encode()).hexdigest()


def choose_examples(
    candidates: Sequence[ReviewedExample], *, k: int, seed: int | str = 0,
) -> ExampleSet:
    """Up to ``k`` examples balanced between MET and UNMET (the odd one goes to the verdict
    with more candidates); a short class is topped up from the other one."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1, got {k!r}")
    seen: set[Hashable] = set()
    unique = []
    for candidate in candidates:
        if candidate.response_key in seen:
            raise ValueError(f"response {candidate.response_key!r} is a candidate twice")
        seen.add(candidate.response_key)
        unique.append(candidate)
    by_verdict = {
        verdict: sorted((c for c in unique if c.verdict is verdict),
                        key=lambda c: _rank(seed, c.response_key))
        for verdict in (Verdict.MET, Verdict.UNMET)
    }
    met, unmet = by_verdict[Verdict.MET], by_verdict[Verdict.UNMET]
    bigger, smaller = (met, unmet) if len(met) >= len(unmet) else (unmet, met)
    take_smaller = min(len(smaller), k // 2)
    take_bigger = min(len(bigger), k - take_smaller)
    take_smaller = min(len(smaller), k - take_bigger)
    picked = bigger[:take_bigger] + smaller[:take_smaller]
    picked.sort(key=lambda c: _rank(seed, c.response_key))
    reserves = tuple(group[taken] for group, taken in ((met, _count(picked, Verdict.MET)),
                                                      (unmet, _count(picked, Verdict.UNMET)))
                     if len(group) > taken)
    notes = []
    if len(picked) < k:
        notes.append(f"only {len(picked)} reviewed example(s) for {k} requested "
                     f"({len(met)} MET, {len(unmet)} UNMET)")
    elif take_smaller < k // 2:
        notes.append(f"unbalanced: {_count(picked, Verdict.MET)} MET and "
                     f"{_count(picked, Verdict.UNMET)} UNMET (too few of one verdict reviewed)")
    return ExampleSet(tuple(picked), reserves, k, "; ".join(notes))


def _count(examples: Sequence[ReviewedExample], verdict: Verdict) -> int:
    return sum(1 for e in examples if e.verdict is verdict)


def _escape(text: str) -> str:
    return neutralize(text, tags=EXAMPLE_TAGS)


def render_examples(examples: Sequence[ReviewedExample]) -> str:
    """The worked-examples block for a judge's prompt ("" when there are none).

    Reviewed text is untrusted like any response: it is delimited and cannot close its tags.
    """
    if not examples:
        return ""
    blocks = []
    for number, example in enumerate(examples, start=1):
        blocks.append(
            f'<example number="{number}">\n{_example_text(example)}'
            f"<human_verdict>{example.verdict.value}</human_verdict>\n"
            f"<reason>{_reason(example)}</reason>\n</example>"
        )
    return (
        "People reviewed these responses on the same criterion. Judge the new response the "
        "way they did; the examples are not the response to grade, which follows the "
        "examples.\n<examples>\n" + "\n".join(blocks) + "\n</examples>"
    )


NO_NOTE = "(the reviewer gave no reason)"


def _reason(example: ReviewedExample) -> str:
    return _escape(example.reason.strip()) or NO_NOTE


def _example_text(example: ReviewedExample) -> str:
    query = (f"<query>\n{_escape(example.query)}\n</query>\n"
             if example.query and example.query.strip() else "")
    return f"{query}<response>\n{_escape(example.output)}\n</response>\n"


def render_examples_by_criterion(
    per_criterion: Sequence[Sequence[ReviewedExample]],
) -> str:
    """The worked-examples block for a judge that sees every criterion at once (one-shot).

    Each example response appears once, with the people's verdict on each criterion (by
    number, from 1) it is an example for.
    """
    grouped: dict[Hashable, list[tuple[int, ReviewedExample]]] = {}
    for number, examples in enumerate(per_criterion, start=1):
        for example in examples:
            grouped.setdefault(example.response_key, []).append((number, example))
    if not grouped:
        return ""
    blocks = []
    for index, verdicts in enumerate(grouped.values(), start=1):
        lines = "".join(
            f'<human_verdict criterion="{number}">{example.verdict.value}</human_verdict>\n'
            f'<reason criterion="{number}">{_reason(example)}</reason>\n'
            for number, example in verdicts)
        blocks.append(f'<example number="{index}">\n{_example_text(verdicts[0][1])}'
                      f"{lines}</example>")
    return (
        "People reviewed these responses on some of the numbered criteria below; each example "
        "gives their verdict on those criteria. Judge the new response the way they did; the "
        "examples are not the response to grade, which follows the examples.\n"
        "<examples>\n" + "\n".join(blocks) + "\n</examples>"
    )
