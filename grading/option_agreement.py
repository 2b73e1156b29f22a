"""Agreement on a multi-choice criterion: verdicts are option labels, not MET/UNMET.

Sources are given as in grading/agreement.py (a mapping ``key -> label``, or sequences aligned
by position; ``None`` is "no verdict"). A criterion's scale (``OptionScale``) is its options in
the order the rubric lists them, and whether they are ordinal or nominal.

Conventions, the same as grading/agreement.py's for CANNOT_ASSESS:
- Only the scored options are classes. An NA option (``na=True``) and CANNOT_ASSESS are
  abstentions: a shared key where either side abstained is left out of the pairs and counted
  in ``excluded_cannot_assess``; in alpha, an abstaining value is left out and counted there.
- A label that is no option of the criterion is an error naming it and the options, never
  silently dropped. Labels are compared as the graders compare them (case and outer spaces
  ignored: ``grading.options.label_key``).
- Ordinal criteria: quadratic-weighted Cohen's kappa (scikit-learn's
  ``cohen_kappa_score(weights="quadratic")``) and Krippendorff's alpha with the ordinal
  metric. Nominal: Cohen's kappa and alpha nominal. The order of an ordinal scale is the
  rubric's listing of its scored options (worst to best or best to worst: the figures are
  the same either way); their values do not enter the figures.
- Source A is the reference: rows of the confusion matrix, one row and column per scored
  option in the rubric's order.
- A figure that cannot be computed is ``None`` and ``note`` says why; never NaN:
  - kappa when both sources gave one and the same option on every pair (no disagreement is
    possible by chance: kappa is 0/0, and scikit-learn returns NaN);
  - alpha with fewer than 2 sources, fewer than 2 pairable units, or a single option
    everywhere, as for binary criteria.
- Bootstrap intervals (``kappa_interval``, ``alpha_interval``) resample the pairs (or the
  pairable units) with replacement through ``grading.bootstrap``, seeded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grading.agreement import MultiSourceAgreement, align_sources
from grading.bootstrap import Interval, bootstrap_interval
from grading.options import CriterionOption, ScaleType, label_key
from grading.types import Verdict

ABSTAIN = -1  # an NA option or CANNOT_ASSESS, once parsed

KAPPA_NAMES = {"ordinal": "quadratic-weighted kappa", "nominal": "Cohen's kappa"}
ALPHA_NAMES = {"ordinal": "Krippendorff's alpha (ordinal)",
               "nominal": "Krippendorff's alpha (nominal)"}


@dataclass(frozen=True)
class OptionScale:
    """A multi-choice criterion as the agreement figures see it."""

    options: tuple[CriterionOption, ...]
    scale_type: ScaleType = "ordinal"
    criterion: str = ""  # its name, for messages

    def __post_init__(self) -> None:
        if self.scale_type not in KAPPA_NAMES:
            raise ValueError(f"scale_type must be 'ordinal' or 'nominal', got "
                             f"{self.scale_type!r}")
        if not self.labels:
            raise ValueError(f"{self._where()} has no option that is not NA")

    @classmethod
    def of(cls, criterion: Any) -> OptionScale | None:
        """The scale of a ``grading.Criterion`` (or anything with ``options`` and
        ``scale_type``); None for a binary criterion. Options may be ``CriterionOption`` or
        dicts with ``label``, ``value`` and ``na``, as stored."""
        options = getattr(criterion, "options", None)
        if not options:
            return None
        parsed = tuple(o if isinstance(o, CriterionOption) else CriterionOption(**o)
                       for o in options)
        name = getattr(criterion, "name", None) or getattr(criterion, "label", None) or ""
        return cls(parsed, getattr(criterion, "scale_type", None) or "ordinal", name)

    @property
    def labels(self) -> tuple[str, ...]:
        """The scored options' labels, in the rubric's order: the classes of the figures."""
        return tuple(o.label for o in self.options if not o.na)

    @property
    def kappa_name(self) -> str:
        return KAPPA_NAMES[self.scale_type]

    @property
    def alpha_name(self) -> str:
        return ALPHA_NAMES[self.scale_type]

    def _where(self) -> str:
        return f"criterion {self.criterion!r}" if self.criterion else "the criterion"

    def parse(self, value: object) -> int:
        """The class index of a verdict (its scored option's position), or ``ABSTAIN``."""
        if isinstance(value, Verdict):
            if value is Verdict.CANNOT_ASSESS:
                return ABSTAIN
            value = value.value
        if not isinstance(value, str):
            raise ValueError(f"{self._where()}: a verdict must be an option label, got "
                             f"{value!r}")
        wanted = label_key(value)
        scored = 0
        for option in self.options:
            if label_key(option.label) == wanted:
                return ABSTAIN if option.na else scored
            scored += 0 if option.na else 1
        if wanted.upper().replace(" ", "_").replace("-", "_") == "CANNOT_ASSESS":
            return ABSTAIN
        raise ValueError(f"{self._where()} has no option {value!r}; its options are "
                         + ", ".join(repr(o.label) for o in self.options))


@dataclass(frozen=True)
class OptionConfusion:
    """Counts of option pairs: rows are source A, columns source B, in ``labels`` order."""

    labels: tuple[str, ...]
    rows: tuple[tuple[int, ...], ...]

    @property
    def total(self) -> int:
        return sum(map(sum, self.rows))


@dataclass(frozen=True)
class OptionPairwiseAgreement:
    """How far source B agrees with source A on a multi-choice criterion.

    ``kappa`` is quadratic-weighted on an ordinal scale, unweighted on a nominal one
    (``metric`` names it); ``macro_f1`` is the mean F1 over the options either source chose.
    """

    scale_type: ScaleType
    pairs_used: int
    only_in_a: int
    only_in_b: int
    excluded_cannot_assess: int
    percent_agreement: float | None
    kappa: float | None
    macro_f1: float | None
    confusion: OptionConfusion
    note: str

    @property
    def metric(self) -> str:
        return KAPPA_NAMES[self.scale_type]

    @property
    def shared(self) -> int:
        return self.pairs_used + self.excluded_cannot_assess

    # The names a binary PairwiseAgreement uses, so tables sort and show both alike.
    @property
    def cohens_kappa(self) -> float | None:
        return self.kappa

    @property
    def balanced_f1(self) -> float | None:
        return self.macro_f1


@dataclass(frozen=True, kw_only=True)
class OptionMultiSourceAgreement(MultiSourceAgreement):
    """Krippendorff's alpha (ordinal or nominal metric) over the scored options: the binary
    figure's counts, on the criterion's scale."""

    scale_type: ScaleType

    @property
    def metric(self) -> str:
        return ALPHA_NAMES[self.scale_type]


Source = Mapping[Any, object] | Sequence[object]


def _parsed(sources: Sequence[Source], scale: OptionScale) -> list[dict[Hashable, int]]:
    return [{k: scale.parse(v) for k, v in s.items()} for s in align_sources(list(sources))]


def compare_options(a: Source, b: Source, scale: OptionScale) -> OptionPairwiseAgreement:
    """Percent agreement, kappa, macro-F1 and confusion matrix of B against A."""
    keyed_a, keyed_b = _parsed([a, b], scale)
    shared = [k for k in keyed_a if k in keyed_b]
    pairs = [(keyed_a[k], keyed_b[k]) for k in shared]
    used = [(x, y) for x, y in pairs if ABSTAIN not in (x, y)]
    size = len(scale.labels)
    counts = Counter(used)
    rows = tuple(tuple(counts[i, j] for j in range(size)) for i in range(size))
    base = {
        "scale_type": scale.scale_type, "pairs_used": len(used),
        "only_in_a": len(keyed_a) - len(shared), "only_in_b": len(keyed_b) - len(shared),
        "excluded_cannot_assess": len(pairs) - len(used),
        "confusion": OptionConfusion(scale.labels, rows),
    }
    if not used:
        why = ("no key has a verdict from both sources" if not pairs else
               f"all {len(pairs)} shared keys have NA or CANNOT_ASSESS on at least one side")
        return OptionPairwiseAgreement(**base, percent_agreement=None, kappa=None,
                                       macro_f1=None, note=f"no pairs to compare: {why}")
    percent, kappa, macro = option_pair_scores(rows, scale.scale_type)
    notes = []
    if kappa is None:
        only = next(scale.labels[i] for i in range(size) if rows[i][i])
        notes.append(f"{scale.kappa_name} undefined: every pair is {only!r} in both sources, "
                     "so no disagreement is expected by chance (percent agreement is 100%)")
    return OptionPairwiseAgreement(**base, percent_agreement=percent, kappa=kappa,
                                   macro_f1=macro, note="; ".join(notes))


def option_pair_scores(rows: Sequence[Sequence[int]], scale_type: str
                       ) -> tuple[float | None, float | None, float | None]:
    """(percent agreement, kappa, macro-F1) from a square confusion matrix; None where
    undefined. Integer sums, so "no chance disagreement" is exact."""
    size = len(rows)
    n = sum(map(sum, rows))
    if n == 0:
        return None, None, None
    row_sums = [sum(row) for row in rows]
    col_sums = [sum(rows[i][j] for i in range(size)) for j in range(size)]
    weight = ((lambda i, j: (i - j) ** 2) if scale_type == "ordinal"
              else (lambda i, j: int(i != j)))
    observed = sum(weight(i, j) * rows[i][j] for i in range(size) for j in range(size))
    # n times the expected weighted disagreement: sum w * row * col / n, kept in integers
    expected = sum(weight(i, j) * row_sums[i] * col_sums[j]
                   for i in range(size) for j in range(size))
    kappa = None if expected == 0 else 1 - n * observed / expected
    f1 = [2 * rows[i][i] / (row_sums[i] + col_sums[i]) for i in range(size)
          if row_sums[i] + col_sums[i]]
    agreeing = sum(rows[i][i] for i in range(size))
    return 100 * agreeing / n, kappa, sum(f1) / len(f1)


def options_alpha(sources: Sequence[Source], scale: OptionScale) -> OptionMultiSourceAgreement:
    """Krippendorff's alpha over the options from any number of sources; missing allowed."""
    units: dict[Hashable, list[int]] = {}
    excluded = 0
    for source in _parsed(sources, scale):
        for key, value in source.items():
            values = units.setdefault(key, [])
            if value == ABSTAIN:
                excluded += 1
            else:
                values.append(value)
    pairable = [values for values in units.values() if len(values) >= 2]
    result = {"scale_type": scale.scale_type, "sources": len(sources), "units": len(units),
              "pairable_units": len(pairable),
              "values_used": sum(len(values) for values in pairable),
              "excluded_cannot_assess": excluded}
    if len(sources) < 2:
        return OptionMultiSourceAgreement(
            **result, alpha=None, note=f"alpha needs at least 2 sources, got {len(sources)}")
    if len(pairable) < 2:
        return OptionMultiSourceAgreement(
            **result, alpha=None, note="alpha needs at least 2 units with an option from two "
            f"or more sources, found {len(pairable)}")
    value = alpha_from_units(pairable, len(scale.labels), scale.scale_type)
    if value is None:
        only = scale.labels[pairable[0][0]]
        return OptionMultiSourceAgreement(
            **result, alpha=None, note=f"alpha undefined: every pairable verdict is {only!r}, "
            "so no disagreement is expected by chance")
    return OptionMultiSourceAgreement(**result, alpha=value, note="")


def alpha_from_units(units: Sequence[Sequence[int]], size: int, scale_type: str
                     ) -> float | None:
    """Alpha from pairable units (each a list of class indices, two or more); None when one
    class is everywhere. Krippendorff's coincidence-matrix form, with the ordinal metric
    ``(sum of n_g for g from c to k - (n_c + n_k) / 2)^2`` or the nominal one."""
    coincidence = [[0.0] * size for _ in range(size)]
    for values in units:
        counts = Counter(values)
        scale = 1 / (len(values) - 1)
        for c, nc in counts.items():
            for k, nk in counts.items():
                coincidence[c][k] += (nc * nk - (nc if c == k else 0)) * scale
    totals = [sum(row) for row in coincidence]
    n = sum(totals)
    if sum(1 for t in totals if t > 0) < 2:
        return None
    if scale_type == "ordinal":
        def delta(c: int, k: int) -> float:
            low, high = min(c, k), max(c, k)
            return (sum(totals[low:high + 1]) - (totals[c] + totals[k]) / 2) ** 2
    else:
        def delta(c: int, k: int) -> float:
            return float(c != k)
    observed = sum(coincidence[c][k] * delta(c, k) for c in range(size) for k in range(size))
    expected = sum(totals[c] * totals[k] * delta(c, k)
                   for c in range(size) for k in range(size)) / (n - 1)
    return 1 - observed / expected


def kappa_interval(a: Source, b: Source, scale: OptionScale, *, resamples: int = 1000,
                   seed: int = 0, level: float = 0.95) -> Interval | None:
    """Percentile bootstrap interval of the kappa, resampling the pairs used."""
    keyed_a, keyed_b = _parsed([a, b], scale)
    pairs = [(keyed_a[k], keyed_b[k]) for k in keyed_a
             if k in keyed_b and ABSTAIN not in (keyed_a[k], keyed_b[k])]
    size = len(scale.labels)

    def statistic(indices: Sequence[int]) -> float | None:
        counts = Counter(pairs[i] for i in indices)
        rows = [[counts[i, j] for j in range(size)] for i in range(size)]
        return option_pair_scores(rows, scale.scale_type)[1]

    return bootstrap_interval(len(pairs), statistic, resamples=resamples, seed=seed,
                              level=level)


def alpha_interval(sources: Sequence[Source], scale: OptionScale, *, resamples: int = 1000,
                   seed: int = 0, level: float = 0.95) -> Interval | None:
    """Percentile bootstrap interval of alpha, resampling the pairable units (None with
    fewer than 2 sources)."""
    if len(sources) < 2:
        return None
    units: dict[Hashable, list[int]] = {}
    for source in _parsed(sources, scale):
        for key, value in source.items():
            if value != ABSTAIN:
                units.setdefault(key, []).append(value)
    pairable = [values for values in units.values() if len(values) >= 2]
    size = len(scale.labels)

    def statistic(indices: Sequence[int]) -> float | None:
        return alpha_from_units([pairable[i] for i in indices], size, scale.scale_type)

    return bootstrap_interval(len(pairable), statistic, resamples=resamples, seed=seed,
                              level=level)
