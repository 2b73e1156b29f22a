"""``rubric-workbench agreement``: the per-criterion human baseline without the UI.

Prints, per criterion, how far the reviewers agree with each other (kappa for two, alpha for
more, percent, n), each judge against the human verdict in force, and the leave-one-reviewer-out
comparison, as JSON (``--format json``) or as plain sentences (``--format text``).
Multi-choice criteria get the figures of their scale (``multi_choice_criteria``:
storage/services/option_baseline.py). ``trust``: how far to trust each judge (corrected
estimates, stability, length and position effects, cost: storage/services/trust_report.py).
"""

from __future__ import annotations

import argparse
import json
import sys

from grading.errors import RubricWorkbenchError
from storage.config import add_db_argument
from storage.engine import SessionFactory, open_database
from storage.services import (
    agreement,
    baseline_json,
    human_baseline,
    labels,
    option_baseline,
    trust_json,
    trust_report,
)
from storage.services.agreement_sources import AgreementData
from storage.services.trust_types import TrustReport


def _scope(value: str) -> tuple[str, int | None]:
    """NAME or NAME:VERSION (a name may itself contain colons: the last part must be a number
    to count as the version)."""
    name, sep, number = value.rpartition(":")
    if sep and number.strip().isdigit() and name:
        return name, int(number)
    return value, None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help="dataset name")
    parser.add_argument("--rubric", required=True,
                        help="rubric name, or NAME:VERSION (default: the latest version)")
    parser.add_argument("--format", choices=("json", "text"), default="json")
    add_db_argument(parser)


def agreement_json(sessions: SessionFactory, version_id: int, dataset_id: int, *,
                   scope: dict | None = None, every_verdict: bool = False,
                   ) -> tuple[dict, AgreementData, TrustReport]:
    """What the command prints, with the data and the trust report behind it. From the
    database's counts when they hold every figure (``agreement.agreement_report``: at
    100,000 responses the judges' every verdict is millions of rows); ``every_verdict``:
    from every verdict read into Python (the reference the counted figures are tested
    against). ``scope``: the names the command was given, printed after the figures."""
    if every_verdict:
        data = agreement.gather_sources(sessions, version_id, dataset_id)
        report = agreement.build_report(data)
        baseline = human_baseline.build_baseline(data)
    else:
        report = agreement.agreement_report(sessions, version_id, dataset_id)
        data = report.data
        baseline = human_baseline.report_baseline(report)
    options = option_baseline.option_baseline_json(data)
    # How far to trust each judge: built on the same verdicts (the command line sees
    # everything, as an adjudicator does)
    trust = trust_report.build_trust(sessions, report, baseline)
    found = {**baseline_json.baseline_json(data, baseline), **(scope or {})}
    if options:  # criteria with options: the figures of their scale (weighted kappa, ...)
        found["multi_choice_criteria"] = options
    # Calibrated runs are measured on the responses they were not shown as examples.
    found["held_out"] = {
        key: {"k": held.k, "reviewed": held.reviewed, "examples": held.examples,
              "held_out": held.held_out} for key, held in data.held_out.items()}
    found["trust"] = trust_json.trust_json(trust)
    return found, data, trust


def agreement_command(args: argparse.Namespace) -> int:
    rubric, version = _scope(args.rubric)
    try:
        sessions = open_database(args.db)
        version_id, dataset_id = labels.resolve_scope(
            sessions, rubric=rubric, dataset=args.dataset, version=version)
        report, data, trust = agreement_json(
            sessions, version_id, dataset_id,
            scope={"rubric": rubric, "rubric_version": version, "dataset": args.dataset})
    except RubricWorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    options = report.get("multi_choice_criteria", [])
    if args.format == "json":
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    for row in report["criteria"]:
        people = row["reviewers"]
        among = people["agreement"]
        value = "n/a" if among["value"] is None else f"{among['value']:.2f}"
        if among["value"] is not None and among["ci95"]:
            value += f" [95% {among['ci95'][0]:.2f}, {among['ci95'][1]:.2f}]"
        print(f"{row['criterion']}: {people['count']} reviewers, {people['method']} {value} "
              f"(n={among['n']})")
        for judge in row["judges"]:
            print(f"  {judge['sentence']}")
    for line in option_lines(options):
        print(line)
    for key, held in data.held_out.items():
        print(f"{data.source(key).label}: calibrated with {held.k} examples per criterion; "
              f"held out: {held.held_out} of {held.reviewed} reviewed responses; "
              f"{held.examples} were examples")
    for judge in trust.judges:
        print(f"{judge.label}: {judge.verdict}")
    print(f"Corrected estimates use {trust.rule} ({trust.sampled_reviewed} sampled responses "
          f"reviewed, {trust.reviewed_outside_sample} reviewed outside the sample left out).")
    return 0


def option_lines(options: list[dict]) -> list[str]:
    """The multi-choice criteria's figures as plain sentences (``--format text``)."""
    lines = []
    for row in options:
        among = row["reviewers"]
        value = "n/a" if among["value"] is None else f"{among['value']:.2f}"
        lines.append(f"{row['criterion']} ({row['scale_type']}): {among['count']} reviewers, "
                     f"{among['method']} {value} (n={among['n']})")
        for judge in row["judges"]:
            vs = judge["vs_human_verdict"]
            kappa = "n/a" if vs["kappa"] is None else f"{vs['kappa']:.2f}"
            lines.append(f"  {judge['label']}: {vs['metric']} vs the human verdict {kappa} "
                         f"(n={vs['n']})")
    return lines
