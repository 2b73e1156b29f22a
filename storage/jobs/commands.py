"""The job commands of ``rubric-workbench``: ``grade``, ``worker`` and ``export``.

storage/cli.py only declares the arguments; the work is here. File problems are reported
with their line and column and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from grading.errors import RubricValidationError, RubricWorkbenchError
from grading.rubric import Rubric
from grading.samples import MAX_SAMPLES, check_samples
from grading.structured_output import MODES
from storage import limits, run_rules
from storage.atomic_file import atomic_text_file
from storage.config import add_db_argument, database_url, describe_url
from storage.errors import ImportProblemsError, Problem
from storage.jobs.helper_processes import (
    EarlyHelpers,
    auto_scaler,
    interrupts_held,
    plural_helpers,
    prepare_standby,
    stop_helpers,
    stop_when_orphaned,
    take_go,
    wait_ready,
)
from storage.response_files import (
    ColumnMapping,
    count_responses,
    iter_responses,
    peek_columns,
)
from storage.services.reviewers import command_line_actor

EXIT_OK, EXIT_FAILED_GRADES, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
GRADER_NAMES = {"per-criterion": "per_criterion", "one-shot": "one_shot",
                "rubric-as-judge": "rubric_as_judge"}


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


# -- grade --------------------------------------------------------------------------------------
def add_grade_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rubric", required=True, metavar="FILE",
                        help="rubric file (YAML or JSON)")
    parser.add_argument("--responses", required=True, metavar="FILE",
                        help="responses file (CSV, JSONL or a JSON list)")
    parser.add_argument("--grader", action="append", choices=list(GRADER_NAMES), required=True,
                        help="grader to run (repeat for several)")
    parser.add_argument("--model", action="append", required=True,
                        help="litellm model name, e.g. openai/gpt-4.1-mini (repeat for several)")
    parser.add_argument("--api-base", help="OpenAI-compatible server URL (with /v1)")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="at most this many calls in flight per model, helper processes "
                             "included (default: no cap; the provider's capacity is "
                             "discovered)")
    parser.add_argument("--workers", type=_workers, default="auto",
                        help="processes that split the grading: a number, or auto (the "
                             "default: one, plus a helper process on each idle core while "
                             "grading is CPU-bound, as with a fast provider)")
    add_db_argument(parser)
    parser.add_argument("--out", metavar="FILE",
                        help="write the results to a .jsonl or .csv file")
    parser.add_argument("--text-column", help="column with the response text (default: "
                                              "text/output/response/completion/answer)")
    parser.add_argument("--query-column", help="column with the query (default: "
                                               "query/prompt/question/input)")
    parser.add_argument("--id-column", help="column with the response id (default: "
                                            "id/external_id/response_id/uid)")
    parser.add_argument("--thinking-column", help="column with the reasoning (default: "
                                                  "thinking/reasoning)")
    parser.add_argument("--reference-column",
                        help="column with a reference answer the judge compares each response "
                             "with (default: reference/reference_answer/ground_truth/gold/"
                             "expected, or answer beside a response column); an empty cell "
                             "grades that response without one")
    parser.add_argument("--no-cache", action="store_true",
                        help="always call the provider (do not answer from the cache)")
    parser.add_argument("--name", default="", help="a name for the runs")
    parser.add_argument("--max-file-mb", type=float, default=None, metavar="MB",
                        help="largest responses file accepted (default: the app's limit, "
                             f"${limits.MAX_FILE_VARIABLE} or {limits.DEFAULT_MAX_FILE_MB:g})")

    parser.add_argument("--call-deadline", type=float, default=None, metavar="SECONDS",
                        help="give up on one provider call after this long, every retry and "
                             "slow read included (default 300)")
    parser.add_argument("--pause-after-failures", type=int, default=None, metavar="N",
                        help="pause a run once N calls in a row failed the same way "
                             "(connection reset, HTTP 5xx, an HTML page, no choices, no answer "
                             "in time) with no answer in between; the same command resumes "
                             "it with one probe call first (default 30; 0: never pause)")
    parser.add_argument("--structured-output", default="auto", choices=MODES,
                        help="how calls ask for JSON: auto (default: JSON schema, stepping "
                             "down to JSON mode or plain text when the server refuses it), "
                             "json_schema, json_object (llama-cpp-python's server) or off")
    parser.add_argument("--verbose", action="store_true",
                        help="log every provider request (default: warnings and a summary)")
    parser.add_argument("--cost-cap", default=None, metavar="USD",
                        help="stop each run once its cost reaches this many US dollars; what "
                             "it graded is kept, the rest stays pending (needs a model "
                             "litellm has a price for)")
    parser.add_argument("--calibrate", type=int, default=None, metavar="K",
                        help="few-shot calibration: show the judge up to K reviewed examples "
                             "per criterion (balanced MET/UNMET), taken from responses people "
                             "reviewed under this rubric; recorded with the run")
    parser.add_argument("--calibration-seed", type=int, default=0, metavar="S",
                        help="which reviewed examples --calibrate draws (default 0; the same "
                             "seed draws the same examples)")
    parser.add_argument("--samples", type=_samples, default=1, metavar="N",
                        help="ask the judge N times per criterion (per-criterion grader; "
                             f"1 to {MAX_SAMPLES}): the verdict is the samples' majority (a "
                             "MET/UNMET tie is CANNOT_ASSESS; a rating takes their median, "
                             "as a panel does), and every sample is kept for the "
                             "stability figures. Provider calls and cost multiply by N; "
                             "cached samples are replayed, so a larger N pays only for the "
                             "new ones (default 1)")
    parser.add_argument("--shuffle-criteria", action="store_true",
                        help="one-shot grader: list the criteria in a different order for "
                             "each response (reproducible: the same response gets the same "
                             "order, so the cache still answers a re-run) and record where "
                             "each criterion was listed; the agreement report then measures "
                             "whether the criteria listed first or last are judged "
                             "differently")
    parser.add_argument("--shuffle-options", action="store_true",
                        help="per-criterion and one-shot graders: show each multi-choice "
                             "criterion's options in a different order for each response "
                             "(reproducible, so the cache still answers a re-run) and record "
                             "the order; the agreement report then measures whether the "
                             "option shown first is chosen more often than chance")
    parser.add_argument("--temperature", type=float, default=None, metavar="T",
                        help="the judge's sampling temperature (default 0); "
                             "samples at temperature 0 tend to repeat one answer")
    from storage.jobs.panel_grade import add_panel_arguments

    add_panel_arguments(parser)


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


def configure_logging(verbose: bool) -> None:
    """Warnings and our own summaries by default; every request with ``--verbose``. Secrets
    are masked in whatever is written."""
    from grading.redact import install_log_redaction

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr,
                        force=True)
    logging.getLogger("storage").setLevel(logging.INFO)
    for name in ("httpx", "httpcore", "LiteLLM", "litellm", "openai"):
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    install_log_redaction()


def _database_problem(exc: BaseException, url: str) -> str:
    from storage.db_errors import describe_db_error

    where = describe_url(url)
    cause = describe_db_error(exc)
    advice = "check that it is reachable and writable, or give another one with --db"
    if "read-only" in cause:
        advice = ("make the file and its folder writable (the database also writes a -wal "
                  "and -shm file next to it), or give another one with --db")
    elif "full" in cause:
        advice = "free some disk space, then run the same command again"
    elif "locked" in cause:
        advice = ("another program is writing to it (the app, a worker or an import); nothing "
                  "was changed — run the same command again when it has finished")
    return f"the database {where} cannot be used: {cause}; {advice}"


def _guarded(command):
    """Database faults end a command with a sentence that names the database, not a
    traceback."""
    def run(args: argparse.Namespace) -> int:
        from storage.db_errors import is_storage_fault

        try:
            return command(args)
        except Exception as exc:
            if not is_storage_fault(exc) or isinstance(exc, FileNotFoundError):
                raise
            _error(_database_problem(exc, args.db or database_url()))
            return EXIT_FAILED_GRADES
    run.__name__ = command.__name__
    run.__doc__ = command.__doc__
    return run


guarded = _guarded  # for the commands wired in storage/cli.py


@_guarded
def grade_command(args: argparse.Namespace) -> int:
    if args.concurrency is not None and args.concurrency < 1:
        _error("--concurrency must be at least 1")
        return EXIT_USAGE
    if args.call_deadline is not None and not args.call_deadline > 0:
        _error("--call-deadline must be a number of seconds above 0")
        return EXIT_USAGE
    if args.pause_after_failures is not None and args.pause_after_failures < 0:
        _error("--pause-after-failures must be a number of calls, 0 or more (0: never pause)")
        return EXIT_USAGE
    cost_cap = _cost_cap(args.cost_cap)
    if isinstance(cost_cap, str):
        _error(cost_cap)
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
        _error(problem)
        return EXIT_USAGE
    calibration = _calibration(args)
    if isinstance(calibration, str):
        _error(calibration)
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
        _error(str(exc))
        return EXIT_USAGE
    if args.out and not args.out.lower().endswith((".jsonl", ".csv")):
        _error(f"--out must end in .jsonl or .csv, got {args.out}")
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
            _error(problem)
            return EXIT_FAILED_GRADES
    unpriced = _unpriced(args.model) if cost_cap is not None else []
    if unpriced:  # before the rubric or the responses are stored
        _error(f"--cost-cap cannot be kept: litellm has no price for {', '.join(unpriced)}, "
               "so the cost stays unknown and never reaches the cap; grade without "
               "--cost-cap, or grade in the app with a price set on the Settings page")
        return EXIT_USAGE
    if run_rules.samples_need_other_graders(args.samples, args.grader):
        _error(f"--samples {args.samples} needs --grader per-criterion only: the other "
               "graders ask about the whole rubric in one call; drop --samples or the "
               "other graders")
        return EXIT_USAGE
    if run_rules.criteria_shuffle_needs_other_graders(args.shuffle_criteria, args.grader):
        _error("--shuffle-criteria needs --grader one-shot only: the other graders do not "
               "list the criteria in one prompt; drop --shuffle-criteria or the other "
               "graders")
        return EXIT_USAGE
    if args.shuffle_options:
        refused = _options_shuffle_problem(args.grader, rubric)
        if refused:  # before the rubric or the responses are stored
            _error(refused)
            return EXIT_USAGE
    if calibration is not None:
        from storage.services import calibration as calibration_service

        refused = calibration_service.too_few(calibration_service.counts_for_rubric_file(
            sessions, Path(args.rubric).stem, rubric.criteria), calibration["k"])
        if refused:  # before the rubric or the responses are stored
            _error(refused)
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
        _error(str(exc))
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

    status = retry_db(_summary, sessions, run_ids, wall)
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
            _error(f"cannot write {args.out}: {exc.strerror}")
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


def _samples(value: str) -> int:
    try:
        return check_samples(int(value))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 to {MAX_SAMPLES}, got {value!r}") from None


def _workers(value: str) -> int | str:
    if value.strip().lower() == "auto":
        return "auto"
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(
            f"must be a number of processes (1 or more) or auto, got {value!r}")
    return count


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
                _draw(sessions, run_ids, final=True)


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
            await asyncio.to_thread(_draw, sessions, run_ids)
        await asyncio.sleep(0.5)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _money(progresses) -> str:
    known = sum(p.known_cost for p in progresses)
    unknown = any(p.unknown_cost_count for p in progresses)
    if unknown and not known:
        return "cost unknown"
    return f"${known:.4f}" + (" + unknown" if unknown else "")


def _draw(sessions, run_ids: Sequence[int], *, final: bool = False) -> None:
    from storage.jobs.progress import run_progress

    progresses = [run_progress(sessions, run_id) for run_id in run_ids]
    total = sum(p.total for p in progresses)
    done = sum(p.done for p in progresses)  # graded with a score: a failure is apart
    failed = sum(p.failed for p in progresses)
    pending = sum(p.pending for p in progresses)
    hits = sum(p.cache_hits for p in progresses)
    rates = [p.rate_per_s for p in progresses if p.rate_per_s]
    rate = sum(rates) if rates else None
    fraction = done / total if total else 1.0
    width = max(10, min(30, shutil.get_terminal_size((80, 20)).columns - 70))
    filled = round(fraction * width)
    parts = [f"[{'#' * filled}{'.' * (width - filled)}] {fraction:4.0%} {done}/{total} graded"]
    if failed:
        parts.append(f"{failed} failed")
    parts.append(_money(progresses))
    if hits:
        parts.append(f"{hits} cached")
    if rate and not final and not any(p.outage for p in progresses):
        parts.append(f"{rate:.1f}/s ETA {_duration(pending / rate)}")
    if final:
        parts.append("; ".join(f"run {p.run_id} {p.status_words}" for p in progresses))
    notices = {p.notice for p in progresses if p.notice}
    if notices and not final:
        parts.append("; ".join(sorted(notices)))
    sys.stderr.write("\r" + " · ".join(parts) + "\033[K" + ("\n" if final else ""))
    sys.stderr.flush()


def _summary(sessions, run_ids: Sequence[int], wall: float) -> int:
    from storage.jobs.progress import run_progress
    from storage.services import runs

    status = EXIT_OK
    rows = [(runs.get_run(sessions, run_id), run_progress(sessions, run_id))
            for run_id in run_ids]
    # The status as a person reads it ("finished with 4 failed", not "done"), as the app says
    wide = max([9, *(len(p.status_words) for _, p in rows)])
    print(f"{'run':>5}  {'grader':<16} {'model':<28} {'status':<{wide}} {'graded':>7} "
          f"{'failed':>6} {'tokens':>9} {'cost':>10} {'cached':>7}")
    for run, p in rows:
        cost = "unknown" if p.cost is None else f"${p.cost:.4f}"
        # "graded" counts grades with a score; failed ones are counted apart
        print(f"{run.id:>5}  {run.grader:<16} {run.model[:28]:<28} {p.status_words:<{wide}} "
              f"{p.done:>7} {p.failed:>6} {p.total_tokens:>9} {cost:>10} {p.cache_hits:>7}")
        if p.error:
            print(f"       {p.error}")
        if p.failed or p.status != "done":
            status = EXIT_FAILED_GRADES
    print(f"wall time {wall:.2f} s; export with: rubric-workbench export "
          + " ".join(f"--run {r}" for r in run_ids))
    return status


# -- worker -------------------------------------------------------------------------------------
def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    from storage.jobs.queue import DEFAULT_LEASE_SECONDS
    from storage.jobs.worker import DEFAULT_MAX_RUNS

    add_db_argument(parser)
    parser.add_argument("--concurrency", type=int, default=None,
                        help="at most this many calls in flight per model in this process "
                             "(each worker applies its own) unless a run sets it (default: "
                             "no cap; the capacity is discovered)")
    parser.add_argument("--max-runs", type=int, default=DEFAULT_MAX_RUNS,
                        help="runs executed at once by this worker")
    parser.add_argument("--lease", type=float, default=DEFAULT_LEASE_SECONDS,
                        help="seconds without a heartbeat after which a run is taken over")
    parser.add_argument("--poll", type=float, default=1.0,
                        help="seconds between looks at the queue when it is empty")
    parser.add_argument("--until-idle", action="store_true",
                        help="exit once no run is queued or running, instead of waiting")
    parser.add_argument("--verbose", action="store_true",
                        help="log every provider request (default: one progress line per run "
                             "every 30 s)")
    parser.add_argument("--run", type=int, action="append", default=None, metavar="RUN_ID",
                        help="help only with these runs (repeat for several); with "
                             "--until-idle, exit once they are finished")
    # A helper of ``grade --workers auto``: ready, then waits for "go" on stdin (or exits).
    parser.add_argument("--standby", action="store_true", help=argparse.SUPPRESS)
    # A helper of ``grade --workers N``: its part of a run's --concurrency (1/N).
    parser.add_argument("--part", type=float, default=None, help=argparse.SUPPRESS)


@_guarded
def worker_command(args: argparse.Namespace) -> int:
    from storage.engine import open_database
    from storage.jobs.worker import Worker

    configure_logging(args.verbose)
    url = args.db or database_url()
    parent = os.getppid()  # a standby helper's grading process: it stops when that is gone
    if args.part is not None:
        from grading.limiter import share_ceilings

        share_ceilings(args.part)
    only_runs = tuple(args.run) if args.run else None
    if args.run or args.standby:  # a helper of ``grade``: it may wait for this line
        from storage.jobs.run_options import preload_litellm

        preload_litellm()
        try:
            print("ready", flush=True)
        except BrokenPipeError:  # the grading process is gone (interrupted): nobody to help
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
    if args.standby:  # the database is opened once told to go: its runs may not exist yet
        prepare_standby(getattr(args, "own_process", False))
        told = take_go(sys.stdin.readline())
        if told is None:
            return EXIT_OK  # not needed after all
        only_runs = tuple(told) or only_runs
        if not only_runs:  # a helper helps with given runs: never any run of the database
            _error("a standby helper was told to go without any run; nothing to do")
            return EXIT_USAGE
    sessions = open_database(url)
    if sessions.kw["bind"].dialect.name == "sqlite" and not only_runs:
        print("warning: the database is SQLite: run only one worker on it (several are safe "
              "but only slow each other down); use PostgreSQL for several workers",
              file=sys.stderr)
    worker = Worker(sessions, max_runs=args.max_runs, poll_interval=args.poll,
                    lease_seconds=args.lease, concurrency=args.concurrency,
                    only_runs=only_runs)
    print(f"worker {worker.worker_id} on {describe_url(url)}", file=sys.stderr, flush=True)

    from storage.jobs.run_options import freeze_heap, preload_litellm

    preload_litellm()
    if getattr(args, "own_process", False):
        freeze_heap()

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        orphaned = (asyncio.create_task(stop_when_orphaned(stop, parent)) if args.standby
                    else None)
        try:
            await worker.run(stop, until_idle=args.until_idle)
        finally:
            if orphaned is not None:
                orphaned.cancel()

    asyncio.run(serve())
    failed = sum(1 for r in worker.results if r.status == "failed" or r.failed)
    return EXIT_FAILED_GRADES if failed else EXIT_OK


def _export_examples(args: argparse.Namespace) -> int:
    if len(args.run) != 1:
        _error("--kind examples needs exactly one --run ID (a calibrated run)")
        return EXIT_USAGE
    from storage.engine import open_database
    from storage.exports import examples_export
    from storage.services import runs

    fmt = args.format or ("csv" if (args.out or "").lower().endswith(".csv") else "jsonl")
    sessions = open_database(args.db or database_url())
    try:
        run = runs.get_run(sessions, args.run[0])
    except RubricWorkbenchError as exc:
        _error(str(exc))
        return EXIT_FAILED_GRADES
    if run.settings.calibration is None:
        _error(f"run {run.id} was not calibrated with reviewed examples; nothing to export")
        return EXIT_USAGE
    text = examples_export(sessions, run.id, fmt)
    if args.out in (None, "-"):
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with atomic_text_file(args.out) as target:
            target.write(text)
    except OSError as exc:
        _error(f"cannot write {args.out}: {exc.strerror}")
        return EXIT_FAILED_GRADES
    print(f"wrote the examples of run {run.id} to {args.out}", file=sys.stderr)
    return EXIT_OK


# -- export -------------------------------------------------------------------------------------
def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=("results", "gold", "training", "verdicts",
                                           "examples"),
                        default="results",
                        help="results (default): one record per response x run; gold: the "
                             "human-reviewed set; training: texts with effective scores; "
                             "verdicts: the human-verdict sheet (CSV) that import-verdicts "
                             "reads; examples: the reviewed examples a calibrated --run "
                             "showed its judge")
    parser.add_argument("--run", type=int, action="append", default=[],
                        help="run id (repeat for several; results only)")
    parser.add_argument("--panel", type=int, action="append", default=[],
                        help="judge panel id, exported like a run (repeat for several; "
                             "results only; `rubric-workbench panel list` shows them)")
    parser.add_argument("--format", choices=("jsonl", "csv"), default=None,
                        help="default: from --out's extension, else jsonl")
    parser.add_argument("--out", metavar="FILE", help="output file, or a directory to write "
                        "a file named after the dataset, rubric and version (default: stdout)")
    parser.add_argument("--rubric", help="rubric name (gold and training)")
    parser.add_argument("--rubric-version", type=int, default=None,
                        help="version number (default: the latest)")
    parser.add_argument("--dataset", help="dataset name (gold and training)")
    parser.add_argument("--complete-only", action="store_true",
                        help="gold: only responses with every criterion reviewed")
    parser.add_argument("--for-reviewer", metavar="KEY", default=None,
                        help="export what this reviewer may see under blind review: other "
                             "people's verdicts only on the criteria KEY answered (e.g. a "
                             "verdict sheet for KEY to fill in); default: everything")
    add_db_argument(parser)


def export_sight(reviewer: str | None):
    """Whose eyes an export reads with: the named reviewer's, or the command line's."""
    from storage.services import blindness
    from storage.services.reviewers import command_line_actor

    if reviewer is not None and reviewer.strip():
        return blindness.as_reviewer(reviewer)
    return blindness.sight_of(command_line_actor())


@_guarded
def export_command(args: argparse.Namespace) -> int:
    if args.kind == "examples":
        return _export_examples(args)
    if args.kind != "results":
        if not (args.rubric and args.dataset):
            _error(f"--kind {args.kind} needs --rubric and --dataset")
            return EXIT_USAGE
        from storage.label_commands import export_labels

        return export_labels(args.kind, rubric=args.rubric, dataset=args.dataset,
                             version=args.rubric_version, out=args.out,
                             complete_only=args.complete_only, db=args.db,
                             sight=export_sight(args.for_reviewer))
    if not args.run and not args.panel:
        _error("give at least one --run ID (rubric-workbench grade prints them) or --panel ID "
               "(rubric-workbench panel list)")
        return EXIT_USAGE
    fmt = args.format or ("csv" if (args.out or "").lower().endswith(".csv") else "jsonl")

    from storage.engine import open_database
    from storage.exports import results_file_name, write_results

    sessions = open_database(args.db or database_url())
    try:
        if args.out not in (None, "-") and Path(args.out).is_dir():
            args.out = str(Path(args.out) / results_file_name(sessions, args.run, fmt,
                                                              args.panel))
        if args.out in (None, "-"):
            count = write_results(sessions, args.run, sys.stdout, fmt, args.panel,
                                  sight=export_sight(args.for_reviewer))
        else:
            from storage.services import panels

            for panel_id in args.panel:  # refused before the file is opened
                panels.get_panel(sessions, panel_id)
            with atomic_text_file(args.out) as target:
                count = write_results(sessions, args.run, target, fmt, args.panel,
                                      sight=export_sight(args.for_reviewer))
    except RubricWorkbenchError as exc:
        _error(str(exc))
        return EXIT_FAILED_GRADES
    except OSError as exc:
        _error(f"cannot write {args.out}: {exc.strerror}")
        return EXIT_FAILED_GRADES
    if args.out not in (None, "-"):
        print(f"wrote {count} records to {args.out}", file=sys.stderr)
    return EXIT_OK
