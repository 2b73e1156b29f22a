"""Verdict agreement checked against scikit-learn and the krippendorff package.

The references are test-only dependencies; grading itself uses the standard library only.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import warnings
from dataclasses import fields

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, f1_score

from grading import Verdict
from grading.agreement import (
    ConfusionMatrix,
    MultiSourceAgreement,
    PairwiseAgreement,
    align_sources,
    compare_verdicts,
    compare_verdicts_by_criterion,
    krippendorff_alpha,
    krippendorff_alpha_by_criterion,
)

MET, UNMET, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
LABELS = ["MET", "UNMET"]


def generate_pair(
    seed: int, size: int, *, agreement: float, met_rate: float, ca_rate: float = 0.0,
    missing_rate: float = 0.0,
) -> tuple[list[Verdict | None], list[Verdict | None]]:
    """Two aligned verdict lists: B copies A with probability ``agreement``, else flips it."""
    rng = random.Random(seed)
    a: list[Verdict | None] = []
    b: list[Verdict | None] = []
    for _ in range(size):
        first = MET if rng.random() < met_rate else UNMET
        second = first if rng.random() < agreement else (UNMET if first is MET else MET)
        pair = [first, second]
        for side in (0, 1):
            if rng.random() < ca_rate:
                pair[side] = CA
            elif rng.random() < missing_rate:
                pair[side] = None
        a.append(pair[0])
        b.append(pair[1])
    return a, b


def assert_no_nan(result: object) -> None:
    for field in fields(result):
        value = getattr(result, field.name)
        if isinstance(value, float):
            assert math.isfinite(value), f"{field.name} is {value}"


def same(ours: float | None, reference: float) -> bool:
    """Ours is None exactly where the reference is NaN, and equal elsewhere."""
    if math.isnan(reference):
        return ours is None
    return ours is not None and ours == pytest.approx(reference, abs=1e-12)


GENERATED = [
    pytest.param(seed, size, agreement, met_rate, ca_rate, missing_rate,
                 id=f"n{size}-agree{agreement}-met{met_rate}-ca{ca_rate}-missing{missing_rate}")
    for seed, (size, agreement, met_rate, ca_rate, missing_rate) in enumerate([
        (1, 1.0, 0.5, 0.0, 0.0),
        (2, 0.5, 0.5, 0.0, 0.0),
        (5, 0.8, 0.5, 0.0, 0.0),
        (10, 0.0, 0.5, 0.0, 0.0),
        (10, 1.0, 0.5, 0.0, 0.0),
        (30, 0.7, 0.3, 0.1, 0.1),
        (30, 0.9, 0.9, 0.0, 0.2),
        (100, 0.5, 0.5, 0.2, 0.0),
        (100, 0.95, 0.05, 0.05, 0.05),
        (200, 0.8, 0.6, 0.1, 0.1),
        (500, 0.6, 0.5, 0.0, 0.0),
        (20, 1.0, 1.0, 0.0, 0.0),
        (20, 1.0, 0.0, 0.0, 0.0),
        (20, 0.0, 1.0, 0.0, 0.0),
    ])
]


@pytest.mark.parametrize(
    ("seed", "size", "agreement", "met_rate", "ca_rate", "missing_rate"), GENERATED
)
def test_pairwise_metrics_match_scikit_learn_on_generated_verdicts(
    seed, size, agreement, met_rate, ca_rate, missing_rate
):
    a, b = generate_pair(seed, size, agreement=agreement, met_rate=met_rate, ca_rate=ca_rate,
                         missing_rate=missing_rate)
    result = compare_verdicts(a, b)

    kept = [(x.value, y.value) for x, y in zip(a, b, strict=True)
            if x is not None and y is not None and CA not in (x, y)]
    assert result.pairs_used == len(kept)
    assert_no_nan(result)
    if not kept:
        assert result.percent_agreement is None
        return
    y_a, y_b = [x for x, _ in kept], [y for _, y in kept]
    assert result.confusion.rows == tuple(
        tuple(row) for row in confusion_matrix(y_a, y_b, labels=LABELS).tolist()
    )
    assert result.percent_agreement == pytest.approx(100 * accuracy_score(y_a, y_b))
    # scikit-learn warns where a value is undefined; that is exactly what is compared here.
    with warnings.catch_warnings(action="ignore"):
        kappa = cohen_kappa_score(y_a, y_b, labels=LABELS)
        per_class = f1_score(y_a, y_b, labels=LABELS, average=None, zero_division=np.nan)
        macro = f1_score(y_a, y_b, labels=LABELS, average="macro", zero_division=np.nan)
    assert same(result.cohens_kappa, kappa)
    assert same(result.f1_met, per_class[0])
    assert same(result.f1_unmet, per_class[1])
    assert same(result.balanced_f1, macro)


def test_pairs_only_in_one_source_and_cannot_assess_pairs_are_counted_not_compared():
    a = {"r1": MET, "r2": UNMET, "r3": CA, "r4": MET, "r5": MET, "r6": None}
    b = {"r1": MET, "r2": MET, "r3": MET, "r4": CA, "r7": UNMET, "r6": MET}

    result = compare_verdicts(a, b)

    assert (result.pairs_used, result.only_in_a, result.only_in_b) == (2, 1, 2)
    assert result.excluded_cannot_assess == 2
    assert result.shared == 4
    assert result.confusion == ConfusionMatrix(met_met=1, unmet_met=1)
    assert result.percent_agreement == 50.0


def test_mappings_and_aligned_sequences_give_the_same_result():
    a, b = generate_pair(7, 60, agreement=0.7, met_rate=0.4, ca_rate=0.1, missing_rate=0.1)

    by_position = compare_verdicts(a, b)
    by_key = compare_verdicts(
        {("resp", i): v for i, v in enumerate(a)}, {("resp", i): v for i, v in enumerate(b)}
    )

    assert by_position == by_key


def test_verdicts_written_as_strings_are_read_like_verdicts():
    assert compare_verdicts(["met", "Unmet", "cannot assess"], ["MET", "UNMET", "MET"]) == (
        compare_verdicts([MET, UNMET, CA], [MET, UNMET, MET])
    )


@pytest.mark.parametrize(
    ("a", "b", "error"),
    [
        pytest.param([MET, UNMET], [MET], ValueError, id="sequences-of-different-lengths"),
        pytest.param({"r1": MET}, [MET], TypeError, id="mapping-and-sequence-mixed"),
        pytest.param("MET", "MET", TypeError, id="bare-string-is-not-a-sequence-of-verdicts"),
        pytest.param([MET, "maybe"], [MET, MET], ValueError, id="unknown-verdict"),
    ],
)
def test_malformed_sources_are_rejected(a, b, error):
    with pytest.raises(error):
        compare_verdicts(a, b)


NO_NUMBERS = {"percent_agreement": None, "cohens_kappa": None, "f1_met": None,
              "f1_unmet": None, "balanced_f1": None}


@pytest.mark.parametrize(
    ("a", "b", "expected", "note"),
    [
        pytest.param([], [], {"pairs_used": 0, **NO_NUMBERS},
                     "no pairs to compare: no key has a verdict", id="both-empty"),
        pytest.param({"r1": MET, "r2": UNMET}, {"r3": MET},
                     {"pairs_used": 0, "only_in_a": 2, "only_in_b": 1, **NO_NUMBERS},
                     "no pairs to compare: no key has a verdict", id="no-overlap"),
        pytest.param([MET, None], [None, UNMET], {"pairs_used": 0, **NO_NUMBERS},
                     "no pairs to compare", id="no-overlap-aligned"),
        pytest.param([CA, MET, CA], [UNMET, CA, CA],
                     {"pairs_used": 0, "excluded_cannot_assess": 3, **NO_NUMBERS},
                     "all 3 shared keys have CANNOT_ASSESS", id="all-cannot-assess"),
        pytest.param([MET] * 4, [MET] * 4,
                     {"percent_agreement": 100.0, "cohens_kappa": None, "f1_met": 1.0,
                      "f1_unmet": None, "balanced_f1": 1.0},
                     "kappa undefined: every pair is MET in both sources, so chance agreement "
                     "is 1", id="only-met-in-both"),
        pytest.param([UNMET] * 3, [UNMET] * 3,
                     {"percent_agreement": 100.0, "cohens_kappa": None, "f1_met": None,
                      "f1_unmet": 1.0, "balanced_f1": 1.0},
                     "F1 of MET undefined: neither source gave MET; balanced F1 is the F1 of "
                     "UNMET alone", id="only-unmet-in-both"),
        pytest.param([MET] * 3, [UNMET] * 3,
                     {"percent_agreement": 0.0, "cohens_kappa": 0.0, "f1_met": 0.0,
                      "f1_unmet": 0.0, "balanced_f1": 0.0},
                     "", id="one-class-each-always-disagreeing"),
        pytest.param([MET] * 4, [MET, MET, MET, UNMET],
                     {"percent_agreement": 75.0, "cohens_kappa": 0.0, "f1_met": 6 / 7,
                      "f1_unmet": 0.0, "balanced_f1": 3 / 7},
                     "", id="reference-one-class-only"),
        pytest.param([UNMET], [MET],
                     {"pairs_used": 1, "percent_agreement": 0.0, "cohens_kappa": 0.0},
                     "", id="single-disagreeing-pair"),
        pytest.param([MET, UNMET], [MET, UNMET],
                     {"percent_agreement": 100.0, "cohens_kappa": 1.0, "balanced_f1": 1.0},
                     "", id="perfect-with-both-classes"),
    ],
)
def test_degenerate_inputs_give_defined_explained_results(a, b, expected, note):
    result = compare_verdicts(a, b)

    assert {name: getattr(result, name) for name in expected} == pytest.approx(expected)
    assert_no_nan(result)
    if note:
        assert note in result.note
    else:
        assert result.note == ""


def test_every_none_metric_is_explained_in_the_note():
    for seed in range(200):
        rng = random.Random(seed)
        size = rng.randint(0, 4)
        a, b = generate_pair(seed, size, agreement=rng.random(), met_rate=rng.random(),
                             ca_rate=0.2, missing_rate=0.2)
        result = compare_verdicts(a, b)
        for name in NO_NUMBERS:
            if getattr(result, name) is None:
                assert result.note, (a, b, name)


def test_kappa_is_none_where_scikit_learn_returns_nan_for_a_single_shared_class():
    with warnings.catch_warnings(action="ignore"):
        reference = cohen_kappa_score(["MET"] * 5, ["MET"] * 5, labels=LABELS)

    assert math.isnan(reference)
    assert compare_verdicts([MET] * 5, [MET] * 5).cohens_kappa is None


def test_swapping_sources_transposes_the_confusion_matrix_and_keeps_kappa_and_f1():
    a, b = generate_pair(3, 80, agreement=0.6, met_rate=0.7)

    forward, backward = compare_verdicts(a, b), compare_verdicts(b, a)

    assert backward.confusion.rows == tuple(zip(*forward.confusion.rows, strict=True))
    assert backward.cohens_kappa == pytest.approx(forward.cohens_kappa)
    assert backward.balanced_f1 == pytest.approx(forward.balanced_f1)
    assert (backward.only_in_a, backward.only_in_b) == (forward.only_in_b, forward.only_in_a)


def test_confusion_matrix_rows_are_source_a_and_columns_source_b():
    result = compare_verdicts([MET, MET, MET, UNMET], [UNMET, UNMET, MET, UNMET])

    assert ConfusionMatrix.labels == (MET, UNMET)
    assert result.confusion.rows == ((1, 2), (0, 1))
    assert result.confusion.met_unmet == 2


def generate_by_criterion(seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    a: dict = {}
    b: dict = {}
    for criterion, agreement in (("accuracy", 0.9), ("tone", 0.5), ("safety", 1.0)):
        first, second = generate_pair(rng.randint(0, 10**6), 40, agreement=agreement,
                                      met_rate=0.6, ca_rate=0.1, missing_rate=0.1)
        a |= {(f"resp-{i}", criterion): v for i, v in enumerate(first)}
        b |= {(f"resp-{i}", criterion): v for i, v in enumerate(second)}
    a[("resp-x", "only-in-a")] = MET
    return a, b


def test_per_criterion_results_equal_comparing_each_criterion_alone():
    a, b = generate_by_criterion(11)

    result = compare_verdicts_by_criterion(a, b)

    assert list(result.per_criterion) == ["accuracy", "tone", "safety", "only-in-a"]
    for criterion, agreement in result.per_criterion.items():
        assert agreement == compare_verdicts(
            {k: v for k, v in a.items() if k[1] == criterion},
            {k: v for k, v in b.items() if k[1] == criterion},
        )
    assert result.overall == compare_verdicts(a, b)
    assert result.overall.pairs_used == sum(r.pairs_used for r in result.per_criterion.values())


def test_a_criterion_judged_by_only_one_source_is_listed_with_no_pairs():
    result = compare_verdicts_by_criterion(*generate_by_criterion(5))

    only = result.per_criterion["only-in-a"]
    assert (only.pairs_used, only.only_in_a, only.note) == (
        0, 1, "no pairs to compare: no key has a verdict from both sources"
    )


def test_a_criterion_with_no_verdicts_at_all_still_gets_a_row():
    result = compare_verdicts_by_criterion({("r1", "c1"): None}, {("r1", "c1"): MET})

    assert result.per_criterion["c1"].pairs_used == 0


@pytest.mark.parametrize(
    "key",
    [pytest.param("r1", id="bare-key"), pytest.param(("r1", "c1", "x"), id="three-part-key")],
)
def test_per_criterion_keys_must_be_item_criterion_pairs(key):
    with pytest.raises(ValueError, match="item, criterion"):
        compare_verdicts_by_criterion({key: MET}, {key: MET})


# Krippendorff's alpha ---------------------------------------------------------------------


def generate_sources(
    seed: int, sources: int, units: int, *, agreement: float, met_rate: float,
    ca_rate: float, missing_rate: float,
) -> list[list[Verdict | None]]:
    """Sources that each copy a unit's true verdict with probability ``agreement``."""
    rng = random.Random(seed)
    truth = [MET if rng.random() < met_rate else UNMET for _ in range(units)]
    out = []
    for _ in range(sources):
        row: list[Verdict | None] = []
        for value in truth:
            if rng.random() < missing_rate:
                row.append(None)
            elif rng.random() < ca_rate:
                row.append(CA)
            elif rng.random() < agreement:
                row.append(value)
            else:
                row.append(UNMET if value is MET else MET)
        out.append(row)
    return out


