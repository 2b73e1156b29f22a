"""Test-wide setup: offline litellm, no provider keys, a private database per test."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from grading.busy_server import busy_servers
from grading.limiter import _registry as limiter_registry
from grading.structured_output import endpoint_formats

# Set before anything imports litellm: no price-map download, no tokenizer download.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOG", "ERROR")
# What limiters remember of an endpoint between processes (``grading.capacity_memory``) never
# goes to the real cache directory; each test has its own (below).
os.environ["RUBRIC_WORKBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="rw-test-cache-")

_PROVIDER_KEYS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "MISTRAL_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY", "OPENROUTER_API_KEY",
    "AZURE_API_KEY", "COHERE_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
)
_WORKBENCH_VARS = (
    "RUBRIC_WORKBENCH_MODEL", "RUBRIC_WORKBENCH_API_BASE", "RUBRIC_WORKBENCH_API_KEY",
    "RUBRIC_WORKBENCH_ADMINS",
)


# These files measure time, speed or several processes racing each other: a test of theirs
# must never compete with another of them for the machine's two cores. scripts/test.sh runs
# them one at a time in a pytest process of their own (--one-at-a-time=only), beside the rest
# on two workers at a lower priority; run with the rest on xdist, they share one worker.
_ONE_AT_A_TIME = {
    "tests/grading/test_busy_server.py", "tests/grading/test_capacity_memory.py",
    "tests/grading/test_litellm_integration.py", "tests/jobs/test_busy_notice.py",
    *(f"tests/jobs/test_{name}.py" for name in (
        "autoscale", "capacity_sharing_faults", "cli_panel", "early_helpers", "faults",
        "grade_writer", "helper_handover", "limiter", "preload", "provider_breaker",
        "queueing_server", "run_status", "runner", "throughput", "worker")),
}


def _path(config, item) -> str:
    root = config.rootpath
    return item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""


def pytest_addoption(parser):
    parser.addoption(
        "--one-at-a-time", choices=("with", "only", "without"), default="with",
        help="the files that measure time or race processes (tests/conftest.py): run them "
             "with the rest (default), only them, or leave them out. scripts/test.sh runs "
             "them in a pytest process of their own beside the rest.")


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture scope
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _path(config, item) in _ONE_AT_A_TIME:
            item.add_marker(pytest.mark.xdist_group("one_at_a_time"))
    part = config.getoption("--one-at-a-time")
    if part != "with":
        keep, left = [], []
        for item in items:
            (keep if (_path(config, item) in _ONE_AT_A_TIME) == (part == "only")
             else left).append(item)
        if left:
            config.hook.pytest_deselected(items=left)
        items[:] = keep
    # The compatibility tests need the compared packages' venvs, which scripts/test.sh starts
    # building beside the app's install (minutes on a clean machine: autorubric's above all).
    # Collected first (tests/compat sorts early), both workers waited ~2 min for pip; last,
    # the venvs are long built when they come.
    items.sort(key=lambda item: _path(config, item).startswith("tests/compat/"))


def pytest_collection_finish(session):
    """Every test module is imported by now, and with them the libraries (litellm, openai's
    types, streamlit, SQLAlchemy): most of the objects the process will ever hold, alive until
    it ends. They are set aside from the garbage collector (``gc.freeze``: never walked
    again, still freed when nothing refers to them), so a full collection (the UI tests run
    one before each test; Python runs them as objects pile up) walks only what the tests
    made: it walked them all, ~0.5 s a collection."""
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _streamlit_components_scanned_once():
    """Streamlit's AppTest looks for custom components in every installed distribution's
    metadata the first time each test's app runs: ~0.9 s a page test (about a third of its
    time), the same answer each time, since nothing is installed while the tests run. The
    first scan's answer (Streamlit's own function's) serves every later AppTest."""
    from streamlit.components.v2 import manifest_scanner

    scan, found = manifest_scanner.scan_component_manifests, []

    def scanned_once(max_workers=None):
        if not found:
            found.append(scan(max_workers))
        return list(found[0])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest_scanner, "scan_component_manifests", scanned_once)
        yield


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path):
    """No real keys or endpoints leak into a test; each test gets its own SQLite file."""
    for name in _PROVIDER_KEYS + _WORKBENCH_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path / 'workbench.db'}")
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RUBRIC_WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    # Endpoint limiters are process-wide: what one test taught them must not pace the next.
    limiter_registry.clear()
    endpoint_formats.clear()  # likewise what an endpoint's JSON support was found to be
    busy_servers.clear()  # and the calls a test gave up on
    yield
    limiter_registry.clear()
    endpoint_formats.clear()
    busy_servers.clear()


# Tests of the storage layer have their own migrated templates (tests/storage/conftest.py),
# and its migration tests need the real upgrade of an empty file.
_REAL_UPGRADES = ("tests/storage/",)
_migrated: dict[str, Path] = {}


def _migrated_template(upgrade) -> Path:
    """An empty SQLite database at head, migrated once per process by the real ``upgrade``."""
    if "path" not in _migrated:
        directory = tempfile.mkdtemp(prefix="rw-test-template-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        path = Path(directory) / "head.db"
        upgrade(f"sqlite:///{path}")
        _migrated["path"] = path
    return _migrated["path"]


def _empty_sqlite_file(url: str) -> Path | None:
    """The file behind ``url`` if it is a SQLite file with no schema yet (missing, or made
    by a connection that created nothing); else None."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" \
            or database.startswith("file:"):
        return None
    path = Path(database).expanduser()
    if path.exists():
        try:
            with closing(sqlite3.connect(path)) as connection:
                if connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    return None
        except sqlite3.Error:  # not a database, locked, ...: the real upgrade says what
            return None
    return path


@pytest.fixture(autouse=True)
def _upgrade_by_copy(request, monkeypatch):
    """Outside the storage tests, bringing an empty SQLite file to head copies a database
    migrated once per process (SQLite's backup API: safe with connections open) instead of
    running every migration again: ~0.3 s of CPU a test, and most UI and command tests start
    from an empty file. Files with a schema (an older revision) get the real upgrade."""
    if _path(request.config, request.node).startswith(_REAL_UPGRADES):
        return
    from storage import migrate

    real = migrate._upgrade

    def upgrade(url: str) -> None:
        target = _empty_sqlite_file(url)
        if target is None:
            real(url)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(_migrated_template(real))) as source, \
                closing(sqlite3.connect(target)) as copy:
            source.backup(copy)

    monkeypatch.setattr(migrate, "_upgrade", upgrade)


@pytest.fixture
def configured_db():
    """The test's own configured database (above), for changes that are logged there."""
    from storage.config import database_url
    from storage.engine import open_database

    sessions = open_database(database_url())
    yield sessions
    sessions.kw["bind"].dispose()
