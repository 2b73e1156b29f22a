"""Few-shot calibration: reviewed responses shown to a judge as worked examples.

Pure: candidates in, examples out. For one criterion, :func:`choose_examples` picks up to ``k``
responses people have reviewed, balanced between MET and UNMET — or, on a multi-choice
criterion, between its options — in an order fixed by a seed, so a run that records
``(seed, chosen ids)`` can be reproduced and audited. A response is never its own example:
:meth:`ExampleSet.for_response` swaps it for a reserve of the same verdict or option (or drops
it when there is none), and the run's held-out set is every response it did not use.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from grading.errors import ConfigurationError
from grading.options import find_option
from grading.prompts import RESERVED_TAGS, neutralize
from grading.types import Criterion, Verdict

# The examples block's own tags, escaped like the response's: with the same folding of
# look-alike and invisible characters (an ASCII-only pattern let "\uff1c/example>" through).
EXAMPLE_TAGS = (*RESERVED_TAGS, "example", "examples", "human_verdict", "human_option",
                "reason")


@dataclass(frozen=True)
class ReviewedExample:
    """One reviewed response on one criterion: what the judge is shown as a worked example.

    On a multi-choice criterion ``option`` is the label people chose (``verdict`` is then
    MET, as stored beside a scored option)."""

    response_key: Hashable
    verdict: Verdict
    output: str
    query: str | None = None
    reason: str = ""
    option: str | None = None

    def __post_init__(self) -> None:
        verdict = Verdict.parse(self.verdict)
        if verdict is Verdict.CANNOT_ASSESS:
            raise ValueError("an example must be MET or UNMET (or a scored option), not "
                             "CANNOT_ASSESS")
        if self.option is not None and verdict is not Verdict.MET:
            raise ValueError("an option example is stored with the verdict MET")
        object.__setattr__(self, "verdict", verdict)

    @property
    def choice(self) -> Verdict | str:
        """What people decided: the option label, or the verdict on a binary criterion."""
        return self.option if self.option is not None else self.verdict


@dataclass(frozen=True)
class ExampleSet:
    """The examples chosen for one criterion, plus one reserve per verdict (or option) shown."""

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
            reserve = next((r for r in self.reserves if r.choice == example.choice
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
        """Refuse criteria these examples were not chosen for: another wording, or choices
        that are not the criterion's (an option on a binary criterion, MET/UNMET or an
        unknown label on a multi-choice one)."""
        given = tuple(c.requirement for c in criteria)
        for number, (criterion, chosen) in enumerate(
                zip(criteria, self.sets, strict=False), start=1):
            for example in (*chosen.examples, *chosen.reserves):
                problem = _mismatch(criterion, example)
                if problem:
                    raise ConfigurationError(
                        f"criterion {number} ('{criterion.name or criterion.requirement}'): "
                        f"{problem}; choose the examples for this rubric again")
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


def _mismatch(criterion: Criterion, example: ReviewedExample) -> str:
    if criterion.options is None:
        return ("" if example.option is None else
                f"an example chose the option {example.option!r}, but it is MET/UNMET")
    if example.option is None:
        return "an example has a MET/UNMET verdict, but the criterion is rated by options"
    index = find_option(criterion.options, example.option)
    if index is None or criterion.options[index].na:
        labels = ", ".join(repr(o.label) for o in criterion.options if not o.na)
        return f"an example chose {example.option!r}, which is not one of its options ({labels})"
    return ""


def _rank(seed: int | str, key: Hashable) -> str:
    return hashlib.sha256(f"{seed}\x00{key!r}".encode()).hexdigest()


def choose_examples(
    candidates: Sequence[ReviewedExample], *, k: int, seed: int | str = 0,
    options: Sequence[str] | None = None,
) -> ExampleSet:
    """Up to ``k`` examples balanced between MET and UNMET, or between ``options`` (a
    multi-choice criterion's scored labels, in the rubric's order): each choice gets an equal
    share, the remainder going to the choices with more candidates (on a tie, the earlier
    one); a short choice is topped up from the others. One reserve per choice that has
    examples and a candidate left over."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1, got {k!r}")
    seen: set[Hashable] = set()
    unique = []
    for candidate in candidates:
        if candidate.response_key in seen:
            raise ValueError(f"response {candidate.response_key!r} is a candidate twice")
        seen.add(candidate.response_key)
        unique.append(candidate)
    choices: tuple[Verdict | str, ...] = (
        (Verdict.MET, Verdict.UNMET) if options is None else tuple(options))
    stray = [c.choice for c in unique if c.choice not in choices]
    if stray:
        raise ValueError(f"a candidate chose {stray[0]!r}, which is none of {choices!r}")
    groups = {choice: sorted((c for c in unique if c.choice == choice),
                             key=lambda c: _rank(seed, c.response_key))
              for choice in choices}
    taken = _shares(choices, {c: len(g) for c, g in groups.items()}, k)
    picked = [e for choice in choices for e in groups[choice][:taken[choice]]]
    picked.sort(key=lambda c: _rank(seed, c.response_key))
    # A reserve only ever stands in for an example of its own choice: none for a choice
    # without examples (it would be held out of agreement for nothing).
    reserves = tuple(groups[c][taken[c]] for c in choices if 0 < taken[c] < len(groups[c]))
    counts = ", ".join(f"{len(groups[c])} {_word(c)}" for c in choices)
    notes = []
    if len(picked) < k:
        notes.append(f"only {len(picked)} reviewed example(s) for {k} requested ({counts})")
    elif min(taken.values()) < k // len(choices):
        chosen = " and ".join(f"{taken[c]} {_word(c)}" for c in choices)
        which = "verdict" if options is None else "option"
        notes.append(f"unbalanced: {chosen} (too few of one {which} reviewed)")
    return ExampleSet(tuple(picked), reserves, k, "; ".join(notes))


