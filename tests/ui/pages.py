"""Helpers for AppTest tests of single pages: open a page, read what it wrote."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from storage.config import database_url
from storage.engine import SessionFactory, open_database

APP = str(Path(__file__).resolve().parents[2] / "ui" / "app.py")
SAMPLES = Path(__file__).resolve().parents[2] / "ui" / "samples"


def open_page(name: str, *, reviewer: str | None = None, timeout: float = 30) -> AppTest:
    """The app, switched to ``app_pages/<name>.py`` and run, with no exception
    (``reviewer``: the name the sidebar remembers, set before the first run)."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    if reviewer is not None:
        at.session_state["reviewer_name"] = reviewer
    at.run()
    at.switch_page(f"app_pages/{name}.py").run()
    assert not at.exception, at.exception
    return at


def db() -> SessionFactory:
    """The test's own database (tests/conftest.py points each test at a fresh file)."""
    return open_database(database_url())


def texts(at: AppTest) -> str:
    """Every message, caption and markdown the page shows, as one string to search, with
    the backslashes that keep user text from becoming markup taken out."""
    parts = []
    for kind in ("error", "success", "info", "warning", "caption", "markdown", "text"):
        parts.extend(str(element.value) for element in getattr(at, kind))
    return unescape("\n".join(parts))


def unescape(markdown: str) -> str:
    """Markdown as the reader sees it: backslash escapes and the invisible word joiners that
    keep ``:shortcodes:`` from becoming icons (ui.safe_text) removed."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def frames(at: AppTest) -> list:
    return [element.value for element in at.dataframe]


def frame_with(at: AppTest, column: str):
    """The first table on the page that has ``column``."""
    return next(frame for frame in frames(at) if column in frame.columns)


def agreement_tab(at: AppTest, name: str) -> AppTest:
    """The Agreement page with its section ``name`` open (ui.agreement_text.TABS; only the
    open one is drawn), as a click on the tab does: run, no exception."""
    from ui.agreement_text import TABS

    assert name in TABS, f"no Agreement section {name!r} in {TABS}"
    at.session_state["agreement_tab"] = name
    at.run()
    assert not at.exception, at.exception
    return at
