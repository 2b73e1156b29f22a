"""What ``rubric-workbench grade`` prints while its runs grade (one progress line, redrawn)
and when they end (a table per run)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

from storage.jobs.cli_common import EXIT_FAILED_GRADES, EXIT_OK


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _money(progresses) -> str:
    known = sum(p.known_cost for p in progresses)
    unknown = any(p.unknown_cost_count for p in progresses)
    if unknown and not known:
        return "cost unknown"
    return f"${known:.4f}" + (" + unknown" if unknown else "")


def draw(sessions, run_ids: Sequence[int], *, final: bool = False) -> None:
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


def summary(sessions, run_ids: Sequence[int], wall: float) -> int:
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
