"""Which column of an uploaded file holds what: guessed from the column names and what the
first rows hold.

Names decide when they say it ("completion", "answer text", "item_id"); the content decides
otherwise, and vetoes a name that does not fit: a column of short unique tokens is an id
(never the response), and the response is the longest free-text column left.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TEXT_WORDS = ("text", "output", "response", "completion", "answer", "reply", "generation")
QUERY_WORDS = ("query", "prompt", "question", "input", "instruction")
ID_WORDS = ("id", "uid", "uuid", "key", "external_id", "response_id")
THINKING_WORDS = ("thinking", "reasoning")
REFERENCE_WORDS = ("reference", "reference_answer", "ground_truth", "gold", "expected",
                   "expected_answer", "expected_output", "gold_answer")
# "answer" is the reference only beside a column that is clearly the response (verifiers'
# question / answer / completion); alone, it is the response.
RESPONSE_WORDS = tuple(w for w in TEXT_WORDS if w != "answer")
SAMPLE_ROWS = 200
MAX_TOKEN = 64  # an id longer than this is not a short token


@dataclass(frozen=True)
class Guess:
    text: str | None
    query: str | None
    id: str | None
    thinking: str | None
    reference: str | None = None


def words(name: str) -> list[str]:
    """``"Item ID"``, ``item_id``, ``itemId`` -> ["item", "id"]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


@dataclass(frozen=True)
class _Column:
    name: str
    words: tuple[str, ...]
    values: tuple[str, ...]  # the non-empty cells of the sampled rows

    @property
    def token_like(self) -> bool:
        """Short values without spaces in every sampled row (ids, codes, labels)."""
        return bool(self.values) and all(
            len(v) <= MAX_TOKEN and not any(c.isspace() for c in v) for v in self.values)

    @property
    def tokens(self) -> bool:
        """Short unique tokens in every sampled row: an id."""
        return (len(self.values) >= 2 and len(set(self.values)) == len(self.values)
                and self.token_like)

    @property
    def mean_length(self) -> float:
        return sum(map(len, self.values)) / len(self.values) if self.values else 0.0

    def named(self, candidates: Sequence[str]) -> int | None:
        """How well the name says one of ``candidates``: 0 exactly, 1 one of its words."""
        if self.name.strip().lower() in candidates or "_".join(self.words) in candidates:
            return 0
        if any(w in candidates for w in self.words):
            return 1
        return None


def _cell(value: Any) -> str:
    return "" if value is None else str(value).strip()


def guess_columns(columns: Sequence[str], rows: Sequence[Any] = ()) -> Guess:
    """Each role's column (None when none fits). ``rows``: the first rows, as dicts."""
    sample = [row for row in list(rows)[:SAMPLE_ROWS] if isinstance(row, Mapping)]
    table = [_Column(c, tuple(words(c)), tuple(v for v in (_cell(r.get(c)) for r in sample)
                                                  if v)) for c in columns]
    taken: set[str] = set()

    def by_name(candidates: Sequence[str], fits) -> _Column | None:
        """A column named exactly so wins whatever it holds (a duplicate id is a problem to
        report, not a reason to guess again); one with the word in its name must fit."""
        found = [(rank, -col.mean_length, index, col) for index, col in enumerate(table)
                 if col.name not in taken and (rank := col.named(candidates)) is not None
                 and (rank == 0 or fits(col))]
        if not found:
            return None
        choice = min(found, key=lambda f: f[:3])[3]
        taken.add(choice.name)
        return choice

    has_rows = len(sample) >= 2
    ident = by_name(ID_WORDS, lambda c: not has_rows or c.token_like)
    if ident is None and len(sample) >= 3:  # no id by name: the first column of unique tokens
        ident = next((c for c in table if c.tokens and c.named(
            TEXT_WORDS + QUERY_WORDS + THINKING_WORDS + REFERENCE_WORDS) is None), None)
        if ident is not None:
            taken.add(ident.name)
    free = (lambda c: not c.tokens) if has_rows else (lambda c: True)
    thinking = by_name(THINKING_WORDS, free)
    query = by_name(QUERY_WORDS, free)
    # Before the response: "expected_answer" names the reference, not the response; a
    # reference may be short unique tokens ("42", "B"), so its content vetoes nothing.
    reference = by_name(REFERENCE_WORDS, lambda c: True) or _answer_as_reference(table, taken)
    text = by_name(TEXT_WORDS, free)
    if text is None and has_rows:  # the longest free-text column left is the response
        left = [c for c in table if c.name not in taken and c.values and not c.tokens]
        text = max(left, key=lambda c: c.mean_length, default=None)
    return Guess(text=text.name if text else None, query=query.name if query else None,
                 id=ident.name if ident else None,
                 thinking=thinking.name if thinking else None,
                 reference=reference.name if reference else None)


def _answer_as_reference(table: Sequence[_Column], taken: set[str]) -> _Column | None:
    """A column named exactly "answer" when another one is named for the response."""
    left = [c for c in table if c.name not in taken]
    answer = next((c for c in left if c.named(("answer",)) == 0), None)
    if answer is None or not any(c is not answer and c.named(RESPONSE_WORDS) is not None
                                 for c in left):
        return None
    taken.add(answer.name)
    return answer


def looks_like_ids(column: str, rows: Sequence[Any]) -> bool:
    """Whether a column picked as the response holds short unique tokens (ids, codes)."""
    sample = [row for row in list(rows)[:SAMPLE_ROWS] if isinstance(row, Mapping)]
    values = tuple(v for v in (_cell(r.get(column)) for r in sample) if v)
    return len(sample) >= 3 and _Column(column, (), values).tokens
