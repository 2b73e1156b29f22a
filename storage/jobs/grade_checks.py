"""The ``grade`` command's option checks that need more than argparse: each returns the
sentence saying what is wrong (and what to do), or the parsed value."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from grading.rubric import Rubric
from storage import run_rules


def options_shuffle_problem(graders: list[str], rubric: Rubric) -> str | None:
    """Why --shuffle-options does not apply to these graders and this rubric, or None."""
    refused = run_rules.options_shuffle_refusal(
        True, graders, any(c.options for c in rubric.criteria))
    if refused is run_rules.OptionsShuffle.ONE_SCORE_GRADER:
        return ("--shuffle-options does not apply to --grader rubric-as-judge: it gives one "
                "overall score and shows no options; drop --shuffle-options or that grader")
    if refused is run_rules.OptionsShuffle.NO_OPTIONS:
        return ("--shuffle-options does nothing with this rubric: none of its criteria has "
                "options (multi-choice); drop --shuffle-options or add options to a criterion")
    return None


def parse_cost_cap(text: str | None) -> float | str | None:
    """``--cost-cap`` in US dollars, or the sentence saying what is wrong with it."""
    import math

    if text is None:
        return None
    try:
        cap = float(text)
    except ValueError:
        cap = math.nan
    if not (math.isfinite(cap) and cap > 0):
        return (f"--cost-cap must be an amount of US dollars above 0 (e.g. --cost-cap 2.50), "
                f"got {text!r}")
    return cap


def unpriced_models(models: Sequence[str]) -> list[str]:
    """The models litellm has no price for: their cost stays unknown, so a cap is never hit."""
    from storage.jobs.estimate import price

    return [model for model in dict.fromkeys(models) if price(model, 1000, 1000)[0] is None]


def parse_calibration(args: argparse.Namespace) -> dict | str | None:
    """``--calibrate``/``--calibration-seed`` as RunSettings.calibration, or what is wrong."""
    from storage.run_settings import MAX_EXAMPLES

    if args.calibrate is None:
        if args.calibration_seed:
            return "--calibration-seed needs --calibrate K"
        return None
    if not 1 <= args.calibrate <= MAX_EXAMPLES:
        return f"--calibrate must be a number of examples from 1 to {MAX_EXAMPLES}"
    if args.calibration_seed < 0:
        return "--calibration-seed must be 0 or more"
    if "rubric-as-judge" in args.grader:
        return ("--calibrate cannot be used with --grader rubric-as-judge: it gives one "
                "overall score, while people's verdicts are per criterion")
    return {"k": args.calibrate, "seed": args.calibration_seed}
