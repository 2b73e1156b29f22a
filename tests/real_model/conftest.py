"""Fixtures: one real model server for the session, and a counting proxy per test."""

from __future__ import annotations

import pytest

from tests.real_model.proxy import CountingProxy
from tests.real_model.server import llama_server


@pytest.fixture(scope="session")
def llama_api_base():
    with llama_server() as api_base:
        yield api_base


@pytest.fixture
def stock_server(llama_api_base):
    """llama-cpp-python's server as it ships: HTTP 500 to the json_schema option."""
    proxy = CountingProxy(llama_api_base, enforce_schema=False)
    yield proxy
    proxy.close()


@pytest.fixture
def schema_server(llama_api_base):
    """A server that takes the json_schema option and enforces it."""
    proxy = CountingProxy(llama_api_base, enforce_schema=True)
    yield proxy
    proxy.close()
