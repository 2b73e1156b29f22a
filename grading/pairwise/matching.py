"""Pairing the responses of two sources to the same queries, by the user's id or by the query
text. Pure: items in, pairs out. Nothing is dropped silently: what has no partner is
returned, and pairs whose two texts are identical are set apart (reported, not judged)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from grading.errors import RubricWorkbenchError
from grading.text import normalize_to_grade_input
from grading.types import ToGradeInput

MatchBy = Literal["id", "query"]
MATCH_BY: tuple[str, ...] = ("id", "query")


class MatchingError(RubricWorkbenchError, ValueError):
    """The two sources cannot be paired (a row without the key, a key used twice, nothing in
    common); the message names the source, the row and what to do."""


@dataclass(frozen=True)
class Item:
    """One response of a source: where it is (``line 3``), its id, query and text."""

    location: str
    text: ToGradeInput
    id: str | None = None
    query: str | None = None


@dataclass(frozen=True)
class Pair:
    key: str
    a: Item
    b: Item

    @property
    def query(self) -> str | None:
        return self.a.query if self.a.query is not None else self.b.query


@dataclass(frozen=True)
class Matching:
    pairs: list[Pair]  # to judge
    identical: list[Pair]  # the same text on both sides: not judged
    only_a: list[Item]
    only_b: list[Item]


def _key(item: Item, by: MatchBy) -> str | None:
    value = item.id if by == "id" else item.query
    if value is None:
        return None
    return value.strip() if by == "id" else " ".join(value.split())


def _index(items: Sequence[Item], by: MatchBy, source: str) -> dict[str, Item]:
    found: dict[str, Item] = {}
    for item in items:
        key = _key(item, by)
        if not key:
            other = "query" if by == "id" else "id"
            raise MatchingError(
                f"{source}: {item.location} has no {by}; give every row a value for it, or match "
                f"by {other} instead")
        if key in found:
            raise MatchingError(
                f"{source}: {item.location} repeats the {by} {key[:80]!r} of "
                f"{found[key].location}; each {by} may appear once per file (remove or "
                f"rename the duplicate)")
        found[key] = item
    return found


def match(a: Sequence[Item], b: Sequence[Item], *, by: MatchBy = "id",
          a_name: str = "A", b_name: str = "B") -> Matching:
    """The pairs of ``a`` and ``b`` with the same key, in ``a``'s order."""
    if by not in MATCH_BY:
        raise ValueError(f"match by 'id' or 'query', not {by!r}")
    left, right = _index(a, by, a_name), _index(b, by, b_name)
    common = [key for key in left if key in right]
    if not common:
        other = "query" if by == "id" else "id"
        raise MatchingError(
            f"{a_name} and {b_name} have no {by} in common, so there is nothing to compare; "
            f"check that both files answer the same queries, or match by {other} "
            "instead")
    pairs, identical = [], []
    for key in common:
        pair = Pair(key, left[key], right[key])
        same = normalize_to_grade_input(pair.a.text) == normalize_to_grade_input(pair.b.text)
        (identical if same else pairs).append(pair)
    return Matching(pairs=pairs, identical=identical,
                    only_a=[item for key, item in left.items() if key not in right],
                    only_b=[item for key, item in right.items() if key not in left])