def reference_alpha(sources: list[list[Verdict | None]]) -> float:
    """The krippendorff package's nominal alpha, NaN where it refuses (one value in the domain)."""
    codes = {MET: 1.0, UNMET: 0.0, CA: np.nan, None: np.nan}
    data = np.array([[codes[v] for v in row] for row in sources], dtype=float)
    try:
        return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    except ValueError:
        return math.nan


@pytest.mark.parametrize(
    ("seed", "sources", "units", "agreement", "met_rate", "ca_rate", "missing_rate"),
    [
        pytest.param(seed, *case, id="sources{}-units{}-agree{}-met{}-ca{}-missing{}".format(*case))
        for seed, case in enumerate([
            (2, 20, 0.8, 0.5, 0.0, 0.0),
            (3, 10, 0.9, 0.5, 0.0, 0.0),
            (3, 50, 0.6, 0.3, 0.1, 0.2),
            (4, 100, 0.5, 0.5, 0.0, 0.3),
            (5, 200, 0.85, 0.7, 0.05, 0.1),
            (3, 30, 1.0, 0.5, 0.0, 0.0),
            (6, 40, 0.95, 0.1, 0.1, 0.5),
            (3, 5, 0.7, 0.5, 0.0, 0.4),
        ])
    ],
)
def test_alpha_matches_the_krippendorff_package_on_generated_verdicts(
    seed, sources, units, agreement, met_rate, ca_rate, missing_rate
):
    data = generate_sources(seed, sources, units, agreement=agreement, met_rate=met_rate,
                            ca_rate=ca_rate, missing_rate=missing_rate)

    result = krippendorff_alpha(data)

    assert result.pairable_units >= 2
    assert result.alpha == pytest.approx(reference_alpha(data), abs=1e-12)
    assert result.note == ""


