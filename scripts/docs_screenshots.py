"""Take the user guide's screenshots (docs/images/*.png) from a real browser on a real server.

The sample rubric and responses are graded twice (per-criterion and one-shot) by the local
fake provider of the tests, then ``streamlit run ui/app.py`` serves that database and Debian's
Chromium visits every page. Run it again after changing a page:

    .venv/bin/python scripts/docs_screenshots.py
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.fake_provider import FakeProvider, Reply, judge_reply  # noqa: E402

IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
PAGES = {  # image name -> (the page's address, its title)
    "start": ("", "Rubric Workbench"), "rubrics": ("rubrics", "Rubrics"),
    "responses": ("responses", "Responses"), "grade": ("grade", "Grade"),
    "results": ("results", "Results"), "review": ("review", "Review"),
    "agreement": ("agreement", "Agreement"), "judges": ("judges", "Judges"),
    "settings": ("settings", "Settings"),
}


def varied_judge(body: dict) -> Reply:
    """A judge that finds fault with curt replies, so the pages show both verdicts."""
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    reply = judge_reply(body)
    if "You should have read the policy" in prompt and reply.content:
        answer = json.loads(reply.content)
        if "verdict" in answer:
            answer["verdict"] = "UNMET"
        for item in answer.get("criteria", []):
            item["verdict"] = "UNMET" if item["number"] % 2 else "MET"
        reply = Reply(json.dumps(answer))
    return reply


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _grade(env: dict[str, str], api_base: str) -> None:
    for grader in ("per-criterion", "one-shot"):
        subprocess.run(
            [sys.executable, "-m", "storage.cli", "grade",
             "--rubric", str(ROOT / "ui" / "samples" / "sample_rubric.yaml"),
             "--responses", str(ROOT / "ui" / "samples" / "sample_responses.csv"),
             "--grader", grader, "--model", "openai/small-judge", "--api-base", api_base],
            cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)


def _serve(env: dict[str, str]) -> tuple[str, subprocess.Popen]:
    port = _free_port()
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


def _save_small(png: bytes, path: Path) -> None:
    """A 64-colour palette: a page of flat colours and text reads the same at a third of
    the size, so the checked-in images stay small."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        image.convert("RGB").quantize(colors=64).save(path, optimize=True)


def _shoot(url: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1200, "height": 860})
        for name, (path, title) in PAGES.items():
            # Streamlit scrolls inside its own frame (a full-page shot is one screen): Results
            # gets a taller window, so that its table of scores is in the picture
            page.set_viewport_size({"width": 1200, "height": 1500 if name == "results" else 860})
            page.goto(f"{url}/{path}")
            page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=90_000)
            # the page is done when Streamlit's "running" indicator is gone for a while
            page.wait_for_timeout(1500)
            page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached",
                                   timeout=90_000)
            # fragments and charts draw after the script ends: wait for their placeholders to go
            page.wait_for_function(
                "!document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=90_000)
            page.wait_for_timeout(2500)
            _save_small(page.screenshot(), IMAGES / f"{name}.png")
            print(f"docs/images/{name}.png")
        browser.close()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rw-docs-") as data, FakeProvider().running() as fake:
        fake.default = varied_judge
        env = {**os.environ, "RUBRIC_WORKBENCH_DATA_DIR": data,
               "RUBRIC_WORKBENCH_DATABASE_URL": f"sqlite:///{data}/workbench.db",
               "RUBRIC_WORKBENCH_CACHE_DIR": f"{data}/cache",
               "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1",
               "LITELLM_LOG": "ERROR", "NO_PROXY": "127.0.0.1,localhost"}
        _grade(env, fake.api_base)
        url, server = _serve(env)
        try:
            _shoot(url)
        finally:
            server.terminate()
            server.wait(timeout=20)


if __name__ == "__main__":
    main()
