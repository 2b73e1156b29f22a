"""The run-option rules shared by the CLI, the Grade page and create_run."""

from __future__ import annotations

from storage import run_rules
from storage.run_rules import OptionsShuffle


def test_samples_and_criteria_shuffling_name_the_one_grader_that_honours_them():
    assert not run_rules.samples_need_other_graders(3, ["per_criterion"])
    assert not run_rules.samples_need_other_graders(3, ["per-criterion"])  # the CLI's spelling
    assert not run_rules.samples_need_other_graders(1, ["one_shot", "rubric_as_judge"])
    assert run_rules.samples_need_other_graders(2, ["per_criterion", "one-shot"])
    assert not run_rules.criteria_shuffle_needs_other_graders(True, ["one-shot"])
    assert not run_rules.criteria_shuffle_needs_other_graders(False, ["per_criterion"])
    assert run_rules.criteria_shuffle_needs_other_graders(True, ["one_shot", "per_criterion"])


def test_option_shuffling_is_refused_for_the_one_score_grader_first_then_for_no_options():
    refusal = run_rules.options_shuffle_refusal
    assert refusal(False, ["rubric_as_judge"], False) is None
    assert refusal(True, ["per_criterion", "one-shot"], True) is None
    assert refusal(True, ["per_criterion", "rubric-as-judge"], True) is \
        OptionsShuffle.ONE_SCORE_GRADER
    assert refusal(True, ["rubric_as_judge"], False) is OptionsShuffle.ONE_SCORE_GRADER
    assert refusal(True, ["one_shot"], False) is OptionsShuffle.NO_OPTIONS
