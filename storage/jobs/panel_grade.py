"""``rubric-workbench grade --model a --model b --panel majority``: grade with every model and
combine the runs into a judge panel (storage.services.panels), persisted so the app shows it.

The arguments are checked before anything is written. The panel is made (or found again, when
the same command runs again and resumes the same runs) before grading starts, so the app
shows its grades as the members finish. With ``--out`` the panel's record per response is
written after the members' records by ``storage.exports`` (what ``export --panel`` writes):
``grader`` is ``panel``, ``run_id`` is empty and ``panel_id`` names the panel.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

from grading.panels import PANEL_RULES

HOLISTIC_GRADER = "rubric-as-judge"


def add_panel_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--panel", choices=PANEL_RULES, default=None, metavar="RULE",
        help="combine the models' runs into a judge panel by this rule: "
             f"{', '.join(PANEL_RULES)} (needs two or more --model; one panel per grader)")
    parser.add_argument(
        "--panel-weight", action="append", default=None, metavar="MODEL=WEIGHT",
        help="with --panel weighted: a member's weight, e.g. openai/gpt-4.1=2 (one per --model)")


def panel_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with --panel / --panel-weight, or None. Nothing has been written yet."""
    weights_given = bool(args.panel_weight)
    if args.panel is None:
        if weights_given:
            return "--panel-weight is only for --panel weighted"
        return None
    models = list(dict.fromkeys(args.model))
    if len(models) < 2:
        return (f"--panel {args.panel} needs at least two different --model (got "
                f"{', '.join(models)}): a panel combines several judges' verdicts")
    if HOLISTIC_GRADER in args.grader:
        return (f"--panel cannot use --grader {HOLISTIC_GRADER}: it gives one 0-100 score per "
                "response, not a verdict per criterion, so it cannot vote; use per-criterion "
                "or one-shot, or grade it without --panel")
    if args.panel != "weighted":
        if weights_given:
            return f"--panel-weight is only for --panel weighted, not {args.panel}"
        return None
    try:
        weights = parse_weights(args.panel_weight or [])
    except ValueError as exc:
        return str(exc)
    unknown = [model for model in weights if model not in models]
    if unknown:
        return (f"--panel-weight names {', '.join(unknown)}, which is not one of the --model "
                f"values ({', '.join(models)})")
    missing = [model for model in models if model not in weights]
    if missing:
        return (f"--panel weighted needs a --panel-weight for every model; missing: "
                f"{', '.join(f'{model}=WEIGHT' for model in missing)}")
    return None


def parse_weights(values: Sequence[str]) -> dict[str, float]:
    """``MODEL=WEIGHT`` pairs; the model name may itself hold ``=`` (the last one splits)."""
    weights: dict[str, float] = {}
    for value in values:
        model, sep, number = value.rpartition("=")
        if not sep or not model.strip():
            raise ValueError(f"--panel-weight {value!r}: write MODEL=WEIGHT, e.g. "
                             "openai/gpt-4.1-mini=1.5")
        try:
            weight = float(number)
        except ValueError:
            raise ValueError(f"--panel-weight {value!r}: the weight must be a number, got "
                             f"{number!r}") from None
        if not math.isfinite(weight) or weight <= 0:
            raise ValueError(f"--panel-weight {value!r}: the weight must be a positive number")
        if model.strip() in weights:
            raise ValueError(f"--panel-weight: {model.strip()} is given twice")
        weights[model.strip()] = weight
    return weights


def make_panels(sessions, args: argparse.Namespace, run_ids: Sequence[int], actor) -> list:
    """One panel per grader over its models' runs (the existing one when run again)."""
    from storage.services import panels, runs

    weights = parse_weights(args.panel_weight or []) if args.panel == "weighted" else {}
    by_grader: dict[str, list] = {}
    for run_id in run_ids:
        run = runs.get_run(sessions, run_id)
        by_grader.setdefault(run.grader, []).append(run)
    made = []
    for members in by_grader.values():
        panel, _created = panels.ensure_panel(
            sessions, run_ids=[run.id for run in members], rule=args.panel, actor=actor,
            weights=[weights[run.model] for run in members] if weights else None,
            name=args.name)
        made.append(panel)
    return made
