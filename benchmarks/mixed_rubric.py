"""What a call costs when a rubric mixes criterion kinds, against an all-binary rubric.

    .venv/bin/python benchmarks/mixed_rubric.py                  # 10,000 responses (~10 min)
    .venv/bin/python benchmarks/mixed_rubric.py --n 1000 --graders per-criterion

Two rubrics of four criteria each, graded by ``rubric-workbench grade`` (the product's path:
file import, the runner, litellm over HTTP, SQLite writes) against the fake OpenAI-compatible
provider in its own process (tests/provider_process.py, no latency, no cap):

- ``binary``: four MET/UNMET criteria;
- ``mixed``: two binary criteria (one of them required), a Likert 1-5 ordinal criterion with
  a not-applicable option, and a nominal criterion of three categories.

Per grader and rubric, per call: wall time, CPU time of the command (its helper processes
included), and what the judge is sent — prompt characters and structured-output schema
characters, as the provider received them (characters, not tokens: no tokenizer is
downloaded here). A rating's prompt lists its options, so it is a little longer; the point
is that nothing else grows (no extra calls, no retries, no slower path). Also checked: every
response got a score and every rating criterion stored an option. Each measurement runs in
a fresh process and a fresh SQLite file (no cache hits); the rubrics take turns when
``--repeat`` > 1, and the median is shown. Not a test: it prints what it measures. The
machine may be shared: wall figures are noisy; CPU per call less so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.provider_process import ProviderProcess  # noqa: E402

MODEL = "openai/gpt-4o-mini"  # priced in litellm's map, as users' judges are

BINARY = [
    {"name": "dose", "weight": 10, "requirement": "States the recommended dose"},
    {"name": "limit", "weight": 6, "requirement": "Gives the daily maximum"},
    {"name": "doctor", "weight": 4, "requirement": "Advises seeing a doctor when unsure"},
    {"name": "harm", "weight": -8, "requirement": "Recommends an unsafe combination"},
]
MIXED = [
    {"name": "dose", "weight": 10, "requirement": "States the recommended dose",
     "required": True},
    {"name": "harm", "weight": -8, "requirement": "Recommends an unsafe combination"},
    {"name": "clarity", "weight": 6, "requirement": "How clear is the answer to a layperson?",
     "scale_type": "ordinal", "options": [
         {"label": "1 - very unclear", "value": 0.0}, {"label": "2", "value": 0.25},
         {"label": "3", "value": 0.5}, {"label": "4", "value": 0.75},
         {"label": "5 - very clear", "value": 1.0},
         {"label": "not applicable", "value": 0.0, "na": True}]},
    {"name": "tone", "weight": 4, "requirement": "Which tone does the answer take?",
     "scale_type": "nominal", "options": [
         {"label": "neutral", "value": 1.0}, {"label": "alarming", "value": 0.0},
         {"label": "dismissive", "value": 0.0}]},
]
RUBRICS = {"binary": BINARY, "mixed": MIXED}


def responses_file(path: Path, n: int) -> None:
    body = "The recommended dose is 500 mg every six hours, no more than 4 g a day. " * 6
    with path.open("w") as out:
        for i in range(n):
            out.write(json.dumps({"id": f"r{i}", "query": f"What is the dose? (case {i})",
                                  "text": f"{i}: {body}"}) + "\n")


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(server: ProviderProcess, rubric: str, grader: str, n: int, tmp: Path) -> dict:
    """One ``grade`` command in a fresh process and database; figures per call."""
    import yaml

    server.reset(0.0, None)
    work = Path(tempfile.mkdtemp(prefix=f"{rubric}-", dir=tmp))
    (work / "rubric.yaml").write_text(yaml.safe_dump(RUBRICS[rubric], sort_keys=False))
    responses_file(work / "r.jsonl", n)
    db = f"sqlite:///{work / 'bench.db'}"
    subprocess.run([sys.executable, "-m", "storage.cli", "db", "upgrade", "--db", db],
                   cwd=ROOT, check=True, capture_output=True)  # migrations outside the clock
    env = os.environ | {"RUBRIC_WORKBENCH_API_KEY": "bench-key",
                        "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    cpu_before, started = child_cpu(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "storage.cli", "grade", "--rubric", str(work / "rubric.yaml"),
         "--responses", str(work / "r.jsonl"), "--grader", grader, "--model", MODEL,
         "--api-base", server.api_base, "--db", db],
        cwd=ROOT, env=env, capture_output=True, text=True)
    command = time.perf_counter() - started
    cpu = child_cpu() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"grade failed ({rubric}, {grader}):\n{done.stdout}\n{done.stderr}")
    wall = float(re.search(r"wall time ([0-9.]+) s", done.stdout).group(1))
    sizes = server.sizes()
    calls = sizes["requests"]
    stored = stored_figures(db)
    return {"calls": calls, "wall_ms": 1000 * wall / calls, "cpu_ms": 1000 * cpu / calls,
            "command_s": command, "prompt_chars": sizes["prompt_chars"] / calls,
            "schema_chars": sizes["schema_chars"] / calls, **stored}


def stored_figures(db: str) -> dict:
    """Scored responses and rating criteria with an option, read back from the database."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db)
    with engine.connect() as connection:
        scored = connection.execute(text(
            "SELECT count(*) FROM grades WHERE score IS NOT NULL")).scalar_one()
        options = connection.execute(text(
            "SELECT count(*) FROM grade_criteria WHERE option IS NOT NULL")).scalar_one()
    engine.dispose()
    return {"scored": scored, "options": options}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="responses per rubric")
    parser.add_argument("--graders", default="per-criterion,one-shot")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    server = ProviderProcess()
    try:
        with tempfile.TemporaryDirectory(prefix="rw-mixed-") as tmp:
            print(f"{args.n:,} responses x 4 criteria; fake provider, no latency; "
                  f"median of {args.repeat}")
            print(f"{'grader':<14}{'rubric':<8}{'calls':>8}{'wall ms/call':>14}"
                  f"{'CPU ms/call':>13}{'prompt chars':>14}{'schema chars':>14}"
                  f"{'scored':>8}{'options':>9}")
            for grader in args.graders.split(","):
                runs: dict[str, list[dict]] = {"binary": [], "mixed": []}
                for _ in range(args.repeat):
                    for rubric in RUBRICS:
                        runs[rubric].append(measure(server, rubric, grader, args.n, Path(tmp)))
                for rubric, results in runs.items():
                    med = {key: statistics.median(r[key] for r in results)
                           for key in results[0]}
                    print(f"{grader:<14}{rubric:<8}{med['calls']:>8,.0f}{med['wall_ms']:>14.2f}"
                          f"{med['cpu_ms']:>13.2f}{med['prompt_chars']:>14,.0f}"
                          f"{med['schema_chars']:>14,.0f}{med['scored']:>8,.0f}"
                          f"{med['options']:>9,.0f}")
                binary, mixed = (statistics.median(r["cpu_ms"] for r in runs[k])
                                 for k in ("binary", "mixed"))
                print(f"{grader}: mixed / binary CPU per call = {mixed / binary:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
