"""``rubric-workbench compare``: two responses files, paired by id or query, compared with a
PairwiseGrader in both orders; prints the per-criterion table and B's win rate.

Every input problem ends the command with one line naming the file, the line and what to do,
before any call and with nothing written. Pairs whose two texts are identical, and rows with
no partner, are listed, never silently dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from grading.errors import RubricValidationError, RubricWorkbenchError
from grading.pairwise.matching import MATCH_BY, Item, Matching, MatchingError, match
from grading.structured_output import MODES
from storage.compare_output import print_listing, print_summary, record
from storage.errors import ImportProblemsError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rubric", required=True, metavar="FILE",
                        help="rubric file (YAML or JSON)")
    parser.add_argument("--a", required=True, metavar="FILE", dest="a_file",
                        help="responses of source A (JSONL, CSV or a JSON list)")
    parser.add_argument("--b", required=True, metavar="FILE", dest="b_file",
                        help="responses of source B, compared with A's")
    parser.add_argument("--model", required=True,
                        help="litellm model name of the judge, e.g. openai/gpt-4.1-mini")
    parser.add_argument("--api-base", help="OpenAI-compatible server URL (with /v1)")
    parser.add_argument("--out", metavar="FILE",
                        help="write one JSON line per compared pair to this .jsonl file")
    parser.add_argument("--match", choices=MATCH_BY, default="id",
                        help="pair responses by the rows' id (default) or by the query text")
    parser.add_argument("--holistic", action="store_true",
                        help="one question for the whole rubric instead of one per criterion")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="at most this many calls in flight (default: the provider's "
                             "capacity is discovered)")
    parser.add_argument("--call-deadline", type=float, default=None, metavar="SECONDS",
                        help="give up on one call after this long, retries included "
                             "(default 300)")
    parser.add_argument("--structured-output", default="auto", choices=MODES,
                        help="how calls ask for JSON (default auto)")


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _read(path: str) -> list[Item]:
    """A responses file as items; ImportProblemsError for a file that cannot be read whole."""
    from storage.response_files import read_responses

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        from storage.errors import Problem

        raise ImportProblemsError([Problem("", f"cannot read the file: {exc.strerror}")],
                                  source=path) from None
    responses = read_responses(data, Path(path).name)
    return [Item(location=r.location, id=r.external_id, query=r.query,
                 text={"thinking": r.thinking or "", "output": r.output})
            for r in responses]


def _one_line(exc: ImportProblemsError, path: str) -> str:
    first = exc.problems[0] if exc.problems else "cannot be read"
    more = len(exc.problems) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return f"{path}: {first}{extra}; fix the file and run again (nothing was compared)"


def _inputs(args: argparse.Namespace):
    """(rubric, matching) or the one-line message saying what is wrong."""
    from grading.rubric import Rubric

    try:
        rubric = Rubric.from_file(args.rubric)
    except RubricValidationError as exc:
        lines = str(exc).splitlines()
        return (f"{lines[0]}{' ' + ' '.join(s.strip() for s in lines[1:]) if lines[1:] else ''}"
                "; give a YAML or JSON rubric with --rubric")
    items = {}
    for path in (args.a_file, args.b_file):
        try:
            items[path] = _read(path)
        except ImportProblemsError as exc:
            return _one_line(exc, path)
    try:
        matching = match(items[args.a_file], items[args.b_file], by=args.match,
                         a_name=args.a_file, b_name=args.b_file)
    except MatchingError as exc:
        return str(exc)
    if not matching.pairs:
        return (f"every matched pair ({len(matching.identical)}) has the same text in "
                f"{args.a_file} and {args.b_file}: nothing to compare")
    return rubric, matching


def _check_options(args: argparse.Namespace) -> str | None:
    from grading.llm import credential_problem

    if args.out and not args.out.lower().endswith(".jsonl"):
        return f"--out must end in .jsonl, got {args.out}"
    if args.concurrency is not None and args.concurrency < 1:
        return "--concurrency must be at least 1"
    if args.call_deadline is not None and not args.call_deadline > 0:
        return "--call-deadline must be a number of seconds above 0"
    return credential_problem(args.model, args.api_base)


async def _compare_all(grader, rubric, matching: Matching):
    async def one(pair):
        try:
            return await grader.compare(pair.a.text, pair.b.text, rubric, pair.query)
        except RubricWorkbenchError as exc:  # a provider refusing every call, say
            return exc

    return await asyncio.gather(*(one(pair) for pair in matching.pairs))


def compare_command(args: argparse.Namespace) -> int:
    problem = _check_options(args)
    if problem:
        _error(problem)
        return EXIT_USAGE
    inputs = _inputs(args)
    if isinstance(inputs, str):
        _error(inputs)
        return EXIT_USAGE
    rubric, matching = inputs
    from grading.llm import LiteLLMGenerate
    from grading.pairwise import PairwiseGrader
    from grading.pairwise.summary import summarize
    from storage.jobs.commands import configure_logging

    configure_logging(False)
    print_listing(matching, args.a_file, args.b_file, args.match)
    llm = LiteLLMGenerate(args.model, api_base=args.api_base,
                          timeout=min(60.0, args.call_deadline or 60.0),
                          structured_output=args.structured_output)
    extra = {"call_deadline": args.call_deadline} if args.call_deadline else {}
    grader = PairwiseGrader(llm, holistic=args.holistic, on_error="report",
                            max_concurrency=args.concurrency, **extra)
    outcomes = asyncio.run(_compare_all(grader, rubric, matching))
    reports = [o for o in outcomes if not isinstance(o, BaseException)]
    crashed = [(p, o) for p, o in zip(matching.pairs, outcomes, strict=True)
               if isinstance(o, BaseException)]
    if not reports:
        _error(f"no pair could be compared; first: {matching.pairs[0].key!r}: {crashed[0][1]}")
        return EXIT_FAILED
    summary = summarize(reports)
    print_summary(summary, args.model, holistic=args.holistic)
    for pair, exc in crashed[:5]:
        print(f"not compared: {pair.key!r}: {exc}", file=sys.stderr)
    if args.out:
        from storage.atomic_file import atomic_text_file

        judged = [p for p, o in zip(matching.pairs, outcomes, strict=True)
                  if not isinstance(o, BaseException)]
        with atomic_text_file(args.out) as out:
            for pair, report in zip(judged, reports, strict=True):
                out.write(json.dumps(record(pair, report), ensure_ascii=False) + "\n")
        print(f"wrote {len(reports)} compared pairs to {args.out}")
    failed = len(crashed) + summary.failed_pairs + sum(r.error is not None for r in reports
                                                       if r.winner is not None)
    return EXIT_FAILED if failed else EXIT_OK
