"""Every upload field says the limit the app enforces (issue 35 item 15: the fields said
"200MB per file", Streamlit's default, for uploads capped at 50 MB)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from ui.response_upload import max_upload_mb

CONFIG = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"


def test_the_server_caps_uploads_at_the_apps_limit(monkeypatch):
    monkeypatch.delenv("RUBRIC_WORKBENCH_MAX_UPLOAD_MB", raising=False)
    server = tomllib.loads(CONFIG.read_text())["server"]
    # A field without its own max_upload_size (the verdicts CSV) says and enforces this.
    assert server.get("maxUploadSize", 200) == max_upload_mb() == 50
