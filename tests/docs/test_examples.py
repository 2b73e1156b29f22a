"""Every Python example of the README and the docs runs as printed, against the local fake
provider through the real litellm path; every ``rubric-workbench`` command they show is one
the argument parser accepts."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from storage.cli import build_parser
from tests.docs.pages import ROOT, blocks

PYTHON = blocks("python")


def _run(code: str, provider, tmp_path) -> subprocess.CompletedProcess:
    (tmp_path / "example.py").write_text(code)
    env = {**os.environ, "RUBRIC_WORKBENCH_MODEL": "openai/docs-judge",
           "RUBRIC_WORKBENCH_API_BASE": provider.api_base,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1",
           "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "example.py"], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)


def test_the_docs_have_python_examples():
    assert any(page == "README.md" for page, _, _ in PYTHON)


@pytest.mark.parametrize("page,line,code", PYTHON, ids=[f"{p}:{n}" for p, n, _ in PYTHON])
def test_a_python_example_runs_as_printed(page, line, code, fake_provider, tmp_path):
    done = _run(code, fake_provider, tmp_path)
    assert done.returncode == 0, f"{page}:{line}\n{done.stderr[-5000:]}"
    assert done.stdout.strip(), f"{page}:{line} printed nothing"
    assert fake_provider.requests > 0, f"{page}:{line} never called the judge"


def test_the_readme_library_example_scores_what_the_judge_said(fake_provider, tmp_path):
    """The fake judge says MET to every criterion: 10 + 8 - 15 = 3 of 18 positive points."""
    code = next(code for page, _, code in PYTHON if "PerCriterionGrader()" in code)
    done = _run(code, fake_provider, tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    score, raw_score = done.stdout.split()[:2]
    assert (float(score), float(raw_score)) == (pytest.approx(3 / 18), 3.0)
    assert fake_provider.requests == 3  # one call per criterion


def _commands() -> list[tuple[str, str, list[str]]]:
    """(page, line, arguments) of every rubric-workbench command in a shell, ini, yaml or
    Dockerfile block of the docs."""
    found = []
    for lang in ("bash", "ini", "yaml", "dockerfile"):
        for page, line, code in blocks(lang):
            code = code.replace("\\\n", " ")
            # "command  # or: another command": both are shown, both are checked
            for text in code.replace("# or: ", "\n").splitlines():
                array = re.search(r'\[("rubric-workbench".*?)\]', text)
                if array:  # a compose command or a Dockerfile CMD: a JSON-like list
                    words = [w.strip().strip('"') for w in array[1].split(",")]
                else:
                    text = re.sub(r"^ExecStart=", "", text.split(" #")[0].strip())
                    try:
                        words = shlex.split(text, comments=True)
                    except ValueError:
                        continue
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value prefix
                    words.pop(0)
                if words[:2] == ["bash", "scripts/start.sh"]:  # it runs ``rubric-workbench ui``
                    words = ["rubric-workbench", "ui", *words[2:]]
                if words and re.fullmatch(r"([^\s=]*/)?rubric-workbench", words[0]):
                    found.append((page, line, words[1:]))
    return found


COMMANDS = _commands()


def test_the_docs_show_commands():
    shown = {args[0] for _, _, args in COMMANDS}
    assert {"grade", "export", "worker", "db", "panel", "agreement", "import-verdicts",
            "ui"} <= shown
    assert ["ui", "--port", "8600"] in [args for _, _, args in COMMANDS]  # README: "# or: ..."


@pytest.mark.parametrize("page,line,args", COMMANDS,
                         ids=[f"{p}:{n}:{' '.join(a)[:40]}" for p, n, a in COMMANDS])
def test_a_command_in_the_docs_is_accepted_by_the_parser(page, line, args, capsys):
    try:
        build_parser().parse_args(args)
    except SystemExit:
        pytest.fail(f"{page}:{line}: rubric-workbench {' '.join(args)}\n"
                    f"{capsys.readouterr().err}")


def test_the_readme_kinds_example_scores_each_kind(fake_provider, tmp_path):
    """Verdicts MET, UNMET, MET, fair, calm: 10 + 4 + 0.5 x 6 + 3 of 23 positive points; with
    the required criterion UNMET the gate closes (0.0). The fake judge says MET to each binary
    criterion and picks each rating's first option (poor, calm): (10 - 8 + 4 + 0 + 3) / 23."""
    code = next(code for page, _, code in PYTHON
                if page == "README.md" and "reference_submission" in code)
    done = _run(code, fake_provider, tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    computed, gated, graded = done.stdout.splitlines()[:3]
    assert float(computed) == pytest.approx(20 / 23) and float(gated) == 0.0
    assert float(graded.split()[0]) == pytest.approx(9 / 23)
    assert "<reference_answer>" in fake_provider.bodies[0]["messages"][-1]["content"]
