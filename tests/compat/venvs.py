"""Test-only virtual environments holding the real packages we are compared with.

The real ``rubric`` 1.3 and 2.x, ``autorubric``, ``verifiers`` and the two OpenEnv packages
cannot share one environment with each other or with the app, so each gets its own venv,
created once from the package registry (ordinary ``pip install``) and cached across runs in
``~/.cache/rubric-workbench-test-envs`` (or ``$RUBRIC_WORKBENCH_TEST_ENVS``). A small driver
script runs inside the venv and speaks JSON on stdin/stdout.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    configured = os.environ.get("RUBRIC_WORKBENCH_TEST_ENVS")
    root = Path(configured) if configured else Path.home() / ".cache" / "rubric-workbench-test-envs"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _key(name: str, requirements: list[str]) -> str:
    digest = hashlib.sha256(
        json.dumps([sys.version_info[:2], sorted(requirements)]).encode()
    ).hexdigest()[:12]
    return f"{name}-{digest}"


def ensure_venv(name: str, requirements: list[str], *, timeout: float = 900,
                no_deps: list[str] | None = None, env: dict[str, str] | None = None) -> Path:
    """The python of a cached venv holding ``requirements`` (created on first use), and
    ``no_deps`` installed without their dependencies (a wheel that only carries a file)."""
    root = cache_root()
    target = root / _key(name, requirements + [f"--no-deps {r}" for r in no_deps or []])
    python = target / "bin" / "python"
    with open(root / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest process may be building it
        if (target / ".complete").exists():
            return python
        # Only a venv marked complete is used; a half-built one is rebuilt from scratch.
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
        steps = [requirements] + ([["--no-deps", *no_deps]] if no_deps else [])
        for step in steps:
            result = subprocess.run(
                [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 *step],
                capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
            )
            if result.returncode != 0:
                shutil.rmtree(target, ignore_errors=True)
                raise RuntimeError(
                    f"pip install {' '.join(step)} failed:\n{result.stderr[-3000:]}"
                )
        (target / ".complete").write_text(json.dumps(requirements))
    return python


# Nothing leaves the machine: litellm (pulled in by autorubric) would fetch a price map.
_OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1",
            "LITELLM_LOG": "ERROR", "NO_PROXY": "127.0.0.1,localhost"}


def run_driver(python: Path, script: Path, payload: Any, *, timeout: float = 300,
               env: dict[str, str] | None = None) -> Any:
    """Run ``script`` with ``python``; JSON ``payload`` on stdin, JSON result on stdout."""
    full_env = {**os.environ, **_OFFLINE, "PYTHONPATH": "", **(env or {})}
    result = subprocess.run(
        [str(python), str(script)], input=json.dumps(payload), capture_output=True, text=True,
        timeout=timeout, env=full_env, cwd=script.parent,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{script.name} failed ({result.returncode}):\n{result.stderr[-5000:]}")
    return json.loads(result.stdout)


class ServingDriver:
    """A driver kept running for many calls (``script --serve``): one JSON line in, one
    reply line back (``REPLY`` then ``{"result": ...}`` or ``{"error": traceback}``), where
    ``run_driver`` starts a process per call, each importing the framework again (~5 s with
    OpenEnv). Lines without the mark (a library's print) are passed over."""

    REPLY = "@@driver-reply@@ "

    def __init__(self, python: Path, script: Path, *, env: dict[str, str] | None = None):
        import queue
        import tempfile

        self.name = script.name
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115  (closed in close())
        self._process = subprocess.Popen(
            [str(python), str(script), "--serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, cwd=script.parent,
            env={**os.environ, **_OFFLINE, "PYTHONPATH": "", **(env or {})})
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._process.stdout:
            self._lines.put(line)
        self._lines.put("")  # the driver exited

    def _failure(self, what: str) -> RuntimeError:
        self._stderr.seek(0)
        return RuntimeError(f"{self.name} {what}:\n{self._stderr.read()[-5000:]}")

    def call(self, payload: Any, *, timeout: float = 300) -> Any:
        import queue

        try:
            self._process.stdin.write(json.dumps(payload) + "\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            raise self._failure(f"exited ({self._process.poll()})") from None
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise self._failure(f"gave no reply in {timeout:.0f} s") from None
            if not line:
                raise self._failure(f"exited ({self._process.wait(10)})")
            if line.startswith(self.REPLY):
                reply = json.loads(line[len(self.REPLY):])
                if "error" in reply:
                    raise RuntimeError(f"{self.name} failed:\n{reply['error']}")
                return reply["result"]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stderr.close()


# Every test venv, so that a full run (CI) can build them all at once instead of one after the
# other as fixtures ask for them: pip spends most of that time waiting on the network.
ALL_VENVS = {
    "rubric13": ["rubric==1.3.2"],
    "rubric22": ["rubric==2.2.0"],
    "autorubric": ["autorubric==1.6.1"],
    "verifiers": ["verifiers==0.4.0"],
    "verifiers03": ["verifiers==0.3.1"],
    # grading's own dependencies that these frameworks do not bring (the slim install's)
    "openenv-core": ["openenv-core==0.3.0"],
    "openenv": ["openenv==0.10.0"],
    # what the slim install's [litellm] extra resolves to (tests/compat/test_slim_install.py)
    "litellm": ["litellm==1.106.2"],
}
_started = False


def venv_python(name: str) -> Path:
    """The venv ``name`` of ALL_VENVS; on CI, the first call starts building all of them."""
    global _started
    if os.environ.get("CI") and not _started:
        _started = True
        for other, requirements in ALL_VENVS.items():
            if other != name:
                threading.Thread(target=_build_quietly, args=(other, requirements),
                                 daemon=True).start()
    return ensure_venv(name, ALL_VENVS[name], timeout=1800)


def _build_quietly(name: str, requirements: list[str]) -> None:
    # On failure the fixture that needs this venv builds it again and reports the error.
    with contextlib.suppress(Exception):
        ensure_venv(name, requirements, timeout=1800)


def build_all() -> None:
    """Build every venv of ALL_VENVS at once (each under its own lock, skipped when cached)."""
    threads = [threading.Thread(target=_build_quietly, args=item) for item in ALL_VENVS.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    # scripts/test.sh starts this before anything else: pip waits on the network most of the
    # time, so the venvs are ready when the compared packages' tests ask for them (they used
    # to hold both pytest workers for ~150 s on a clean machine).
    build_all()
