"""Agreement between sources of verdicts: two at a time, per criterion, and across many.

A source is a run, another run or the human verdicts, given either as a mapping
``key -> verdict`` (key e.g. ``(response_id, criterion_name)``) or as a sequence aligned by
position with the other sources. ``None`` means "no verdict". Scores: grading/score_agreement.py.

Conventions, the same in every function here:
- Only MET and UNMET are classes. A shared key where either side is CANNOT_ASSESS is excluded
  from the pairs and counted in ``excluded_cannot_assess``.
- Source A is the reference: rows of the confusion matrix and ``y_true`` for F1. The F1 of a class,
  ``2TP / (2TP + FP + FN)``, does not change when A and B swap, so balanced F1 is symmetric.
- Kappa and alpha are pooled over every pair given, not averaged over criteria.
- A value that cannot be computed is ``None`` and ``note`` says why; never NaN, never a crash:
  - no pairs: every metric is ``None``.
  - kappa when chance agreement is 1, which happens only when both sources give one and the same
    class on every pair: ``None``. Kappa is 0/0 there; percent agreement already shows 100%, and
    a 1.0 would rank a criterion the judges never had to tell apart as perfectly reliable.
  - F1 of a class that neither source gave: ``None``; balanced F1 is then the mean over the
    classes that occur (scikit-learn's ``zero_division=np.nan`` average), and the note says so.
  - alpha with fewer than 2 sources, fewer than 2 pairable units (a single unit always gives
    alpha = 0, whatever the verdicts) or a single value everywhere (no expected disagreement):
    ``None``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from grading.types import Verdict

MET, UNMET, CANNOT_ASSESS = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS

VerdictInput = Verdict | str | None
VerdictSource = Mapping[Any, VerdictInput] | Sequence[VerdictInput]
CriterionKey = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of verdict pairs: rows are source A, columns source B, in ``labels`` order."""

    labels: ClassVar[tuple[Verdict, Verdict]] = (MET, UNMET)

    met_met: int = 0
    met_unmet: int = 0
    unmet_met: int = 0
    unmet_unmet: int = 0

    @property
    def rows(self) -> tuple[tuple[int, int], tuple[int, int]]:
        return ((self.met_met, self.met_unmet), (self.unmet_met, self.unmet_unmet))

    @property
    def total(self) -> int:
        return self.met_met + self.met_unmet + self.unmet_met + self.unmet_unmet


@dataclass(frozen=True)
class PairwiseAgreement:
    """How far source B agrees with source A (the reference) on the keys they share.

    ``percent_agreement`` is in 0-100. ``note`` explains every ``None`` metric ("" when none).
    """

    pairs_used: int
    only_in_a: int
    only_in_b: int
    excluded_cannot_assess: int
    percent_agreement: float | None
    cohens_kappa: float | None
    f1_met: float | None
    f1_unmet: float | None
    balanced_f1: float | None
    confusion: ConfusionMatrix
    note: str

    @property
    def shared(self) -> int:
        """Keys with a verdict from both sources, CANNOT_ASSESS included."""
        return self.pairs_used + self.excluded_cannot_assess


@dataclass(frozen=True)
class AgreementByCriterion:
    """Pairwise agreement over all pairs and for each criterion (in order of first appearance)."""

    overall: PairwiseAgreement
    per_criterion: dict[Hashable, PairwiseAgreement]


@dataclass(frozen=True)
class MultiSourceAgreement:
    """Krippendorff's alpha (nominal, MET/UNMET) across sources, with the counts behind it.

    A unit is a key. It is pairable when at least two sources gave it MET or UNMET; only
    pairable units count. ``note`` explains a ``None`` alpha ("" otherwise).
    """

    sources: int
    units: int
    pairable_units: int
    values_used: int
    excluded_cannot_assess: int
    alpha: float | None
    note: str

    @property
    def unpairable_units(self) -> int:
        return self.units - self.pairable_units


@dataclass(frozen=True)
class MultiSourceAgreementByCriterion:
    """Krippendorff's alpha over all units and for each criterion."""

    overall: MultiSourceAgreement
    per_criterion: dict[Hashable, MultiSourceAgreement]


