"""Real-browser fixtures: the app served by ``streamlit run`` and Debian's Chromium.

These tests run in their own pytest process (``-m e2e``): pytest-playwright's sync API
leaves an event loop running that breaks async tests run after it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import expect

# The machines these run on are shared and often loaded: an assertion waits up to 20 s for the
# page to show what it should (it returns as soon as it does, so a passing run is not slower).
expect.set_options(timeout=20_000)

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"],
    }


def _serve(data_dir: Path, extra_env: dict[str, str] | None = None, *,
           port: int | None = None, extra_args: tuple[str, ...] = ()):
    """Start ``streamlit run ui/app.py`` on a free port with its database in ``data_dir``;
    returns (url, stop). ``extra_env`` adds variables (e.g. a key for a fake provider),
    ``extra_args`` options (e.g. ``--secrets.files``)."""
    port = port or _free_port()
    env = {
        **os.environ,
        "RUBRIC_WORKBENCH_DATABASE_URL": database_url_in(data_dir),
        "RUBRIC_WORKBENCH_DATA_DIR": str(data_dir),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        **(extra_env or {}),
    }
    log = open(data_dir / "streamlit.log", "w")  # noqa: SIM115 - closed at teardown
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "ui" / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none", *extra_args],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.read().decode().strip() == "ok":
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            log.close()
            pytest.fail("streamlit did not start:\n" + (data_dir / "streamlit.log").read_text())
        time.sleep(0.3)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()

    return url, stop


def database_url_in(data_dir: Path) -> str:
    """The database URL a server started in ``data_dir`` uses (seed through it)."""
    return f"sqlite:///{data_dir / 'workbench.db'}"


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """Serve ui/app.py on a free loopback port with its own SQLite database."""
    url, stop = _serve(tmp_path_factory.mktemp("app-data"))
    yield url
    stop()


@pytest.fixture(scope="module")
def seeded_app_server(tmp_path_factory):
    """A second server whose database a test fills first: ``seeded_app_server(seed) -> url``.

    ``seed`` receives the database URL before the server starts, so tests that need data
    (made through storage services) never share it with tests that expect an empty app.
    The file's servers stop when its tests are done, together (each may take seconds to
    exit): kept to the session's end, a worker's idle servers polled for work beside the
    later files' browsers, and their one-by-one stops cost the last test 39 s.
    """
    stops = []

    def start(seed) -> str:
        data_dir = tmp_path_factory.mktemp("seeded-app-data")
        seed(database_url_in(data_dir))
        url, stop = _serve(data_dir)
        stops.append(stop)
        return url

    yield start
    with ThreadPoolExecutor(max_workers=max(1, len(stops))) as pool:
        list(pool.map(lambda stop: stop(), stops))


@pytest.fixture
def screenshot(page):
    """Save a full-page screenshot under test-artifacts/screenshots/NAME.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
