"""Few-shot examples on a multi-choice criterion: balanced across its options as the binary
path balances MET and UNMET, and shown with the option's label."""

from __future__ import annotations

import pytest

from grading import Verdict
from grading.calibration import (
    ExampleSet,
    ReviewedExample,
    choose_examples,
    render_examples,
    render_examples_by_criterion,
)

LABELS = ("Poor", "Fair", "Good")


def rated(**counts: int) -> list[ReviewedExample]:
    return [ReviewedExample(f"{label}{i}", Verdict.MET, f"output {label} {i}", option=label,
                            reason=f"note {label} {i}")
            for label, n in counts.items() for i in range(n)]


@pytest.mark.parametrize(
    ("counts", "k", "expected", "note"),
    [
        pytest.param({"Poor": 5, "Fair": 5, "Good": 5}, 6, (2, 2, 2), "", id="balanced"),
        pytest.param({"Poor": 5, "Fair": 5, "Good": 5}, 4, (2, 1, 1), "",
                     id="remainder-to-the-earlier-option-on-a-tie"),
        pytest.param({"Poor": 1, "Fair": 5, "Good": 3}, 4, (1, 2, 1), "",
                     id="remainder-to-the-option-with-more-candidates"),
        pytest.param({"Poor": 0, "Fair": 6, "Good": 6}, 6, (0, 3, 3),
                     "unbalanced: 0 'Poor' and 3 'Fair' and 3 'Good' (too few of one option",
                     id="short-option-topped-up"),
        pytest.param({"Poor": 1, "Fair": 1, "Good": 0}, 3, (1, 1, 0),
                     "only 2 reviewed example(s) for 3 requested (1 'Poor', 1 'Fair', 0 'Good')",
                     id="fewer-than-k"),
    ],
)
def test_examples_are_balanced_across_options(counts, k, expected, note):
    chosen = choose_examples(rated(**counts), k=k, seed=3, options=LABELS)
    assert tuple([e.option for e in chosen.examples].count(label) for label in LABELS) \
        == expected
    assert chosen.note.startswith(note) if note else chosen.note == ""


def test_the_binary_rule_is_the_options_rule_with_two_choices():
    """Generalised, not forked: MET/UNMET candidates picked as options "MET"/"UNMET" give
    the very same examples (same seed, same ranks)."""
    binary = [ReviewedExample(f"r{i}", Verdict.MET if i % 3 else Verdict.UNMET, "x")
              for i in range(11)]
    as_options = [ReviewedExample(e.response_key, Verdict.MET, "x", option=e.verdict.value)
                  for e in binary]
    for k in (1, 2, 5, 9, 12):
        assert choose_examples(binary, k=k, seed=5).keys == choose_examples(
            as_options, k=k, seed=5, options=("MET", "UNMET")).keys


def test_a_reserve_of_the_same_option_replaces_the_response_itself():
    chosen = choose_examples(rated(Poor=3, Fair=3, Good=3), k=3, seed=1, options=LABELS)
    assert {e.option for e in chosen.reserves} == set(LABELS)
    for example in chosen.examples:
        shown = chosen.for_response(example.response_key)
        assert example not in shown
        assert sorted(e.option for e in shown) == sorted(LABELS)


def test_an_option_no_label_names_is_a_bug_not_a_silent_drop():
    with pytest.raises(ValueError, match="'Great'"):
        choose_examples(rated(Great=1), k=1, options=LABELS)
    with pytest.raises(ValueError, match="verdict MET"):
        ReviewedExample("r", Verdict.UNMET, "x", option="Poor")


def test_the_block_shows_the_option_label_escaped_like_any_reviewed_text():
    example = ReviewedExample("r1", Verdict.MET, "the old answer", option="Good</human_option>",
                              reason="clear")
    block = render_examples([example])
    assert block.count("</human_option>") == 1
    assert "<human_option>Good&lt;/human_option></human_option>\n<reason>clear</reason>" \
        in block
    assert "<human_verdict>" not in block


def test_the_one_shot_block_gives_each_criterion_its_own_kind_of_answer():
    met = ReviewedExample("r1", Verdict.MET, "same answer", reason="right dose")
    good = ReviewedExample("r1", Verdict.MET, "same answer", option="Good", reason="clear")
    block = render_examples_by_criterion([(met,), (good,)])
    assert block.count("same answer") == 1
    assert ('<human_verdict criterion="1">MET</human_verdict>\n'
            '<reason criterion="1">right dose</reason>\n'
            '<human_option criterion="2">Good</human_option>\n'
            '<reason criterion="2">clear</reason>') in block
    assert ExampleSet((good,)).keys == ("r1",)


def test_no_reserve_is_held_back_for_an_option_with_no_example():
    """A reserve only stands in for an example of its own option: k=2 on a five-point scale
    shows two options, so only those two keep a reserve (the others stay held out)."""
    labels = ("1", "2", "3", "4", "5")
    pool = [ReviewedExample(f"{label}-{i}", Verdict.MET, "x", option=label)
            for label in labels for i in range(2)]
    chosen = choose_examples(pool, k=2, seed=0, options=labels)
    assert sorted(e.option for e in chosen.reserves) == sorted(e.option for e in chosen.examples)
    assert len(chosen.reserves) == 2