def align_sources(sources: Sequence[Mapping[Any, Any] | Sequence[Any]]) -> list[dict[Any, Any]]:
    """Key every source the same way, dropping ``None``: mappings as given, sequences by index."""
    if all(isinstance(source, Mapping) for source in sources):
        return [{k: v for k, v in source.items() if v is not None} for source in sources]
    for source in sources:
        if isinstance(source, Mapping | str | bytes) or not isinstance(source, Sequence):
            raise TypeError(
                "sources must be all mappings, or all sequences aligned by position; "
                f"got {type(source).__name__} among them"
            )
    lengths = sorted({len(source) for source in sources})
    if len(lengths) > 1:
        raise ValueError(f"aligned sequences must have the same length, got lengths {lengths}")
    return [{i: v for i, v in enumerate(source) if v is not None} for source in sources]


def compare_verdicts(a: VerdictSource, b: VerdictSource) -> PairwiseAgreement:
    """Percent agreement, Cohen's kappa, balanced F1 and confusion matrix of B against A."""
    keyed_a, keyed_b = (_parse(source) for source in align_sources([a, b]))
    return _compare(keyed_a, keyed_b)


def compare_verdicts_by_criterion(
    a: Mapping[CriterionKey, VerdictInput], b: Mapping[CriterionKey, VerdictInput]
) -> AgreementByCriterion:
    """``compare_verdicts`` over all ``(item, criterion)`` keys, and for each criterion alone."""
    criteria = _criteria([a, b])
    keyed_a, keyed_b = (_parse(source) for source in align_sources([a, b]))
    by_a, by_b = _group_by_criterion(keyed_a), _group_by_criterion(keyed_b)
    return AgreementByCriterion(
        overall=_compare(keyed_a, keyed_b),
        per_criterion={c: _compare(by_a.get(c, {}), by_b.get(c, {})) for c in criteria},
    )


def krippendorff_alpha(sources: Sequence[VerdictSource]) -> MultiSourceAgreement:
    """Krippendorff's alpha, nominal, over MET/UNMET from any number of sources; missing allowed."""
    return _alpha([_parse(source) for source in align_sources(sources)])


def krippendorff_alpha_by_criterion(
    sources: Sequence[Mapping[CriterionKey, VerdictInput]],
) -> MultiSourceAgreementByCriterion:
    """``krippendorff_alpha`` over all ``(item, criterion)`` keys, and for each criterion alone."""
    criteria = _criteria(sources)
    keyed = [_parse(source) for source in align_sources(sources)]
    grouped = [_group_by_criterion(source) for source in keyed]
    return MultiSourceAgreementByCriterion(
        overall=_alpha(keyed),
        per_criterion={c: _alpha([group.get(c, {}) for group in grouped]) for c in criteria},
    )


def _parse(source: Mapping[Any, Any]) -> dict[Any, Verdict]:
    # Verdicts pass as they are without a call each (the human baseline compares ~100 maps
    # of thousands of verdicts).
    parse = Verdict.parse
    return {key: value if value.__class__ is Verdict else parse(value)
            for key, value in source.items()}


def _criterion(key: Any) -> Hashable:
    if not isinstance(key, tuple) or len(key) != 2:
        raise ValueError(f"per-criterion keys must be (item, criterion) pairs, got {key!r}")
    return key[1]


def _criteria(sources: Sequence[Mapping[Any, Any]]) -> list[Hashable]:
    # From the keys before None is dropped, so a criterion nobody answered still gets a row.
    if not all(isinstance(source, Mapping) for source in sources):
        raise TypeError("per-criterion sources must be mappings keyed by (item, criterion)")
    return list(dict.fromkeys(_criterion(key) for source in sources for key in source))


def _group_by_criterion(source: dict[Any, Verdict]) -> dict[Hashable, dict[Any, Verdict]]:
    groups: dict[Hashable, dict[Any, Verdict]] = {}
    for key, verdict in source.items():
        groups.setdefault(_criterion(key), {})[key] = verdict
    return groups


PairCounts = Mapping[tuple[VerdictInput, VerdictInput], int]


def compare_counts(counts: PairCounts) -> PairwiseAgreement:
    """``compare_verdicts`` from counts of verdict pairs instead of the verdicts themselves.

    ``counts[(verdict_a, verdict_b)]`` is how many keys got that pair; ``None`` on one side
    counts the keys only the other source answered (``(None, None)`` is ignored). This is what
    a database's ``GROUP BY verdict_a, verdict_b`` gives; the figures are the same as
    ``compare_verdicts`` on the keys behind the counts.
    """
    parsed: Counter[tuple[Verdict | None, Verdict | None]] = Counter()
    for (a, b), n in counts.items():
        if n < 0:
            raise ValueError(f"a count cannot be negative, got {n} for {(a, b)!r}")
        parsed[_parse_one(a), _parse_one(b)] += n
    return _from_counts(parsed)


