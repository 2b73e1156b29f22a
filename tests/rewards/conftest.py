"""Venvs with the RL frameworks (their real packages), shared with tests/compat."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.compat.conftest import verifiers_python  # noqa: F401  (a session fixture)
from tests.compat.venvs import venv_python
from tests.fake_provider import fake_provider, fake_provider_server  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
# The drivers import grading from this checkout and the plug-in module next to it.
DRIVER_ENV = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "packaging" / "grading")]),
              "FAKE_JUDGE_KEY": "test-key"}


@pytest.fixture(scope="session")
def openenv_core_python():
    return venv_python("openenv-core")


@pytest.fixture(scope="session")
def openenv_python():
    return venv_python("openenv")


@pytest.fixture(scope="session")
def verifiers03_python():
    return venv_python("verifiers03")
