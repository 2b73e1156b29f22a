"""Money and counts in words: one way to say a cost, known or not, and plural nouns."""

from __future__ import annotations


def cost_text(known: float, unknown_count: int, graded: int) -> str:
    """A run's cost so far: "—" before any grade, "unknown" while any grade had no price
    (never a made-up $0), the sum when every grade's cost is known."""
    if graded <= 0 and not unknown_count:
        return "—"
    if not unknown_count:
        return f"${known:,.4f}"
    if unknown_count >= graded and not known:
        return "unknown (no price)"
    return f"${known:,.4f} + unknown ({plural(unknown_count, 'grade')} without a price)"


def estimate_cost_text(cost: float | None) -> str:
    return "unknown (no price)" if cost is None else f"${cost:,.4f}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 criterion``, ``2 criteria``, ``1,000 runs``."""
    word = noun if count == 1 else (nouns or noun + "s")
    return f"{count:,} {word}"
