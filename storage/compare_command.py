"""``rubric-workbench compare``: two responses files, paired by id or query, compared with a
PairwiseGrader in both orders; prints the per-criterion table and B's win rate. With three or
more sources (``--source`` files, or one file's ``--split-by`` column values), every two
sources are compared the same way and the sources are ranked on a Bradley-Terry leaderboard.

Every input problem ends the command with one line naming the file, the line and what to do,
before any call and with nothing written. Pairs whose two texts are identical, and rows with
no partner, are listed, never silently dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from itertools import combinations

from grading.errors import RubricValidationError, RubricWorkbenchError
from grading.pairwise.matching import MATCH_BY, Matching, MatchingError, match
from grading.structured_output import MODES
from storage.compare_output import print_leaderboard, print_listing, print_summary, record
from storage.compare_sources import Source, SourceError, read_sources

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rubric", required=True, metavar="FILE",
                        help="rubric file (YAML or JSON)")
    parser.add_argument("--a", metavar="FILE", dest="a_file",
                        help="responses of source A (JSONL, CSV or a JSON list)")
    parser.add_argument("--b", metavar="FILE", dest="b_file",
                        help="responses of source B, compared with A's")
    parser.add_argument("--source", action="append", default=[], dest="sources",
                        metavar="[NAME=]FILE",
                        help="instead of --a/--b: one source's responses, given two or more "
                             "times; every two sources are compared and, with three or more, "
                             "ranked on a Bradley-Terry leaderboard")
    parser.add_argument("--split-by", metavar="COLUMN",
                        help="each value of this column names a source (e.g. model: one file "
                             "holding several models' answers to the same ids)")
    parser.add_argument("--columns", metavar="A,B",
                        help="each of these columns of one file is a source (two or more, "
                             "separated by commas): two answers to the same query in one row")
    parser.add_argument("--model", required=True, action="append", dest="models",
                        metavar="MODEL",
                        help="litellm model name of the judge, e.g. openai/gpt-4.1-mini; "
                             "give it two or more times for a panel of judges (per "
                             "criterion, the majority of the judges that voted; split: a tie)")
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
    parser.add_argument("--save", action="store_true",
                        help="store the rubric, every source (as a dataset named after its "
                             "file, NAME=, split value or column) and a comparison per two "
                             "sources in the database, in one transaction, so the app's "
                             "Compare page shows them")


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _specs(args: argparse.Namespace) -> list[str] | str:
    """The files to read, or the message saying how the options clash."""
    if args.sources and (args.a_file or args.b_file):
        return "give either --a and --b, or --source two or more times, not both"
    if args.sources:
        return args.sources
    if args.a_file and args.b_file:
        return [args.a_file, args.b_file]
    if args.a_file and (args.split_by or args.columns):
        return [args.a_file]
    return ("say what to compare: --a FILE --b FILE, or --source FILE two or more times "
            "(or one file with --split-by COLUMN or --columns A,B)")


@dataclass(frozen=True)
class Duel:
    """Two sources and their matched responses."""

    a: Source
    b: Source
    matching: Matching


def _inputs(args: argparse.Namespace):
    """(rubric, duels) or the one-line message saying what is wrong."""
    from grading.rubric import Rubric

    specs = _specs(args)
    if isinstance(specs, str):
        return specs
    try:
        rubric = Rubric.from_file(args.rubric)
    except RubricValidationError as exc:
        lines = str(exc).splitlines()
        return (f"{lines[0]}{' ' + ' '.join(s.strip() for s in lines[1:]) if lines[1:] else ''}"
                "; give a YAML or JSON rubric with --rubric")
    try:
        columns = ([c.strip() for c in args.columns.split(",")]
                   if args.columns is not None else None)
        sources = read_sources(specs, split_by=args.split_by, columns=columns)
    except SourceError as exc:
        return str(exc)
    duels = []
    for a, b in combinations(sources, 2):
        try:
            matching = match(a.items, b.items, by=args.match, a_name=a.name, b_name=b.name)
        except MatchingError as exc:
            return str(exc)
        duels.append(Duel(a, b, matching))
    if not any(duel.matching.pairs for duel in duels):
        if len(duels) == 1:
            return (f"every matched pair ({len(duels[0].matching.identical)}) has the same text "
                    f"in {duels[0].a.name} and {duels[0].b.name}: nothing to compare")
        return "every matched pair has the same text in both of its sources: nothing to compare"
    return rubric, duels


def _check_options(args: argparse.Namespace) -> str | None:
    from grading.llm import credential_problem

    if args.save and len(args.models) > 1:
        return ("--save stores one judge's comparison: give --model once (a panel of judges "
                "is compared without --save)")
    if args.save and args.out:
        return "--save stores every pair in the database; leave --out out"
    if args.out and not args.out.lower().endswith(".jsonl"):
        return f"--out must end in .jsonl, got {args.out}"
    if args.concurrency is not None and args.concurrency < 1:
        return "--concurrency must be at least 1"
    if args.call_deadline is not None and not args.call_deadline > 0:
        return "--call-deadline must be a number of seconds above 0"
    if len(set(args.models)) != len(args.models):
        return "each --model may be given once (a panel of the same judge twice counts it twice)"
    for model in args.models:
        problem = credential_problem(model, args.api_base)
        if problem:
            return problem
    return None


async def _compare_all(graders, rubric, pairs):
    """Per pair, each judge's report (or the error that stopped that judge on it)."""
    async def one(grader, pair):
        try:
            return await grader.compare(pair.a.text, pair.b.text, rubric, pair.query)
        except RubricWorkbenchError as exc:  # a provider refusing every call, say
            return exc

    flat = await asyncio.gather(*(one(g, pair) for pair in pairs for g in graders))
    return [flat[i:i + len(graders)] for i in range(0, len(flat), len(graders))]


