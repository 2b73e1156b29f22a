"""Test-only venvs with the real packages grading is compared with (built once, cached)."""

from __future__ import annotations

import pytest

from tests.compat.venvs import ensure_venv
from tests.fake_provider import fake_provider, fake_provider_server  # noqa: F401

RUBRIC_13 = ["rubric==1.3.2"]
RUBRIC_22 = ["rubric==2.2.0"]
AUTORUBRIC = ["autorubric==1.6.1"]


@pytest.fixture(scope="session")
def rubric13_python():
    return ensure_venv("rubric13", RUBRIC_13)


@pytest.fixture(scope="session")
def rubric22_python():
    return ensure_venv("rubric22", RUBRIC_22)


@pytest.fixture(scope="session")
def autorubric_python():
    return ensure_venv("autorubric", AUTORUBRIC)


VERIFIERS = ["verifiers==0.4.0"]


@pytest.fixture(scope="session")
def verifiers_python():
    return ensure_venv("verifiers", VERIFIERS, timeout=1800)
