"""Test-wide setup: offline litellm, no provider keys, a private database per test."""

from __future__ import annotations

import os

import pytest

# Set before anything imports litellm: no price-map download, no tokenizer download.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOG", "ERROR")

_PROVIDER_KEYS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "MISTRAL_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY", "OPENROUTER_API_KEY",
    "AZURE_API_KEY", "COHERE_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
)
_WORKBENCH_VARS = (
    "RUBRIC_WORKBENCH_MODEL", "RUBRIC_WORKBENCH_API_BASE", "RUBRIC_WORKBENCH_API_KEY",
    "RUBRIC_WORKBENCH_ADMINS",
)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path):
    """No real keys or endpoints leak into a test; each test gets its own SQLite file."""
    for name in _PROVIDER_KEYS + _WORKBENCH_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path / 'workbench.db'}")
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    yield
