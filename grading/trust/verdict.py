"""The short plain-language verdict on a judge, built from its figures.

It never claims more than an interval supports: an effect is named only when its 95%
interval excludes 0; otherwise "no ... effect detected" with the n it was looked for on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grading.trust.criterion_order import MIN_PER_GROUP
from grading.trust.figures import Figure
from grading.trust.pairwise_order import MIN_UNITS
from grading.trust.position import MIN_CHOICES


@dataclass(frozen=True)
class Named:
    """A figure of one criterion (or of the score): ``label`` names it in the sentence."""

    label: str
    figure: Figure
    unit: str = "MET rate"


def _num(value: float, signed: bool = False) -> str:
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _interval(f: Figure) -> str:
    return f"[{_num(f.low)} to {_num(f.high)}]" if f.low is not None else ""


def stability_phrase(samples: int, noisy: Sequence[str], measured: int) -> str:
    if samples < 2 or measured == 0:
        return "stability not measured (one run of this judge: re-run it to measure)"
    if noisy:
        return f"noisy on {', '.join(noisy)} across {samples} samples"
    return f"stable across {samples} samples"


def length_phrase(slopes: Sequence[Named]) -> str:
    measured = [s for s in slopes if s.figure.value is not None]
    if not measured:
        return "length effect not measured"
    found = [s for s in measured if s.figure.excludes_zero]
    if not found:
        n = max(s.figure.n for s in measured)
        return f"no length effect detected (n={n})"
    parts = []
    for s in found:
        side = "longer" if s.figure.value > 0 else "shorter"
        parts.append(f"{side} answers favoured on {s.label}: {_num(s.figure.value, True)} "
                     f"{s.unit} per 1,000 characters {_interval(s.figure)} (n={s.figure.n})")
    return "; ".join(parts)


def position_phrase(effects: Sequence[Named]) -> str | None:
    """Option position (first-shown minus chance); None: no shuffled options recorded."""
    if not effects:
        return None
    measured = [e for e in effects if e.figure.value is not None]
    if not measured:
        return (f"option position: can't tell yet (n={max(e.figure.n for e in effects)}; "
                f"need about {MIN_CHOICES})")
    found = [e for e in measured if e.figure.excludes_zero]
    if not found:
        return f"no position effect detected (n={max(e.figure.n for e in measured)})"
    parts = []
    for e in found:
        side = "first-shown option favoured" if e.figure.value > 0 else "first-shown option avoided"
        parts.append(f"{side} on {e.label}: {_num(e.figure.value, True)} share of choices "
                     f"{_interval(e.figure)} (n={e.figure.n})")
    return "; ".join(parts)


def order_phrase(effects: Sequence[Named]) -> str | None:
    """Criterion order in one-shot prompts (late minus early); None: never shuffled."""
    if not effects:
        return None
    measured = [e for e in effects if e.figure.value is not None]
    if not measured:
        return (f"criterion order: can't tell yet (n={max(e.figure.n for e in effects)}; "
                f"need about {MIN_PER_GROUP} in each half)")
    found = [e for e in measured if e.figure.excludes_zero]
    if not found:
        return f"no criterion-order effect detected (n={max(e.figure.n for e in measured)})"
    parts = []
    for e in found:
        side = "lower" if e.figure.value < 0 else "higher"
        parts.append(f"{e.label} judged {side} when listed late: {_num(e.figure.value, True)} "
                     f"{e.unit} late vs early {_interval(e.figure)} (n={e.figure.n})")
    return "; ".join(parts)


def pairwise_phrase(figure: Figure | None) -> str | None:
    """First-shown response in comparisons, minus chance; None: no comparisons judged."""
    if figure is None:
        return None
    if figure.value is None:
        return (f"pairwise order: can't tell yet (n={figure.n}; need about "
                f"{MIN_UNITS})")
    if not figure.excludes_zero:
        return f"no pairwise order effect detected (n={figure.n})"
    side = "first-shown response favoured" if figure.value > 0 else "second-shown response favoured"
    return (f"{side} in comparisons: {_num(figure.value, True)} share of picks "
            f"{_interval(figure)} (n={figure.n})")


def verdict(*, agreement: str | None, samples: int, noisy: Sequence[str],
            stability_measured: int, slopes: Sequence[Named],
            positions: Sequence[Named], orders: Sequence[Named] = (),
            pairwise: Figure | None = None) -> str:
    """"agrees with people ...; stable; longer answers favoured: ..." from the figures."""
    parts = [p for p in (
        agreement,
        stability_phrase(samples, noisy, stability_measured),
        length_phrase(slopes),
        position_phrase(positions),
        order_phrase(orders),
        pairwise_phrase(pairwise),
    ) if p]
    return "; ".join(parts)