def compare_counts_by_criterion(
    counts: Mapping[Hashable, PairCounts],
) -> AgreementByCriterion:
    """``compare_verdicts_by_criterion`` from per-criterion counts (criterion -> counts, in the
    order wanted); the overall figures pool every criterion's counts."""
    pooled: Counter[tuple[VerdictInput, VerdictInput]] = Counter()
    for per in counts.values():
        for pair, n in per.items():
            pooled[pair] += n
    return AgreementByCriterion(
        overall=compare_counts(pooled),
        per_criterion={c: compare_counts(per) for c, per in counts.items()},
    )


def _parse_one(value: VerdictInput) -> Verdict | None:
    return None if value is None else Verdict.parse(value)


def _compare(a: dict[Any, Verdict], b: dict[Any, Verdict]) -> PairwiseAgreement:
    counts: Counter[tuple[Verdict | None, Verdict | None]] = Counter(
        (verdict, b.get(key)) for key, verdict in a.items())
    counts.update((None, verdict) for key, verdict in b.items() if key not in a)
    return _from_counts(counts)


def _from_counts(counts: Counter[tuple[Verdict | None, Verdict | None]]) -> PairwiseAgreement:
    shared_pairs = {pair: n for pair, n in counts.items() if None not in pair and n}
    shared = sum(shared_pairs.values())
    excluded = sum(n for pair, n in shared_pairs.items() if CANNOT_ASSESS in pair)
    confusion = ConfusionMatrix(
        met_met=counts[MET, MET],
        met_unmet=counts[MET, UNMET],
        unmet_met=counts[UNMET, MET],
        unmet_unmet=counts[UNMET, UNMET],
    )
    counts_only = {
        "only_in_a": sum(n for (a, b), n in counts.items() if a is not None and b is None),
        "only_in_b": sum(n for (a, b), n in counts.items() if a is None and b is not None),
        "excluded_cannot_assess": excluded,
    }
    n = confusion.total
    if n == 0:
        if not shared:
            why = "no key has a verdict from both sources"
        else:
            why = f"all {excluded} shared keys have CANNOT_ASSESS on at least one side"
        return PairwiseAgreement(
            pairs_used=0, **counts_only, percent_agreement=None, cohens_kappa=None,
            f1_met=None, f1_unmet=None, balanced_f1=None, confusion=confusion,
            note=f"no pairs to compare: {why}",
        )

    notes: list[str] = []
    percent, kappa, f1_met, f1_unmet, balanced = pair_scores(
        confusion.met_met, confusion.met_unmet, confusion.unmet_met, confusion.unmet_unmet)
    if kappa is None:
        only = MET if confusion.met_met + confusion.met_unmet else UNMET
        notes.append(
            f"kappa undefined: every pair is {only} in both sources, so chance agreement is 1 "
            "(percent agreement is 100%)"
        )
    f1 = {MET: f1_met, UNMET: f1_unmet}
    for label, value in f1.items():
        if value is None:
            notes.append(f"F1 of {label} undefined: neither source gave {label}")
    if None in f1.values():
        kept = next(label for label, value in f1.items() if value is not None)
        notes.append(f"balanced F1 is the F1 of {kept} alone")

    return PairwiseAgreement(
        pairs_used=n, **counts_only, percent_agreement=percent, cohens_kappa=kappa,
        f1_met=f1_met, f1_unmet=f1_unmet, balanced_f1=balanced,
        confusion=confusion, note="; ".join(notes),
    )


def pair_scores(met_met: int, met_unmet: int, unmet_met: int, unmet_unmet: int
                ) -> tuple[float | None, float | None, float | None, float | None,
                           float | None]:
    """(percent agreement, kappa, F1 of MET, F1 of UNMET, balanced F1) from a confusion
    matrix (A's verdict first); None where undefined, as described above. Bootstrap
    intervals call this once per resample."""
    n = met_met + met_unmet + unmet_met + unmet_unmet
    if n == 0:
        return None, None, None, None, None
    agreeing = met_met + unmet_unmet
    disagreeing = n - agreeing
    a_met, b_met = met_met + met_unmet, met_met + unmet_met
    # n² times the chance agreement, in integers so that "chance agreement is 1" is exact.
    chance = a_met * b_met + (n - a_met) * (n - b_met)
    kappa = None if chance == n * n else (n * agreeing - chance) / (n * n - chance)
    f1 = [None if 2 * tp + disagreeing == 0 else 2 * tp / (2 * tp + disagreeing)
          for tp in (met_met, unmet_unmet)]
    defined = [value for value in f1 if value is not None]
    return 100 * agreeing / n, kappa, f1[0], f1[1], sum(defined) / len(defined)


