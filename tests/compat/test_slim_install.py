"""The slim install: the grading library alone, into a clean venv and next to verifiers 0.4.0.

Builds the wheel from packaging/grading once per session (a real PEP 517 build), installs it
into a brand-new venv, and asks pip what installing it next to verifiers would change.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "packaging" / "grading"
ALLOWED = {"rubric-workbench-grading", "pydantic", "pydantic-core", "pyyaml", "annotated-types",
           "typing-extensions", "typing-inspection"}


def _pip(python: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout, check=True)


@pytest.fixture(scope="session")
def grading_wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _pip(Path(sys.executable), "wheel", "--quiet", "--no-deps", "-w", str(out), str(PACKAGE))
    (wheel,) = out.glob("rubric_workbench_grading-*.whl")
    return wheel


def _names(freeze: str) -> set[str]:
    return {line.split("==")[0].split(" @ ")[0].lower().replace("_", "-")
            for line in freeze.splitlines() if line.strip()}


def test_the_slim_install_brings_only_pydantic_and_pyyaml(grading_wheel, tmp_path):
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    _pip(python, "install", "--quiet", str(grading_wheel))

    installed = _names(_pip(python, "freeze").stdout)
    assert installed <= ALLOWED, installed - ALLOWED
    assert {"rubric-workbench-grading", "pydantic", "pyyaml"} <= installed
    script = (
        "import asyncio, sys\n"
        "from grading import Rubric\n"
        "from grading.autograders import PerCriterionGrader\n"
        "async def judge(system_prompt, user_prompt):\n"
        "    return '{\"criterion_status\": \"MET\", \"explanation\": \"ok\"}'\n"
        "rubric = Rubric.from_dict([{'weight': 2, 'requirement': 'a'}, "
        "{'weight': -1, 'requirement': 'b'}])\n"
        "report = asyncio.run(rubric.grade('text', autograder=PerCriterionGrader(judge)))\n"
        "print(report.score, 'litellm' in sys.modules)\n"
    )
    out = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout.split()
    assert out == ["0.5", "False"]


def test_installing_next_to_verifiers_changes_nothing_already_there(grading_wheel,
                                                                    verifiers_python):
    before = _pip(verifiers_python, "freeze").stdout
    report = json.loads(_pip(verifiers_python, "install", "--dry-run", "--quiet", "--report",
                             "-", str(grading_wheel)).stdout)
    would_install = {item["metadata"]["name"].lower() for item in report["install"]}
    # Nothing already there changes, and nothing new comes with it.
    assert would_install == {"rubric-workbench-grading"}
    assert _pip(verifiers_python, "freeze").stdout == before
    assert "verifiers==0.4.0" in before
