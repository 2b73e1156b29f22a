"""The slim install: the grading library alone, into a clean venv and next to verifiers 0.4.0.

Builds the wheel from packaging/grading once per session (a real PEP 517 build), installs it
into a brand-new venv, and asks pip what installing it next to verifiers would change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest

from tests.compat.venvs import venv_python

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "packaging" / "grading"
ALLOWED = {"rubric-workbench-grading", "pydantic", "pydantic-core", "pyyaml", "annotated-types",
           "typing-extensions", "typing-inspection"}
# The app's own packages: none may come with the library, not even through the extra.
APP_ONLY = {"streamlit", "sqlalchemy", "alembic", "psycopg", "psycopg-binary", "tenacity",
            "platformdirs", "authlib", "pandas", "altair"}


def _pip(python: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        pytest.fail(f"pip {' '.join(args)} failed ({done.returncode}):\n"
                    f"{done.stdout}\n{done.stderr}")
    return done


def _package_copy(root: Path) -> Path:
    """packaging/grading and the grading/ it stages, copied to ``root`` in the same layout.

    setuptools builds in the project folder (src/, build/): two test workers building the one
    checkout at once would delete each other's files, and a checkout's leftovers would leak in.
    """
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "src", "*.egg-info")
    shutil.copytree(PACKAGE, root / "packaging" / "grading", ignore=skip)
    shutil.copytree(ROOT / "grading", root / "grading", ignore=skip)
    return root / "packaging" / "grading"


@pytest.fixture(scope="session")
def grading_wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    package = _package_copy(tmp_path_factory.mktemp("checkout"))
    _pip(Path(sys.executable), "wheel", "--quiet", "--no-deps", "-w", str(out), str(package))
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


def test_the_package_asks_for_ranges_and_litellm_only_through_its_extra(grading_wheel):
    with zipfile.ZipFile(grading_wheel) as wheel:
        [metadata] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        requires = HeaderParser().parsestr(wheel.read(metadata).decode()).get_all(
            "Requires-Dist")
    plain = sorted(r for r in requires if "extra ==" not in r)
    extra = [r for r in requires if "extra ==" in r]
    assert [r.split(">")[0].split("<")[0].lower() for r in plain] == ["pydantic", "pyyaml"]
    assert len(extra) == 1 and extra[0].startswith("litellm") and 'extra == "litellm"' in extra[0]
    for requirement in plain + extra:  # compatible ranges, never exact pins
        assert "==" not in requirement.split(";")[0] and "<" in requirement, requirement


def test_the_litellm_extra_gives_the_default_generate_fn_and_nothing_of_the_app(
        grading_wheel, fake_provider, tmp_path):
    python = venv_python("litellm")  # a venv that already holds what the extra resolves to
    _pip(python, "install", "--quiet", "--force-reinstall", "--no-deps", str(grading_wheel))
    report = json.loads(_pip(python, "install", "--dry-run", "--quiet", "--report", "-",
                             f"{grading_wheel}[litellm]").stdout)
    # The extra asks for nothing this venv lacks: litellm's own packages are all it brings.
    assert {item["metadata"]["name"].lower() for item in report["install"]} <= {
        "rubric-workbench-grading"}
    assert not APP_ONLY & _names(_pip(python, "freeze").stdout)
    script = (
        "import asyncio\n"
        "from grading import Rubric\n"
        "from grading.autograders import PerCriterionGrader\n"
        "rubric = Rubric.from_dict([{'weight': 2, 'requirement': 'a'}])\n"
        "report = asyncio.run(rubric.grade('text', autograder=PerCriterionGrader()))\n"
        "print(report.score, report.token_usage is not None)\n"
    )
    env = {**os.environ, "PYTHONPATH": "", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_HUB_OFFLINE": "1", "LITELLM_LOG": "ERROR", "NO_PROXY": "127.0.0.1,localhost",
           "RUBRIC_WORKBENCH_MODEL": "openai/judge",
           "RUBRIC_WORKBENCH_API_BASE": fake_provider.api_base,
           "RUBRIC_WORKBENCH_API_KEY": "test-key"}
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1.0", "True"]
    assert fake_provider.requests == 1 and fake_provider.last_body["model"] == "judge"


def test_verifiers_finds_the_judge_plug_in_the_slim_wheel_installs(grading_wheel, tmp_path,
                                                                   verifiers_python,
                                                                   fake_provider):
    """The wheel's own files (not this checkout) inside verifiers 0.4.0's Task.score."""
    from tests.compat.venvs import run_driver
    from tests.rewards.test_verifiers import DRIVER, RUBRIC_YAML, judge

    site = tmp_path / "site"
    _pip(verifiers_python, "install", "--quiet", "--no-deps", "--target", str(site),
         str(grading_wheel))
    assert (site / "workbench_rubric_judge.py").exists() and (site / "grading").is_dir()
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    fake_provider.default = judge
    [out] = run_driver(verifiers_python, DRIVER, {
        "rubric_path": str(tmp_path / "rubric.yaml"), "base_url": fake_provider.api_base,
        "prompt": "How much should I take?", "replies": ["Take 5 mg."]},
        env={"PYTHONPATH": str(site), "FAKE_JUDGE_KEY": "test-key"})
    assert out["reward"] == 1.0 and out["judge_calls"] == 2