def _panel_outcome(reports):
    """One judge's report, or the panel's from every judge's; the first error if any judge
    could not compare the pair at all."""
    from grading.pairwise.panel import combine_reports

    for report in reports:
        if isinstance(report, BaseException):
            return report
    return reports[0] if len(reports) == 1 else combine_reports(reports)


def _outcome(winner: str) -> float:
    return {"B": 1.0, "TIE": 0.5, "A": 0.0}[winner]


def compare_command(args: argparse.Namespace) -> int:
    problem = _check_options(args)
    if problem:
        _error(problem)
        return EXIT_USAGE
    inputs = _inputs(args)
    if isinstance(inputs, str):
        _error(inputs)
        return EXIT_USAGE
    rubric, duels = inputs
    if args.save:
        from storage.compare_save import save_and_compare

        for duel in duels:
            print_listing(duel.matching, duel.a.name, duel.b.name, args.match)
        return save_and_compare(args, rubric, duels)
    from grading.llm import LiteLLMGenerate
    from grading.pairwise import PairwiseGrader
    from grading.pairwise.summary import summarize
    from storage.jobs.commands import configure_logging

    configure_logging(False)
    for duel in duels:
        print_listing(duel.matching, duel.a.name, duel.b.name, args.match)
    extra = {"call_deadline": args.call_deadline} if args.call_deadline else {}
    graders = [PairwiseGrader(LiteLLMGenerate(model, api_base=args.api_base,
                                              timeout=min(60.0, args.call_deadline or 60.0),
                                              structured_output=args.structured_output),
                              holistic=args.holistic, on_error="report",
                              max_concurrency=args.concurrency, **extra)
               for model in args.models]
    # One gather for every duel and judge: the limiters see all the calls at once.
    jobs = [(duel, pair) for duel in duels for pair in duel.matching.pairs]
    per_judge = asyncio.run(_compare_all(graders, rubric, [pair for _, pair in jobs]))
    panel = len(graders) > 1
    if panel:
        for number, model in enumerate(args.models):
            for duel in duels:
                reports = [r[number] for (d, _), r in zip(jobs, per_judge, strict=True)
                           if d is duel and not isinstance(r[number], BaseException)]
                if reports:
                    print_summary(summarize(reports), model, holistic=args.holistic,
                                  names=(duel.a.name, duel.b.name))
    outcomes = [_panel_outcome(reports) for reports in per_judge]
    judge = (f"panel of {len(graders)} (majority per criterion: {', '.join(args.models)})"
             if panel else args.models[0])
    judged = [(duel, pair, o) for (duel, pair), o in zip(jobs, outcomes, strict=True)
              if not isinstance(o, BaseException)]
    crashed = [(pair, o) for (_, pair), o in zip(jobs, outcomes, strict=True)
               if isinstance(o, BaseException)]
    if not judged:
        _error(f"no pair could be compared; first: {jobs[0][1].key!r}: {crashed[0][1]}")
        return EXIT_FAILED
    failed = len(crashed)
    for duel in duels:
        reports = [report for d, _, report in judged if d is duel]
        if not reports:
            print(f"\n{duel.b.name} compared with {duel.a.name}: no pair could be compared")
            continue
        summary = summarize(reports)
        print_summary(summary, judge, holistic=args.holistic,
                      names=(duel.a.name, duel.b.name))
        failed += summary.failed_pairs + sum(r.error is not None for r in reports
                                             if r.winner is not None)
    if len(duels) > 1:
        print_leaderboard([(d.a.name, d.b.name, _outcome(r.winner))
                           for d, _, r in judged if r.winner is not None])
    for pair, exc in crashed[:5]:
        print(f"not compared: {pair.key!r}: {exc}", file=sys.stderr)
    if args.out:
        from storage.atomic_file import atomic_text_file

        with atomic_text_file(args.out) as out:
            members = {id(pair): r for (_, pair), r in zip(jobs, per_judge, strict=True)}
            for duel, pair, report in judged:
                line = record(pair, report) | {"a_source": duel.a.name,
                                               "b_source": duel.b.name}
                if panel:
                    line["judges"] = {
                        model: (None if isinstance(r, BaseException) else r.winner)
                        for model, r in zip(args.models, members[id(pair)], strict=True)}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        print(f"wrote {len(judged)} compared pairs to {args.out}")
    return EXIT_FAILED if failed else EXIT_OK
