"""``rubric-workbench grade``: the checks, then the grading (the worker and export commands
live beside it, in worker_command.py and export_command.py).

Its parts live in modules named for them: grade_checks.py (option checks), grade_inputs.py
(reading and storing the files, the runs), grade_execution.py (grading and the summary).

storage/cli.py only declares the arguments; the work is here. File problems are reported
with their line and column and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import sys
import time
from pathlib import Path

from grading.errors import RubricValidationError, RubricWorkbenchError
from grading.rubric import Rubric
from storage import run_rules
from storage.config import database_url, describe_url
from storage.errors import ImportProblemsError
from storage.jobs.cli_common import (
    EXIT_FAILED_GRADES,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    configure_logging,
    error,
    guarded,
)
from storage.jobs.export_command import add_export_arguments, export_command
from storage.jobs.grade_arguments import add_grade_arguments
from storage.jobs.grade_checks import (
    options_shuffle_problem,
    parse_calibration,
    parse_cost_cap,
    unpriced_models,
)
from storage.jobs.grade_execution import grade_all, report
from storage.jobs.grade_inputs import (
    import_dataset,
    read_inputs,
    rubric_version,
    runs_for,
    runs_get,
)
from storage.jobs.helper_processes import (
    EarlyHelpers,
    auto_scaler,
    interrupts_held,
    plural_helpers,
    stop_helpers,
    wait_ready,
)
from storage.jobs.worker_command import add_worker_arguments, worker_command
from storage.response_files import ColumnMapping
from storage.services.reviewers import command_line_actor

# Re-exported: storage/cli.py wires every command through this module.
__all__ = ["EXIT_OK", "add_export_arguments", "add_grade_arguments", "add_worker_arguments",
           "configure_logging", "export_command", "grade_command", "guarded", "worker_command"]


@guarded
def grade_command(args: argparse.Namespace) -> int:
    if args.concurrency is not None and args.concurrency < 1:
        error("--concurrency must be at least 1")
        return EXIT_USAGE
    if args.call_deadline is not None and not args.call_deadline > 0:
        error("--call-deadline must be a number of seconds above 0")
        return EXIT_USAGE
    if args.pause_after_failures is not None and args.pause_after_failures < 0:
        error("--pause-after-failures must be a number of calls, 0 or more (0: never pause)")
        return EXIT_USAGE
    cost_cap = parse_cost_cap(args.cost_cap)
    if isinstance(cost_cap, str):
        error(cost_cap)
        return EXIT_USAGE
    if cost_cap is not None and args.workers != 1:
        # The cap is kept by the process that counts every response in flight against it:
        # with helpers, each counted only its own, and together they spent up to the cap
        # each. A run with a cap is never joined by a helper (chunks.joinable_run).
        if isinstance(args.workers, int):
            print(f"--cost-cap is kept by the one process that grades each run: grading with "
                  f"1 process, not {args.workers}", file=sys.stderr)
        args.workers = 1
    from storage.jobs.panel_grade import panel_problem

    problem = panel_problem(args)
    if problem:
        error(problem)
        return EXIT_USAGE
    calibration = parse_calibration(args)
    if isinstance(calibration, str):
        error(calibration)
        return EXIT_USAGE
    if (isinstance(args.workers, int) and args.concurrency
            and args.workers > args.concurrency):
        # Each process keeps at least one call in flight: more processes than calls allowed
        # would take the command past its cap.
        print(f"--concurrency {args.concurrency} allows {args.concurrency} call(s) in flight "
              f"at once: grading with {args.concurrency} process(es), not {args.workers}",
              file=sys.stderr)
        args.workers = args.concurrency
    configure_logging(args.verbose)
    try:
        rubric, mapping, count, print_ = read_inputs(args)
    except (RubricValidationError, ImportProblemsError) as exc:
        error(str(exc))
        return EXIT_USAGE
    if args.out and not args.out.lower().endswith((".jsonl", ".csv")):
        error(f"--out must end in .jsonl or .csv, got {args.out}")
        return EXIT_USAGE
    # Helpers import litellm on another core while this process stores the inputs and
    # imports it too; stopped again if the command ends before they are set to work.
    early = None
    try:
        with interrupts_held():  # a Ctrl-C as a helper is forked: it is still stopped
            early = EarlyHelpers(args.db or database_url(), args.workers, count,
                                 len(args.model) * len(args.grader))
        return _grade_inputs(args, rubric, mapping, count, print_, cost_cap, calibration,
                             early)
    except KeyboardInterrupt:  # before grading started (while grading, runs are cancelled)
        print("\ninterrupted before grading: run the same command again to start (or go "
              "on)", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if early is not None:
            early.dismiss()


def _grade_inputs(args: argparse.Namespace, rubric: Rubric, mapping: ColumnMapping,
                  count: int, print_: str, cost_cap, calibration,
                  early: EarlyHelpers) -> int:
    from grading.llm import API_BASE_ENV
    from grading.redact import has_url_credentials, strip_url_credentials
    from storage.engine import open_database
    from storage.jobs import queue, resume
    from storage.jobs.runner import missing_credentials
    from storage.jobs.worker import new_worker_id
    from storage.services import runs

    url = args.db or database_url()
    sessions = open_database(url)
    api_base = args.api_base
    if has_url_credentials(api_base):
        # Credentials live in the environment only; the run stores the masked address.
        os.environ[API_BASE_ENV] = api_base
        api_base = strip_url_credentials(api_base)
    for model in args.model:
        problem = missing_credentials(model, args.api_base)
        if problem:
            error(problem)
            return EXIT_FAILED_GRADES
    unpriced = unpriced_models(args.model) if cost_cap is not None else []
    if unpriced:  # before the rubric or the responses are stored
        error(f"--cost-cap cannot be kept: litellm has no price for {', '.join(unpriced)}, "
               "so the cost stays unknown and never reaches the cap; grade without "
               "--cost-cap, or grade in the app with a price set on the Settings page")
        return EXIT_USAGE
    if run_rules.samples_need_other_graders(args.samples, args.grader):
        error(f"--samples {args.samples} needs --grader per-criterion only: the other "
               "graders ask about the whole rubric in one call; drop --samples or the "
               "other graders")
        return EXIT_USAGE
    if run_rules.criteria_shuffle_needs_other_graders(args.shuffle_criteria, args.grader):
        error("--shuffle-criteria needs --grader one-shot only: the other graders do not "
               "list the criteria in one prompt; drop --shuffle-criteria or the other "
               "graders")
        return EXIT_USAGE
    if args.shuffle_options:
        refused = options_shuffle_problem(args.grader, rubric)
        if refused:  # before the rubric or the responses are stored
            error(refused)
            return EXIT_USAGE
    if calibration is not None:
        from storage.services import calibration as calibration_service

        refused = calibration_service.too_few(calibration_service.counts_for_rubric_file(
            sessions, Path(args.rubric).stem, rubric.criteria), calibration["k"])
        if refused:  # before the rubric or the responses are stored
            error(refused)
            return EXIT_USAGE
    try:
        # The responses first: a duplicate id is found as they are stored (all or nothing),
        # and then the rubric is not stored either.
        dataset_id = import_dataset(sessions, Path(args.responses), mapping, print_)
        version_id = rubric_version(sessions, Path(args.rubric).stem, rubric)
        extra: dict = {"use_cache": not args.no_cache}
        if args.concurrency:
            extra["concurrency"] = args.concurrency
        if args.call_deadline:
            extra["call_deadline"] = args.call_deadline
        if args.pause_after_failures is not None:
            extra["pause_after_failures"] = args.pause_after_failures
        if args.structured_output != "auto":
            extra["structured_output"] = args.structured_output
        if cost_cap is not None:
            extra["cost_cap"] = cost_cap
        if args.samples > 1:
            extra["samples"] = args.samples
        if args.temperature is not None:
            extra["temperature"] = args.temperature
        if args.shuffle_criteria:
            extra["shuffle_criteria"] = True
        if args.shuffle_options:
            extra["shuffle_options"] = True
        settings: dict = {"api_base": api_base, "extra": extra}
        if calibration is not None:
            settings["calibration"] = calibration
        run_ids, resumed = runs_for(sessions, args, version_id, dataset_id, settings)
        made_panels = []
        if args.panel:
            from storage.jobs.panel_grade import make_panels

            made_panels = make_panels(sessions, args, run_ids, command_line_actor())
    except RubricWorkbenchError as exc:
        error(str(exc))
        return EXIT_USAGE
    worker_id = new_worker_id()
    ready = {r for r in run_ids if resume.prepare(sessions, runs_get(sessions, r)) == "ready"}
    # A worker on the same database may take a run first; it is then waited for, not re-run.
    claimed = [r for r in run_ids if r in ready and queue.claim_run(sessions, r, worker_id)]
    what = f"resuming run(s) {', '.join(map(str, resumed))}; " if resumed else ""
    print(f"{what}grading {count} responses with {len(run_ids)} run(s) "
          f"(ids {', '.join(map(str, run_ids))}) in {describe_url(url)}", file=sys.stderr)
    scaler = auto_scaler(url, sessions, run_ids) if args.workers == "auto" else None
    if scaler is not None:
        from storage.jobs.chunks import CHUNK_SIZE

        scaler.prestart(math.ceil(count / CHUNK_SIZE) * len(claimed), early.take_spare())
    from grading.limiter import share_ceilings

    helpers: list = []
    if isinstance(args.workers, int) and args.workers > 1:
        # Told to go once this process's opening calls are answered, each with a share of
        # what it learned (--concurrency caps the command's calls in flight, not each
        # process's: the shares split it too).
        helpers = early.take_fixed()
    if helpers:
        from storage.jobs.run_options import preload_litellm

        waited = time.monotonic()
        preload_litellm()  # while the helpers finish starting
        joined = wait_ready(helpers)
        print(f"{joined} helper worker(s) ready in {time.monotonic() - waited:.1f} s",
              file=sys.stderr)
    from storage.jobs.run_options import freeze_heap, preload_litellm

    # Imported before the clock and the scaler start: importing is CPU-bound too, and must
    # not read as grading that needs a helper.
    preload_litellm()
    if getattr(args, "own_process", False):
        freeze_heap()
    started = time.monotonic()
    try:
        asyncio.run(grade_all(sessions, run_ids, claimed, worker_id,
                              show_bar=sys.stderr.isatty(), scaler=scaler, helpers=helpers))
    except KeyboardInterrupt:
        stop_helpers(helpers + (scaler.helpers if scaler else []))
        for run_id in run_ids:
            with contextlib.suppress(RubricWorkbenchError):
                runs.cancel_run(sessions, run_id, actor=command_line_actor())
        print(f"\ninterrupted: runs {', '.join(map(str, run_ids))} cancelled; what was graded "
              "is stored", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        # The whole of every ceiling is this process's again (a caller may grade on in it).
        share_ceilings(1.0)
    if scaler is not None and scaler.helpers:
        helpers = scaler.helpers
        print(f"grading was CPU-bound: {plural_helpers(len(helpers))} joined", file=sys.stderr)
    # Every run has ended and every grade is stored (a chunk is done only once its grades
    # are): the wall ends here. What a helper still does is exit, about 0.1 s of its
    # interpreter's teardown (traced): it exits while the summary is made, and the command
    # waits for it before it returns.
    wall = time.monotonic() - started
    for helper in helpers:
        helper.terminate()
    try:
        return report(sessions, args, run_ids, made_panels, wall)
    finally:
        stop_helpers(helpers, wait=True)
