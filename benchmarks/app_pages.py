"""The app itself at scale, in a real browser: how long each page takes to settle, and how much
memory the app's process holds (issue 41: "the app process under 500 MB at 100,000").

Serves ui/app.py on a database built by benchmarks/scale.py (``--keep DIR``), opens Settings
(the reference measured in the same run: the lightest page, what any page costs the browser and
Streamlit), Results, Agreement and Review in headless Chromium one after the other (cold: a
new server), again (warm: the server's caches), then saves ONE verdict from the benchmark (as
a reviewer in another browser would) and opens Results and Agreement once more, then every
section of the Agreement page (its tabs: each is read only when opened). With
``--after-grade`` 60 grades of the last run are made transient failures before the server
starts (``judges_advance.py --setup 60``: a requeued run still to finish) and, at the end,
one of them is graded again (a grade lands) and every section is opened once more. After
each page it reads the server's resident memory and its peak (VmRSS / VmHWM of the process).

    .venv/bin/python benchmarks/scale.py --size 100000 --keep /path/DIR    # once: builds
    .venv/bin/python benchmarks/app_pages.py --keep /path/DIR --size 100000
    .venv/bin/python benchmarks/app_pages.py --keep DIR --size 100000 --db postgresql+psycopg://...
    .venv/bin/python benchmarks/app_pages.py --keep DIR --size 100000 --after-grade

``--reference-tree DIR --rounds N``: the same tour served from another source tree of the
project (``git worktree add DIR <commit>``), in turns with this one's, each on a fresh copy
of the world, and a table of the medians side by side (this / reference).

The time is from the click (a page's address opened) until Streamlit's script run has ended
and nothing is left drawn from the run before (the e2e tests' ``wait_idle``); what a person
sees. Works on a copy of the database (the saved verdict does not stay), unless ``--in-place``.
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from proc_memory import memory_mb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import expect, sync_playwright  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from storage.engine import open_database  # noqa: E402
from storage.services import reviews  # noqa: E402
from storage.services.reviewers import local_actor  # noqa: E402
from ui.agreement_text import TABS  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGES = ("results", "agreement", "review")
# The reference measured in the same run: the lightest page (no result or agreement read), i.e.
# what any page costs for the browser, the websocket and Streamlit's own script run.
REFERENCE = "settings"
SETTLE_S = 900  # a page that takes longer is reported as not settled


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(data_dir: Path, url: str, tree: Path = ROOT) -> tuple[str, subprocess.Popen]:
    port = _free_port()
    env = {**os.environ, "RUBRIC_WORKBENCH_DATABASE_URL": url,
           "RUBRIC_WORKBENCH_DATA_DIR": str(data_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_HUB_OFFLINE": "1"}
    log = open(data_dir / "streamlit.log", "w")  # noqa: SIM115 - lives as long as the server
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(tree / "ui" / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
    address = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # the first start may migrate the copy
    while True:
        try:
            with urllib.request.urlopen(f"{address}/_stcore/health", timeout=2) as reply:
                if reply.read().decode().strip() == "ok":
                    return address, process
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit("streamlit did not start:\n"
                             + (data_dir / "streamlit.log").read_text()[-3000:])
        time.sleep(0.3)


def _settle(page, timeout_s: float) -> None:
    """Streamlit's run has ended and no element is left from the run before."""
    app = page.locator('[data-testid="stApp"]')
    ms = timeout_s * 1000
    expect(app).to_be_attached(timeout=ms)
    for busy in ("initial", "running", "rerunRequested"):
        expect(app).not_to_have_attribute("data-test-script-state", busy, timeout=ms)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=ms)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=ms)


def _open(context, address: str, name: str) -> tuple[float, str]:
    page = context.new_page()
    started = time.perf_counter()
    page.goto(f"{address}/{name}", timeout=SETTLE_S * 1000)
    try:
        _settle(page, SETTLE_S)
    except AssertionError:
        page.close()
        return time.perf_counter() - started, "not settled"
    seconds = time.perf_counter() - started
    problem = "traceback shown" if page.locator('[data-testid="stException"]').count() else ""
    page.close()
    return seconds, problem


@contextlib.contextmanager
def _database(args, kept: Path, tmp: Path) -> Iterator[str]:
    """The URL the app reads: a copy of the kept SQLite file, or a PostgreSQL database made
    from the built one as its template (dropped after); the kept one with ``--in-place``."""
    if not args.db:
        database = kept / f"scale-{args.size}.db"
        if not args.in_place:
            shutil.copy(database, tmp / database.name)
            database = tmp / database.name
        yield f"sqlite:///{database}"
        return
    if args.in_place:
        yield args.db
        return
    url = make_url(args.db)
    copy = f"app_pages_{os.getpid()}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{copy}" TEMPLATE "{url.database}"'))
    try:
        yield url.set(database=copy).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)'))
        admin.dispose()


def _save_one_verdict(url: str, world: dict) -> None:
    sessions = open_database(url, migrate=False)
    reviews.set_human_verdict(sessions, actor=local_actor("Benchmark reviewer"),
                              response_id=world["reviewed"][1],
                              criterion_id=world["criterion_ids"][1], verdict="CANNOT_ASSESS")
    sessions.kw["bind"].dispose()


