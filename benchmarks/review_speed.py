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
import os
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


def serve(data_dir: Path, db_url: str) -> tuple[str, subprocess.Popen]:
    port = _free_port()
    env = {**os.environ, "RUBRIC_WORKBENCH_DATABASE_URL": db_url,
           "RUBRIC_WORKBENCH_DATA_DIR": str(data_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_HUB_OFFLINE": "1", "RUBRIC_WORKBENCH_IN_PROCESS_WORKER": "0"}
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "ui" / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def run(rounds: int) -> None:
    from playwright.sync_api import sync_playwright

    data_dir = Path(tempfile.mkdtemp(prefix="review-speed-"))
    db_url = f"sqlite:///{data_dir / 'workbench.db'}"
    started = time.perf_counter()
    sessions = open_database(db_url)
    build(sessions)
    sessions.kw["bind"].dispose()
    print(f"built 10,000 responses x 2 runs x 8 criteria in {time.perf_counter() - started:.0f} s")
    url, server = serve(data_dir, db_url)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/review")
            page.get_by_role("heading", name="Review", exact=True).wait_for(timeout=90_000)
            box = page.get_by_role("textbox", name="Your name (reviewer)")
            box.fill("bench-reviewer")
            box.press("Enter")
            idle(page)
            position_visible(page, 1)
            page.get_by_role("heading", name="Review", exact=True).click()
            saves, pages = [], []
            for n in range(1, rounds + 1):
                for key in "mumumumu":
                    page.keyboard.press(key)
                    settle(page)
                t0 = time.perf_counter()
                page.keyboard.press("Control+Enter")
                position_visible(page, n + 1)
                saves.append(time.perf_counter() - t0)
                settle(page)
            print(f"save and next, key press -> next response visible ({rounds} rounds): "
                  f"median {statistics.median(saves):.3f} s, max {max(saves):.3f} s",
                  flush=True)
            hidden = "Judges hidden until you answer (blind mode)."
            for n in range(max(6, rounds // 2)):
                t0 = time.perf_counter()
                page.get_by_text("Blind mode", exact=True).click()
                # blind on: the judges' columns are replaced by this note; off: it goes
                page.wait_for_function(
                    "([text, on]) => document.body.innerText.includes(text) === on",
                    arg=[hidden, n % 2 == 0], polling="raf", timeout=60_000)
                pages.append(time.perf_counter() - t0)
                settle(page)
            browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
    print(f"reference, a whole-page rerun of the Review page ({len(pages)} rounds): "
          f"median {statistics.median(pages):.3f} s, max {max(pages):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    run(args.rounds)


if __name__ == "__main__":
    main()
