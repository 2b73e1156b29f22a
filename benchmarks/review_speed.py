"""Save and next on the Review page at 10,000 responses, in a real browser.

Builds the 10,000-response database of benchmarks/results_page.py (two runs, 8 criteria),
serves the app with ``streamlit run`` and drives Debian's Chromium with Playwright: per round
it gives 8 keyboard verdicts, presses Ctrl+Enter (save and next) and times from the key press
to the next response being visible ("k+1 of N" and its id on screen). As the reference, in
the same run, it times a whole-page rerun of the same page (what every save cost before the
form became a fragment: toggling "Blind mode" re-runs the whole script).

    .venv/bin/python benchmarks/review_speed.py                # 10,000 responses, 15 rounds
    .venv/bin/python benchmarks/review_speed.py --rounds 30
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_page import build  # noqa: E402  (the same 10,000-response database)

from storage.engine import open_database  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(root: Path, data_dir: Path, db_url: str, profile_log: Path | None = None,
          tree: bool = False) -> tuple[str, subprocess.Popen]:
    port = _free_port()
    env = {**os.environ, "RUBRIC_WORKBENCH_DATABASE_URL": db_url,
           "RUBRIC_WORKBENCH_DATA_DIR": str(data_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_HUB_OFFLINE": "1", "RUBRIC_WORKBENCH_IN_PROCESS_WORKER": "0"}
    launcher = ["-m", "streamlit", "run"]
    if profile_log is not None:
        env["RW_PROFILE_LOG"] = str(profile_log)
        env["RW_PROFILE_TREE"] = "1" if tree else "0"
        launcher = [str(root / "benchmarks" / "streamlit_profiled.py")]
    process = subprocess.Popen(
        [sys.executable, *launcher, str(root / "ui" / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=root, env={**env, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.read().decode().strip() == "ok":
                    return url, process
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("streamlit did not start")


def idle(page) -> None:
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", polling="raf",
        timeout=60_000)


def settle(page) -> None:
    """Wait until the rerun a key press started has finished: Streamlit shows its running
    indicator only after a short delay, so first give it time to appear."""
    page.wait_for_timeout(400)
    idle(page)
    page.wait_for_timeout(200)
    idle(page)


def position_visible(page, number: int) -> None:
    page.wait_for_function(
        "n => document.body.innerText.includes(n + ' of ')", arg=str(number), polling="raf",
        timeout=60_000)


class Variant:
    """One app under test: this tree, or another git revision exported beside it."""

    def __init__(self, name: str, root: Path, data_dir: Path, profile: bool, tree: bool):
        self.name, self.root, self.data_dir = name, root, data_dir
        self.log = data_dir / "profile.jsonl" if profile else None
        self.tree = tree
        self.saves: list[float] = []
        self.pages: list[float] = []
        self.runs: list[list[dict]] = []  # per save and next, the script runs it caused
        self.moments: list[tuple[float, float]] = []  # (key pressed, next visible), epoch s

    def records(self) -> list[dict]:
        if self.log is None or not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def export_revision(ref: str, into: Path) -> Path:
    """``git archive`` of ``ref`` (the app as it was) into ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    # the profiler launcher may be newer than the revision
    (into / "benchmarks").mkdir(exist_ok=True)
    shutil.copy(ROOT / "benchmarks" / "streamlit_profiled.py", into / "benchmarks")
    return into


def open_review(page, url: str) -> None:
    page.goto(f"{url}/review")
    page.get_by_role("heading", name="Review", exact=True).wait_for(timeout=90_000)
    box = page.get_by_role("textbox", name="Your name (reviewer)")
    box.fill("bench-reviewer")
    box.press("Enter")
    idle(page)
    position_visible(page, 1)
    page.get_by_role("heading", name="Review", exact=True).click()


def save_round(page, variant: Variant, n: int) -> None:
    for key in "mumumumu":
        page.keyboard.press(key)
        settle(page)
    before = len(variant.records())
    pressed = time.time()
    t0 = time.perf_counter()
    page.keyboard.press("Control+Enter")
    position_visible(page, n + 1)
    variant.saves.append(time.perf_counter() - t0)
    variant.moments.append((pressed, time.time()))
    settle(page)
    variant.runs.append(variant.records()[before:])


def page_round(page, variant: Variant, n: int) -> None:
    hidden = "Judges hidden until you answer (blind mode)."
    t0 = time.perf_counter()
    page.get_by_text("Blind mode", exact=True).click()
    # blind on: the judges' columns are replaced by this note; off: it goes
    page.wait_for_function(
        "([text, on]) => document.body.innerText.includes(text) === on",
        arg=[hidden, n % 2 == 0], polling="raf", timeout=60_000)
    variant.pages.append(time.perf_counter() - t0)
    settle(page)