def _alpha(sources: list[dict[Any, Verdict]]) -> MultiSourceAgreement:
    units: dict[Any, list[Verdict]] = {}
    excluded = 0
    for source in sources:
        for key, verdict in source.items():
            values = units.setdefault(key, [])
            if verdict is CANNOT_ASSESS:
                excluded += 1
            else:
                values.append(verdict)
    pairable = [values for values in units.values() if len(values) >= 2]
    return alpha_from_counts(
        sources=len(sources), units=len(units), pairable_units=len(pairable),
        values_used=sum(len(values) for values in pairable),
        met=sum(values.count(MET) for values in pairable), excluded_cannot_assess=excluded,
        disagreeing=[(values.count(MET), values.count(UNMET)) for values in pairable])


def alpha_from_counts(
    *, sources: int, units: int, pairable_units: int, values_used: int, met: int,
    excluded_cannot_assess: int, disagreeing: Iterable[tuple[int, int]],
) -> MultiSourceAgreement:
    """Nominal MET/UNMET alpha from counts (what a ``GROUP BY`` per unit gives): the numbers
    of units, of pairable ones (MET or UNMET from two or more sources), of the MET and
    UNMET values in them and of CANNOT_ASSESS left out, and ``disagreeing``: (MET, UNMET)
    of the pairable units, in the units' order (units of one class add nothing, so they
    may be left out; the order fixes the float sum)."""
    n, n_met = values_used, met
    result = {
        "sources": sources,
        "units": units,
        "pairable_units": pairable_units,
        "values_used": n,
        "excluded_cannot_assess": excluded_cannot_assess,
    }
    if sources < 2:
        return MultiSourceAgreement(
            **result, alpha=None, note=f"alpha needs at least 2 sources, got {sources}"
        )
    if pairable_units < 2:
        return MultiSourceAgreement(
            **result, alpha=None,
            note=f"alpha needs at least 2 units with MET/UNMET from two or more sources, "
            f"found {pairable_units}",
        )
    if n_met in (0, n):
        only = MET if n_met else UNMET
        return MultiSourceAgreement(
            **result, alpha=None,
            note=f"alpha undefined: every pairable verdict is {only}, so no disagreement is "
            "expected by chance",
        )
    # Nominal alpha with two values: 1 - (n - 1) * o(MET, UNMET) / (n_MET * n_UNMET), where
    # o(MET, UNMET) sums, over units, the unit's MET x UNMET pairs divided by (its values - 1).
    observed = observed_disagreement(disagreeing)
    return MultiSourceAgreement(**result, alpha=alpha_value(n, n_met, observed), note="")


def observed_disagreement(disagreeing) -> float:
    """o(MET, UNMET): the sum over units of MET x UNMET / (values - 1), ``disagreeing`` being
    (MET, UNMET) pairs or a (units, 2) integer array, added left to right in the units'
    order (a cumulative sum: numpy's pairwise ``sum`` would give other last bits), in C:
    ~180,000 units at 100,000 responses, summed over every key and again per criterion."""
    import numpy as np

    pairs = (disagreeing if isinstance(disagreeing, np.ndarray)
             else np.array(list(disagreeing), dtype=np.int64).reshape(-1, 2))
    if not len(pairs):
        return 0.0
    met, unmet = pairs[:, 0].astype(np.float64), pairs[:, 1].astype(np.float64)
    return float(np.cumsum(met * unmet / (met + unmet - 1))[-1])


def alpha_value(values_used: int, met: int, observed: float) -> float | None:
    """Nominal alpha with two values from its sums over pairable units: ``values_used``
    verdicts, ``met`` of them MET, ``observed`` = sum of MET x UNMET / (values - 1) per unit;
    None when every verdict is of one class."""
    if met in (0, values_used):
        return None
    return 1 - (values_used - 1) * observed / (met * (values_used - met))
