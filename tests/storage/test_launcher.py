"""The launchers (``rubric-workbench ui`` and ``scripts/start.sh``) as real processes:
stopping them stops the server, and start.sh installs only when something changed."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "rubric-workbench"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "RUBRIC_WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "RUBRIC_WORKBENCH_DATABASE_URL": f"sqlite:///{tmp_path / 'workbench.db'}",
            "RUBRIC_WORKBENCH_IN_PROCESS_WORKER": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "HF_HUB_OFFLINE": "1", **extra}


def _serving(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                    timeout=2) as reply:
            return reply.read().decode().strip() == "ok"
    except OSError:
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _start_and_terminate(command: list[str], port: int, env: dict[str, str],
                         log: Path) -> None:
    """Start ``command`` in its own process group, wait until the app answers, SIGTERM the
    process we started (only it, as a service manager or a terminal would) and check that
    the server went with it."""
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _serving(port):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the app did not start:\n" + log.read_text()
            time.sleep(0.3)
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
        deadline = time.monotonic() + 15
        while (_port_open(port) or _group_alive(process.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _port_open(port), "the server still serves the port after SIGTERM"
        assert not _group_alive(process.pid), "a child of the launcher is still running"
    finally:
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGTERM are POSIX")
def test_sigterm_to_the_ui_command_stops_the_server(tmp_path):
    port = _free_port()
    _start_and_terminate([str(ENTRY_POINT), "ui", "--port", str(port)], port,
                         _env(tmp_path), tmp_path / "ui.log")


def _fake_venv(tmp_path: Path) -> Path:
    """A venv for start.sh whose python records pip calls instead of installing (tests reach
    no package registry) and runs everything else with the test interpreter."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
        f'  echo "$*" >> "{venv}/pip-calls.log"; exit 0\n'
        "fi\n"
        f'exec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    (venv / "bin" / "rubric-workbench").symlink_to(ENTRY_POINT)
    return venv


def _start_sh(venv: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts" / "start.sh"), *args], cwd=ROOT,
                          env={**os.environ, "RUBRIC_WORKBENCH_VENV": str(venv)},
                          capture_output=True, text=True, timeout=120, check=True)


def _pip_calls(venv: Path) -> list[str]:
    log = venv / "pip-calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_start_sh_installs_once_and_again_only_when_the_project_file_changes(tmp_path):
    venv = _fake_venv(tmp_path)

    first = _start_sh(venv, "--help")
    assert "about a minute" in first.stdout
    assert _pip_calls(venv)[-1] == "-m pip install --quiet -e ."
    calls = len(_pip_calls(venv))

    second = _start_sh(venv, "--help")
    assert "Installing" not in second.stdout and "--port" in second.stdout
    assert len(_pip_calls(venv)) == calls  # nothing changed: no pip at all

    stamp = venv / ".rubric-workbench-install"
    stamp.write_text("0" * 64 + " 3.11.2\n")  # as if pyproject.toml had been edited since
    _start_sh(venv, "--help")
    assert len(_pip_calls(venv)) == 2 * calls
    assert stamp.read_text() != "0" * 64 + " 3.11.2\n"


def test_start_sh_makes_whole_a_venv_a_killed_run_left_without_pip(tmp_path):
    """A first start killed while the venv was being made leaves bin/python and no pip; the
    next start makes the venv again (python -m venv on it) before installing, instead of
    failing with 'No module named pip' on every start after."""
    venv = _fake_venv(tmp_path)
    python = venv / "bin" / "python"
    made = venv / "made-whole"
    python.write_text(  # no pip until `python -m venv` has run on this venv
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
        f'  [ -f "{made}" ] || {{ echo "No module named pip" >&2; exit 1; }}\n'
        f'  echo "$*" >> "{venv}/pip-calls.log"; exit 0\n'
        "fi\n"
        f'exec "{sys.executable}" "$@"\n')
    maker = tmp_path / "python3"
    maker.write_text(  # the interpreter start.sh makes venvs with, recording what it was asked
        "#!/bin/sh\n"
        f'echo "$*" >> "{tmp_path}/venv-calls.log"\n'
        f'[ "$1" = "-m" ] && [ "$2" = "venv" ] && touch "{made}"\n')
    maker.chmod(maker.stat().st_mode | stat.S_IXUSR)

    result = subprocess.run(["bash", str(ROOT / "scripts" / "start.sh"), "--help"], cwd=ROOT,
                            env={**os.environ, "RUBRIC_WORKBENCH_VENV": str(venv),
                                 "PYTHON": str(maker)},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "venv-calls.log").read_text().splitlines() == [f"-m venv {venv}"]
    assert _pip_calls(venv)[-1] == "-m pip install --quiet -e ."
    assert (venv / ".rubric-workbench-install").exists()


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGTERM are POSIX")
def test_sigterm_to_start_sh_stops_the_server(tmp_path):
    venv = _fake_venv(tmp_path)
    _start_sh(venv, "--help")  # writes the install stamp (pip is recorded, not run)
    port = _free_port()
    _start_and_terminate(
        ["bash", str(ROOT / "scripts" / "start.sh"), "--port", str(port)], port,
        _env(tmp_path, RUBRIC_WORKBENCH_VENV=str(venv)), tmp_path / "start.log")