def test_alpha_counts_units_values_and_cannot_assess():
    data = [
        [MET, UNMET, MET, None, CA],
        [MET, UNMET, UNMET, MET, None],
        [MET, CA, None, None, None],
    ]

    result = krippendorff_alpha(data)

    assert (result.sources, result.units, result.pairable_units) == (3, 5, 3)
    assert (result.unpairable_units, result.values_used, result.excluded_cannot_assess) == (2, 7, 2)
    assert result.alpha == pytest.approx(reference_alpha(data))


def test_alpha_takes_mappings_keyed_by_unit():
    data = generate_sources(1, 3, 30, agreement=0.8, met_rate=0.5, ca_rate=0.1, missing_rate=0.1)

    keyed = [{("resp", i): v for i, v in enumerate(row)} for row in data]

    assert krippendorff_alpha(keyed) == krippendorff_alpha(data)


@pytest.mark.parametrize(
    ("data", "expected", "note"),
    [
        pytest.param([], {"sources": 0}, "alpha needs at least 2 sources, got 0",
                     id="no-sources"),
        pytest.param([[MET, UNMET]], {"sources": 1}, "alpha needs at least 2 sources, got 1",
                     id="one-source"),
        pytest.param([[MET, None], [None, UNMET], [None, None]], {"pairable_units": 0},
                     "at least 2 units with MET/UNMET from two or more sources, found 0",
                     id="no-overlap"),
        pytest.param([[CA, CA], [CA, CA], [MET, UNMET]],
                     {"pairable_units": 0, "excluded_cannot_assess": 4}, "found 0",
                     id="all-cannot-assess-but-one-source"),
        pytest.param([[MET, None], [UNMET, MET], [MET, None]], {"pairable_units": 1},
                     "found 1", id="single-pairable-unit"),
        pytest.param([[MET] * 4, [MET] * 4, [MET, None, MET, CA]], {"pairable_units": 4},
                     "alpha undefined: every pairable verdict is MET", id="only-met"),
        pytest.param([[UNMET, UNMET], [UNMET, UNMET]], {"pairable_units": 2},
                     "every pairable verdict is UNMET", id="only-unmet"),
    ],
)
def test_alpha_degenerate_inputs_give_none_with_a_note(data, expected, note):
    result = krippendorff_alpha(data)

    assert result.alpha is None
    assert note in result.note
    assert {name: getattr(result, name) for name in expected} == expected


