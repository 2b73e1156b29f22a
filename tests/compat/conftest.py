"""Test-only venvs with the real packages grading is compared with (built once, cached)."""

from __future__ import annotations

import pytest

from tests.compat import seeds
from tests.compat.venvs import venv_python
from tests.fake_provider import fake_provider, fake_provider_server  # noqa: F401


@pytest.fixture(scope="session")
def rubric13_python():
    return venv_python("rubric13")


@pytest.fixture(scope="session")
def rubric22_python():
    return venv_python("rubric22")


@pytest.fixture(scope="session")
def autorubric_python():
    return venv_python("autorubric")


@pytest.fixture(scope="session")
def verifiers_python():
    return venv_python("verifiers")


@pytest.fixture
def seed_namespace(tmp_path, monkeypatch, request):
    return seeds.seed_namespace(tmp_path, monkeypatch, request.getfixturevalue("fake_provider"))
