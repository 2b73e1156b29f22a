"""The arguments of ``rubric-workbench grade`` and their checks (the command is in
commands.py)."""

from __future__ import annotations

import argparse

from grading.samples import MAX_SAMPLES, check_samples
from grading.structured_output import MODES
from storage import limits
from storage.config import add_db_argument

GRADER_NAMES = {"per-criterion": "per_criterion", "one-shot": "one_shot",
                "rubric-as-judge": "rubric_as_judge"}


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
