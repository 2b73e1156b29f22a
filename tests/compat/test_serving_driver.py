"""ServingDriver (tests/compat/venvs.py), the kept-running driver the OpenEnv tests call:
its replies, and what it says when the driver fails, dies or hangs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.compat.venvs import ServingDriver

SCRIPT = """
import json, sys, time
for line in sys.stdin:
    cfg = json.loads(line)
    print("a library's own line on stdout", flush=True)
    if cfg.get("exit"):
        sys.stderr.write("the driver's last words\\n")
        sys.exit(3)
    if cfg.get("hang"):
        time.sleep(3)
    reply = ({"error": "Traceback (most recent call last):\\nValueError: bad payload"}
             if cfg.get("fail") else {"result": cfg["x"] * 2})
    print("@@driver-reply@@ " + json.dumps(reply), flush=True)
"""


@pytest.fixture
def driver(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(SCRIPT)
    started = ServingDriver(Path(sys.executable), script)
    yield started
    started.close()


def test_replies_come_back_in_order_past_the_lines_a_library_prints(driver):
    assert [driver.call({"x": n}) for n in (1, 2, 3)] == [2, 4, 6]


def test_a_failed_call_raises_with_the_drivers_traceback_and_the_driver_serves_on(driver):
    with pytest.raises(RuntimeError, match=r"(?s)driver.py failed:.*ValueError: bad payload"):
        driver.call({"fail": True})
    assert driver.call({"x": 5}) == 10


def test_a_driver_that_exits_is_named_with_its_status_and_its_stderr(driver):
    with pytest.raises(RuntimeError, match=r"(?s)exited \(3\).*the driver's last words"):
        driver.call({"exit": True})
    with pytest.raises(RuntimeError, match="exited"):  # and every later call, at once
        driver.call({"x": 1})


def test_a_driver_that_hangs_is_given_up_after_the_timeout(driver):
    with pytest.raises(RuntimeError, match="gave no reply in 1 s"):
        driver.call({"hang": True}, timeout=1)
