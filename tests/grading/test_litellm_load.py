"""How the library loads litellm on its first call: once, with what the first call would
import on the event loop, and with the loaded heap left out of the garbage collector's
passes when the library was the one that imported it
(``grading.litellm_loader.freeze_heap_on_load``).
Each case runs in a fresh interpreter: what is imported and frozen is process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_LOAD = """
import gc, json, sys
mode = sys.argv[1]
if mode == "user-imported-litellm":
    import litellm  # the user's own code got there first
import grading.litellm_loader
if mode == "opted-out":
    grading.litellm_loader.freeze_heap_on_load = False
if mode == "app":
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(sys.argv[2], default_timeout=120).run()
    assert not at.exception, at.exception
before = gc.get_freeze_count()
grading.litellm_loader.load_litellm()  # as the first call does (or the app's runner thread)
after_first = gc.get_freeze_count()
grading.litellm_loader.load_litellm()
print(json.dumps({"before": before, "frozen": after_first,
                  "frozen_again": gc.get_freeze_count() - after_first,
                  "first_call_modules": all(m in sys.modules
                                            for m in grading.litellm_loader.FIRST_CALL_MODULES)}))
"""


def _load(mode: str, tmp_path: Path) -> dict:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "RUBRIC_WORKBENCH_DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}"}
    out = subprocess.run(
        [sys.executable, "-c", _LOAD, mode, str(ROOT / "ui" / "app.py")], cwd=ROOT,
        capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_library_importing_litellm_freezes_that_heap_once(tmp_path):
    loaded = _load("library", tmp_path)
    assert loaded["before"] == 0
    # litellm, the OpenAI SDK and the rest: well over 100,000 objects on every litellm
    # release seen; all of them now skipped by the collector's full passes.
    assert loaded["frozen"] > 100_000, loaded
    assert loaded["frozen_again"] == 0  # the second call loads nothing and freezes nothing
    assert loaded["first_call_modules"]


def test_litellm_imported_by_the_user_is_loaded_without_freezing_their_heap(tmp_path):
    loaded = _load("user-imported-litellm", tmp_path)
    assert loaded["frozen"] == 0 and loaded["first_call_modules"]


def test_a_program_can_keep_its_heap_unfrozen(tmp_path):
    loaded = _load("opted-out", tmp_path)
    assert loaded["frozen"] == 0 and loaded["first_call_modules"]


def test_the_apps_server_never_freezes_its_heap(tmp_path):
    # The app's process runs for months; its runner thread loads litellm after the app ran.
    loaded = _load("app", tmp_path)
    assert loaded["frozen"] == 0 and loaded["first_call_modules"]