def _advance(url: str, world: dict, *step: str, tree: Path = ROOT) -> None:
    """``benchmarks/judges_advance.py``'s ``step`` on the app's database (the served
    tree's own script when it has one)."""
    script = tree / "benchmarks" / "judges_advance.py"
    subprocess.run([sys.executable, str(script if script.exists() else
                                        ROOT / "benchmarks" / "judges_advance.py"),
                    "--db", url, "--version", str(world["version_id"]),
                    "--dataset", str(world["dataset_id"]), *step],
                   check=True, capture_output=True, text=True)


def tour(args, world: dict, tree: Path, label: str = "") -> list[tuple]:
    """The pages opened one after the other on a server of ``tree``'s app, on a fresh copy
    of the world: (page, when, seconds, resident MB, peak MB, note) per page opened."""
    kept = Path(args.keep)
    with tempfile.TemporaryDirectory() as tmp, _database(args, kept, Path(tmp)) as url:
        data_dir = Path(tmp)
        (data_dir / "identity.json").write_text(json.dumps({"name": "Page reader"}))
        if args.after_grade:
            _advance(url, world, "--setup", "60", tree=tree)
        address, server = _serve(data_dir, url, tree)
        sections = tuple(f"agreement?section={quote(tab)}" for tab in TABS)
        steps = [("cold", (REFERENCE, *PAGES)), ("warm", (REFERENCE, *PAGES)),
                 ("after 1 verdict", PAGES[:2]), ("every section", sections)]
        if args.after_grade:
            steps.append(("after a grade lands", sections))
        rows = []
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                for when, names in steps:
                    if when == "after 1 verdict":
                        _save_one_verdict(url, world)
                    if when == "after a grade lands":
                        _advance(url, world, "--land", tree=tree)
                    for name in names:
                        seconds, problem = _open(context, address, name)
                        now, peak = memory_mb(server.pid)
                        if name == REFERENCE and not problem:
                            problem = "reference: the lightest page"
                        rows.append((name, when, seconds, now, peak, problem))
                        print(f"  {label}{name} ({when}): {seconds:.1f} s, server {now:.0f} "
                              f"MB (peak {peak:.0f} MB) {problem}", flush=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="the folder scale.py --keep built")
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--in-place", action="store_true",
                        help="use the kept database itself, not a copy")
    parser.add_argument("--after-grade", action="store_true",
                        help="60 grades made transient failures first; one graded again at "
                             "the end, then every section of Agreement opened again")
    parser.add_argument("--db", help="a PostgreSQL URL scale.py --db built into (with --keep: "
                                     "its world file); read through a copy of the database")
    parser.add_argument("--reference-tree", type=Path,
                        help="another source tree of the project (git worktree add DIR "
                             "<commit>): its app served the same way, in turns with this "
                             "tree's, each on a fresh copy of the world")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --reference-tree: tours of each tree, in turns")
    args = parser.parse_args()
    if args.in_place and args.reference_tree:
        parser.error("--in-place changes the world: not with --reference-tree")
    kept = Path(args.keep)
    dialect = "postgresql" if args.db else "sqlite"
    world = json.loads((kept / f"world-{dialect}-{args.size}.json").read_text())
    where = f"{args.size:,} responses ({'PostgreSQL' if args.db else 'SQLite'})"
    if args.reference_tree is None:
        rows = tour(args, world, ROOT)
        print(f"\nthe app in Chromium, {where}:\n")
        print("| page | when | settled in (s) | server memory (MB) | server peak (MB) | note |")
        print("|---|---|---:|---:|---:|---|")
        for name, when, seconds, now, peak, problem in rows:
            print(f"| {name} | {when} | {seconds:.1f} | {now:.0f} | {peak:.0f} | {problem} |")
        return
    tours: dict[str, list[list[tuple]]] = {"this": [], "reference": []}
    for round_number in range(1, args.rounds + 1):
        for label, tree in (("this", ROOT), ("reference", args.reference_tree.resolve())):
            print(f"round {round_number}, {label} tree ({tree})", flush=True)
            tours[label].append(tour(args, world, tree, f"[{label}] "))
    print(f"\nthe app in Chromium, {where}, this tree beside {args.reference_tree}, "
          f"medians of {args.rounds} round(s) in turns:\n")
    print("| page | when | settled in (s) this / ref | server memory (MB) this / ref "
          "| server peak (MB) this / ref | note |")
    print("|---|---|---:|---:|---:|---|")
    for at, (name, when, *_rest) in enumerate(tours["this"][0]):
        def median(label: str, column: int, at: int = at) -> float:
            return statistics.median(rows[at][column] for rows in tours[label])

        notes = {rows[at][5] for label in tours for rows in tours[label] if rows[at][5]}
        print(f"| {name} | {when} | {median('this', 2):.1f} / {median('reference', 2):.1f} "
              f"| {median('this', 3):.0f} / {median('reference', 3):.0f} "
              f"| {median('this', 4):.0f} / {median('reference', 4):.0f} "
              f"| {'; '.join(sorted(notes))} |")


if __name__ == "__main__":
    main()