def test_single_pairable_unit_would_give_alpha_zero_whatever_the_verdicts():
    # Why one unit is reported as None: the package returns 0.0 for it, agreeing or not.
    assert reference_alpha([[MET, None], [UNMET, None], [MET, None]]) == 0.0
    assert reference_alpha([[MET, None], [UNMET, None], [UNMET, None]]) == 0.0


def test_alpha_per_criterion_equals_alpha_of_each_criterion_alone():
    rng = random.Random(4)
    sources: list[dict] = [{}, {}, {}]
    for criterion in ("accuracy", "tone", "constant"):
        rate = 1.0 if criterion == "constant" else 0.5
        data = generate_sources(rng.randint(0, 10**6), 3, 25, agreement=0.8, met_rate=rate,
                                ca_rate=0.1, missing_rate=0.2)
        if criterion == "constant":
            data = [[v if v is CA or v is None else MET for v in row] for row in data]
        for source, row in zip(sources, data, strict=True):
            source |= {(i, criterion): v for i, v in enumerate(row)}

    result = krippendorff_alpha_by_criterion(sources)

    assert list(result.per_criterion) == ["accuracy", "tone", "constant"]
    assert result.overall == krippendorff_alpha(sources)
    for criterion, alpha in result.per_criterion.items():
        alone = [{k: v for k, v in s.items() if k[1] == criterion} for s in sources]
        assert alpha == krippendorff_alpha(alone)
    assert result.per_criterion["constant"].alpha is None
    assert isinstance(result.overall, MultiSourceAgreement)


# Shape of the results ---------------------------------------------------------------------


def test_results_are_frozen():
    result = compare_verdicts([MET], [MET])

    with pytest.raises(AttributeError):
        result.pairs_used = 5  # type: ignore[misc]
    assert isinstance(result, PairwiseAgreement)


def test_align_sources_drops_missing_values_and_keys_sequences_by_position():
    assert align_sources([[MET, None, UNMET], [None, None, MET]]) == [
        {0: MET, 2: UNMET}, {2: MET}
    ]
    assert align_sources([{"a": None, "b": MET}]) == [{"b": MET}]


def test_agreement_modules_import_no_numerical_libraries():
    code = (
        "import sys, grading.agreement, grading.score_agreement; "
        "print(sorted(m for m in ('numpy', 'scipy', 'sklearn', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "[]"
