"""The real-model server dying while serving (it did: a llama.cpp compiled for instructions the
machine's VM did not run crashed at the first token) is said at the fixture's end, with its exit
status and the cached venv to delete, not left to read as "Connection error" in every test."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.real_model.server import llama_server

pytestmark = pytest.mark.real_model


def test_a_server_that_dies_while_serving_is_named_with_the_venv_to_delete():
    # (The clean end, no error, is every real-model session's own fixture teardown.)
    with pytest.raises(RuntimeError, match=r"died while serving \(exit status -11.*delete /"), \
            llama_server() as api_base:
        port = api_base.split(":")[2].split("/")[0]
        pid = int(subprocess.check_output(
            ["pgrep", "-f", "--", f"llama_cpp.server .*--port {port}"]).split()[0])
        os.kill(pid, signal.SIGSEGV)
        time.sleep(1)