def report(variant: Variant) -> None:
    saves, pages = variant.saves, variant.pages
    print(f"[{variant.name}] save and next, key press -> next response visible "
          f"({len(saves)} rounds): median {statistics.median(saves):.3f} s, "
          f"max {max(saves):.3f} s")
    print(f"[{variant.name}] whole-page rerun of the Review page ({len(pages)} rounds): "
          f"median {statistics.median(pages):.3f} s, max {max(pages):.3f} s")
    if variant.log is None:
        return
    per_save = [r for r in variant.runs if r]
    if not per_save:
        return
    server = [sum(x["seconds"] for x in runs) for runs in per_save]
    sql = [sum(x["sql"] for x in runs) for runs in per_save]
    sql_s = [sum(x["sql_seconds"] for x in runs) for runs in per_save]
    kinds = {" + ".join(x["kind"] for x in runs) for runs in per_save}
    print(f"[{variant.name}]   server side per save and next: median "
          f"{statistics.median(server):.3f} s in script runs ({' | '.join(sorted(kinds))}), "
          f"{statistics.median(sql):.0f} SQL statements taking "
          f"{statistics.median(sql_s):.3f} s")
    pages_runs = [x for x in variant.records() if x["kind"] == "page"]
    if pages_runs:
        print(f"[{variant.name}]   whole-page script run: median "
              f"{statistics.median(x['seconds'] for x in pages_runs):.3f} s, "
              f"{statistics.median(x['sql'] for x in pages_runs):.0f} SQL statements")
    # where the time goes: waiting for the server to start the run (an earlier run still
    # going), the run up to its end, and from its end to the browser showing the response
    waits, tails = [], []
    for runs, (pressed, shown) in zip(variant.runs, variant.moments, strict=True):
        mine = [x for x in runs if x.get("began", 0) >= pressed]
        if mine:
            waits.append(mine[0]["began"] - pressed)
            tails.append(shown - mine[-1]["at"])
    if waits:
        print(f"[{variant.name}]   key press -> save's run starts: median "
              f"{statistics.median(waits):.3f} s; its run's end -> next response visible: "
              f"median {statistics.median(tails):+.3f} s")
    cpu = [sum(x.get("cpu", 0) for x in runs) for runs in per_save]
    print(f"[{variant.name}]   CPU time of the script thread per save and next: median "
          f"{statistics.median(cpu):.3f} s")
    if variant.tree:
        for runs in per_save:
            print("      " + " | ".join(
                f"{x['kind']} {x['seconds']:.3f}s cpu {x.get('cpu', 0):.3f}s sql {x['sql']} "
                f"{x.get('state')}" for x in runs))
    slowest = max(per_save, key=lambda runs: sum(x["seconds"] for x in runs))
    for record in slowest:
        print(f"[{variant.name}]   slowest save's {record['kind']} run: {record['seconds']} s, "
              f"{record['sql']} SQL; slowest statements:")
        for seconds, statement in record["slowest"][:3]:
            print(f"      {seconds:.4f} s  {statement}")
        if record.get("tree"):
            print(record["tree"])


def run(rounds: int, *, profile: bool, tree: bool, against: str | None,
        keep: Path | None) -> None:
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="review-speed-"))
    source = keep if keep is not None else work / "built"
    source.mkdir(parents=True, exist_ok=True)
    database = source / "workbench.db"
    if not database.exists():
        started = time.perf_counter()
        sessions = open_database(f"sqlite:///{database}")
        build(sessions)
        sessions.kw["bind"].dispose()
        print(f"built 10,000 responses x 2 runs x 8 criteria in "
              f"{time.perf_counter() - started:.0f} s")
    variants = [Variant("this tree", ROOT, work / "this", profile, tree)]
    if against:
        variants.insert(0, Variant(f"before ({against})",
                                   export_revision(against, work / "before-src"),
                                   work / "before", profile, tree))
    servers = []
    try:
        for variant in variants:
            variant.data_dir.mkdir(parents=True)
            shutil.copy(database, variant.data_dir / "workbench.db")
            variant.url, server = serve(variant.root, variant.data_dir,
                                        f"sqlite:///{variant.data_dir / 'workbench.db'}",
                                        variant.log, variant.tree)
            servers.append(server)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            pages = []
            for variant in variants:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                open_review(page, variant.url)
                pages.append(page)
            # rounds alternate between the variants so both see the same machine load
            for n in range(1, rounds + 1):
                for variant, page in zip(variants, pages, strict=True):
                    save_round(page, variant, n)
            for n in range(max(6, rounds // 2)):
                for variant, page in zip(variants, pages, strict=True):
                    page_round(page, variant, n)
            browser.close()
    finally:
        for server in servers:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
    print(f"load average (1, 5, 15 min) at the end: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for variant in variants:
        report(variant)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--against", metavar="GIT_REF",
                        help="also serve the app as it is at GIT_REF (e.g. main) and "
                             "alternate rounds with it: before and after in one run")
    parser.add_argument("--profile", action="store_true",
                        help="time each script run and count its SQL statements "
                             "(benchmarks/streamlit_profiled.py)")
    parser.add_argument("--tree", action="store_true",
                        help="with --profile: print a CPU profile (cProfile) of the slowest "
                             "save and next")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="build the database in DIR once and reuse it in later runs")
    args = parser.parse_args()
    run(args.rounds, profile=args.profile or args.tree, tree=args.tree,
        against=args.against, keep=args.keep)


if __name__ == "__main__":
    main()
