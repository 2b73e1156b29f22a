"""``rubric-workbench grade`` (the worker and export commands live beside it, in
worker_command.py and export_command.py).

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
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from grading.errors import RubricValidationError, RubricWorkbenchError
from grading.rubric import Rubric
from storage import limits, run_rules
from storage.atomic_file import atomic_text_file
from storage.config import database_url, describe_url
from storage.errors import ImportProblemsError, Problem
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
from storage.jobs.grade_arguments import GRADER_NAMES, add_grade_arguments
from storage.jobs.grade_progress import draw, summary
from storage.jobs.helper_processes import (
    EarlyHelpers,
    auto_scaler,
    interrupts_held,
    plural_helpers,
    stop_helpers,
    wait_ready,
)
from storage.jobs.worker_command import add_worker_arguments, worker_command
from storage.response_files import (
    ColumnMapping,
    count_responses,
    iter_responses,
    peek_columns,
)
from storage.services.reviewers import command_line_actor

# Re-exported: storage/cli.py wires every command through this module.
__all__ = ["EXIT_OK", "add_export_arguments", "add_grade_arguments", "add_worker_arguments",
           "configure_logging", "export_command", "grade_command", "guarded", "worker_command"]

def _read_inputs(args: argparse.Namespace) -> tuple[Rubric, ColumnMapping, int, str]:
    """Read and validate both files before anything touches the database (the responses as
    a stream): (rubric, column mapping, number of responses, the content's fingerprint)."""
    rubric = Rubric.from_file(args.rubric)
    path = Path(args.responses)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImportProblemsError([], source=f"{path}: cannot read the file: {exc.strerror}"
                                  ) from None
    limit_mb = args.max_file_mb if args.max_file_mb is not None else limits.max_file_mb()
    if size > limit_mb * 1024 * 1024:
        raise ImportProblemsError([Problem("", (
            f"the file is {size / 1024 / 1024:.1f} MB; the limit is {limit_mb:g} MB (as in "
            f"the app). Split it, or raise the limit with --max-file-mb or "
            f"{limits.MAX_FILE_VARIABLE}"))], source=path.name)
    guess = ColumnMapping.guess(peek_columns(path))
    mapping = ColumnMapping(
        text=args.text_column or guess.text,
        query=args.query_column or guess.query,
        id=args.id_column or guess.id,
        thinking=args.thinking_column or guess.thinking,
        reference=args.reference_column or guess.reference,
    )
    _check_columns(path, mapping, args)
    from storage.jobs.resume import fingerprint_file

    # The reference joins the fingerprint only when there is one, so a run started before
    # references existed still resumes.
    columns = {"text": mapping.text, "query": mapping.query, "id": mapping.id,
               "thinking": mapping.thinking}
    if mapping.reference is not None:
        columns["reference"] = mapping.reference
    print_ = fingerprint_file(path, columns)
    # Duplicate ids are found when the rows are stored (by the database, all or nothing):
    # remembering every id here grew the memory with the rows (~150 bytes each).
    return rubric, mapping, count_responses(path, mapping=mapping, remember_ids=False), print_


def _check_columns(path: Path, mapping: ColumnMapping, args: argparse.Namespace) -> None:
    """A column named on the command line must exist, and hold one thing only."""
    if args.reference_column is None:
        return
    columns = peek_columns(path)
    if args.reference_column not in columns:
        raise ImportProblemsError([Problem("", (
            f"--reference-column {args.reference_column!r} is not a column of the file; its "
            f"columns are {', '.join(repr(c) for c in columns)}"))], source=path.name)
    others = {"--text-column": mapping.text, "--query-column": mapping.query,
              "--id-column": mapping.id, "--thinking-column": mapping.thinking}
    clash = next((flag for flag, column in others.items()
                  if column == args.reference_column), None)
    if clash is not None:
        raise ImportProblemsError([Problem("", (
            f"the column {args.reference_column!r} cannot be both the reference "
            f"(--reference-column) and {clash.removeprefix('--').removesuffix('-column')}; "
            f"name another column with {clash}"))], source=path.name)


def _options_shuffle_problem(graders: list[str], rubric: Rubric) -> str | None:
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


def _rubric_version(sessions, name: str, rubric: Rubric) -> int:
    """The latest version of the rubric of this name if it has these criteria, else a new one."""
    from storage.services import rubrics

    existing = next((r for r in rubrics.list_rubrics(sessions, include_archived=True)
                     if r.name == name), None)
    if existing is None:
        return rubrics.create_rubric(sessions, name, rubric, actor=command_line_actor()).id
    latest = rubrics.get_version(sessions, existing.latest_version_id)
    if latest.to_criteria() == rubric.criteria:
        return latest.id
    return rubrics.save_criteria(sessions, latest.id, rubric, note="from the command line",
                                 actor=command_line_actor()).id


DUPLICATE_FOUND_LATE = "already used by an earlier row"


def _dataset(sessions, path: Path, mapping: ColumnMapping, print_: str) -> int:
    """The dataset already imported from this content, else a new one named after the file
    and the time; the file is read again as a stream and stored a batch at a time, all or
    nothing."""
    from storage.errors import NameTakenError
    from storage.jobs.resume import TAG, find_dataset
    from storage.services import datasets

    existing = find_dataset(sessions, print_)
    if existing is not None:
        return existing
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    stem = path.name if len(path.name) <= 150 else path.name[:149] + "…"
    for attempt in range(1, 100):
        name = f"{stem} {stamp}" + (f" ({attempt})" if attempt > 1 else "")
        try:
            return datasets.create_dataset(
                sessions, name, responses=iter_responses(path, mapping=mapping,
                                                         remember_ids=False),
                description=f"imported by rubric-workbench grade from {path} "
                            f"({TAG}{print_})", actor=command_line_actor()).id
        except NameTakenError:
            continue
        except ImportProblemsError as exc:
            if any(DUPLICATE_FOUND_LATE in p.message for p in exc.problems):
                # Nothing was stored. Only now read the file again remembering the ids, to
                # say which earlier line each duplicate repeats.
                count_responses(path, mapping=mapping)
            raise
    raise NameTakenError(f"could not find a free dataset name for {path.name}")


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
    cost_cap = _cost_cap(args.cost_cap)
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
    calibration = _calibration(args)
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
        rubric, mapping, count, print_ = _read_inputs(args)
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
    unpriced = _unpriced(args.model) if cost_cap is not None else []
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
        refused = _options_shuffle_problem(args.grader, rubric)
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
        dataset_id = _dataset(sessions, Path(args.responses), mapping, print_)
        version_id = _rubric_version(sessions, Path(args.rubric).stem, rubric)
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
        run_ids, resumed = _runs_for(sessions, args, version_id, dataset_id, settings)
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
        asyncio.run(_grade_all(sessions, run_ids, claimed, worker_id,
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
        return _report(sessions, args, run_ids, made_panels, wall)
    finally:
        stop_helpers(helpers, wait=True)


def _report(sessions, args: argparse.Namespace, run_ids: Sequence[int], made_panels,
            wall: float) -> int:
    """The summary of a finished ``grade``, its panels, and ``--out``; the exit status."""
    from storage.engine import retry_db

    status = retry_db(summary, sessions, run_ids, wall)
    for panel in made_panels:
        print(f"judge panel {panel.id}: {panel.rule} of runs "
              f"{', '.join(str(m.run.id) for m in panel.members)}; export with: "
              f"rubric-workbench panel export {panel.id}")
    if args.out:
        from storage.exports import write_results

        fmt = "csv" if args.out.lower().endswith(".csv") else "jsonl"
        try:
            with atomic_text_file(args.out) as target:
                # the panels' records after the members', exactly as `export --panel` writes
                count = write_results(sessions, run_ids, target, fmt,
                                      [p.id for p in made_panels])
        except OSError as exc:
            error(f"cannot write {args.out}: {exc.strerror}")
            return EXIT_FAILED_GRADES
        print(f"wrote {count} records to {args.out}", file=sys.stderr)
    return status


def _cost_cap(text: str | None) -> float | str | None:
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


def _unpriced(models: Sequence[str]) -> list[str]:
    """The models litellm has no price for: their cost stays unknown, so a cap is never hit."""
    from storage.jobs.estimate import price

    return [model for model in dict.fromkeys(models) if price(model, 1000, 1000)[0] is None]


def _calibration(args: argparse.Namespace) -> dict | str | None:
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


def runs_get(sessions, run_id: int):
    from storage.services import runs

    return runs.get_run(sessions, run_id)


def _runs_for(sessions, args: argparse.Namespace, version_id: int, dataset_id: int,
              settings: dict) -> tuple[list[int], list[int]]:
    """The run of each grader x model: the existing one for this exact grading, else new."""
    from storage.jobs import resume
    from storage.run_settings import RunSettings
    from storage.services import runs

    wanted = RunSettings.model_validate(settings)
    run_ids, resumed = [], []
    for grader in dict.fromkeys(args.grader):
        for model in dict.fromkeys(args.model):
            found = resume.find_run(sessions, dataset_id=dataset_id, version_id=version_id,
                                    grader=GRADER_NAMES[grader], model=model, settings=wanted)
            if found is not None:
                run_ids.append(found.id)
                resumed.append(found.id)
                continue
            run_ids.append(runs.create_run(
                sessions, rubric_version_id=version_id, dataset_id=dataset_id,
                grader=GRADER_NAMES[grader], model=model, name=args.name,
                settings=settings, actor=command_line_actor()).id)
    return run_ids, resumed


async def _grade_all(sessions, run_ids: Sequence[int], claimed: Sequence[int], worker_id: str,
                     *, show_bar: bool, scaler=None, helpers: Sequence = ()) -> None:
    from storage.jobs.helper_processes import set_to_work_after_opening
    from storage.jobs.runner import execute_run

    work = asyncio.gather(
        *(execute_run(sessions, run_id, worker_id=worker_id) for run_id in claimed),
        *(_wait_finished(sessions, run_id) for run_id in run_ids if run_id not in claimed))
    aside = [asyncio.create_task(scaler.run())] if scaler is not None else []
    if helpers:
        aside.append(asyncio.create_task(set_to_work_after_opening(sessions, run_ids, helpers)))
    if show_bar:
        aside.append(asyncio.create_task(_progress_bar(sessions, run_ids)))
    try:
        await work
    finally:
        for task in aside:
            task.cancel()
        await asyncio.gather(*aside, return_exceptions=True)
        if scaler is not None:
            await asyncio.to_thread(scaler.close)
        if show_bar:
            with contextlib.suppress(Exception):
                draw(sessions, run_ids, final=True)


async def _wait_finished(sessions, run_id: int) -> None:
    """Wait for a run another live worker holds (a dead one's run is taken over)."""
    from storage.db_errors import is_storage_fault
    from storage.jobs import queue
    from storage.jobs.runner import execute_run
    from storage.jobs.worker import new_worker_id
    from storage.services import runs

    while True:
        try:
            if (await asyncio.to_thread(runs.get_run, sessions, run_id)).finished:
                return
            worker_id = new_worker_id()
            if await asyncio.to_thread(queue.claim_run, sessions, run_id, worker_id):
                await execute_run(sessions, run_id, worker_id=worker_id)
                continue
        except Exception as exc:
            if not is_storage_fault(exc):
                raise
        await asyncio.sleep(0.5)


async def _progress_bar(sessions, run_ids: Sequence[int]) -> None:
    while True:
        with contextlib.suppress(Exception):  # the database may be restarting: skip a frame
            await asyncio.to_thread(draw, sessions, run_ids)
        await asyncio.sleep(0.5)


