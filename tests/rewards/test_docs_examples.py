"""The reward examples of docs/rl-rewards.md run as printed, each in its framework's own venv
(the real package), with a rubric file next to them and the local fake provider as the OpenAI
server."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.rewards.conftest import DRIVER_ENV
from tests.rewards.test_verifiers import RUBRIC_YAML, judge

PAGE = Path(__file__).resolve().parents[2] / "docs" / "rl-rewards.md"
EXAMPLES = dict(re.findall(
    r"<!-- runnable example \(tests/rewards/test_docs_examples\.py\): (\S+) -->\n"
    r"```python\n(.*?)```", PAGE.read_text(), re.S))


def _run(python: Path, name: str, provider, tmp_path: Path) -> str:
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    script = tmp_path / "example.py"
    script.write_text(EXAMPLES[name])
    env = {**os.environ, **DRIVER_ENV, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost",
           "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": provider.api_base}
    done = subprocess.run([str(python), str(script)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    return done.stdout


def test_the_page_has_one_runnable_example_per_framework():
    assert set(EXAMPLES) == {"verifiers-0.4", "verifiers-0.3", "openenv"}


def test_the_verifiers_04_example_runs(verifiers_python, fake_provider, tmp_path):
    fake_provider.default = judge
    out = _run(verifiers_python, "verifiers-0.4", fake_provider, tmp_path)
    assert out.startswith("1.0 {")
    assert "'workbench_rubric_judge/dose': 1.0" in out
    assert "'workbench_rubric_judge/harm': 0.0" in out
    assert fake_provider.requests == 2
    assert all(body["model"] == "gpt-4.1-mini" for body in fake_provider.bodies)


def test_the_verifiers_03_example_runs(verifiers03_python, fake_provider, tmp_path):
    fake_provider.default = judge
    out = _run(verifiers03_python, "verifiers-0.3", fake_provider, tmp_path)
    assert out.strip() == "[1.0, 1.0, 0.0]"
    assert fake_provider.requests == 4  # the duplicate completion was graded once


@pytest.mark.parametrize("venv", ["openenv_core_python", "openenv_python"])
def test_the_openenv_example_runs(venv, request, fake_provider, tmp_path):
    fake_provider.default = judge
    out = _run(request.getfixturevalue(venv), "openenv", fake_provider, tmp_path)
    assert out.strip() == "1.0 {'dose': 'MET', 'harm': 'UNMET'}"
    assert fake_provider.requests == 2