def _shares(choices: Sequence[Verdict | str], available: dict[Verdict | str, int],
            k: int) -> dict[Verdict | str, int]:
    """How many of each choice to take: round by round one more of each choice that has
    any left, the choices with more candidates first, until ``k`` are taken."""
    order = sorted(choices, key=lambda c: -available[c])  # stable: ties keep their order
    taken = dict.fromkeys(choices, 0)
    total = 0
    while total < k and any(taken[c] < available[c] for c in order):
        for choice in order:
            if total < k and taken[choice] < available[choice]:
                taken[choice] += 1
                total += 1
    return taken


def _word(choice: Verdict | str) -> str:
    return choice.value if isinstance(choice, Verdict) else repr(choice)


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
            f"{_decided(example)}\n"
            f"<reason>{_reason(example)}</reason>\n</example>"
        )
    return (
        "People reviewed these responses on the same criterion. Judge the new response the "
        "way they did; the examples are not the response to grade, which follows the "
        "examples.\n<examples>\n" + "\n".join(blocks) + "\n</examples>"
    )


NO_NOTE = "(the reviewer gave no reason)"


def _decided(example: ReviewedExample, attributes: str = "") -> str:
    """People's answer as the judge is asked to give it: the verdict, or the option's label
    as the options list shows it (examples never carry an NA option)."""
    if example.option is None:
        return f"<human_verdict{attributes}>{example.verdict.value}</human_verdict>"
    return f"<human_option{attributes}>{_escape(example.option)}</human_option>"


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

    Each example response appears once, with the people's verdict (or chosen option) on each
    criterion (by number, from 1) it is an example for.
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
            _decided(example, f' criterion="{number}"') + "\n"
            f'<reason criterion="{number}">{_reason(example)}</reason>\n'
            for number, example in verdicts)
        blocks.append(f'<example number="{index}">\n{_example_text(verdicts[0][1])}'
                      f"{lines}</example>")
    return (
        "People reviewed these responses on some of the numbered criteria below; each example "
        "gives their verdict (or chosen option) on those criteria. Judge the new response the "
        "way they did; the examples are not the response to grade, which follows the "
        "examples.\n"
        "<examples>\n" + "\n".join(blocks) + "\n</examples>"
    )
