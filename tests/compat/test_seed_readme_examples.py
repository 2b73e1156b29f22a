"""Every code example of the rubric package's README (seed 002) runs on grading with only
``rubric`` replaced by ``grading`` in the imports.

The README's own generate function (the OpenAI SDK, reading OPENAI_API_KEY) and the default
generate_fn (litellm) are pointed at the local fake provider through the environment; the
README's JSON and YAML rubric files are the files its ``from_file`` calls load.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

import grading
from tests.compat.seeds import seed_file, to_grading
from tests.fake_provider import Reply

SEED = seed_file("002_f1ecdca39aa5c7f6.txt")
COPY = Path(__file__).parent / "seed_002_examples.md"  # the blocks, verbatim, for CI
BLOCKS = re.findall(r"```(python|json|yaml)\n(.*?)```", COPY.read_text(), re.S)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
JSON_FILE = next(code for lang, code in BLOCKS if lang == "json")
YAML_FILE = next(code for lang, code in BLOCKS if lang == "yaml")


def _words(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def judge_by_requirement(body) -> Reply:
    prompt = body["messages"][-1]["content"]
    verdict = "MET" if "17.2%" in prompt else "UNMET"
    return Reply(json.dumps({"criterion_status": verdict, "explanation": f"judged {verdict}"}))


def test_the_copy_is_the_seeds_examples():
    assert [lang for lang, _ in BLOCKS] == ["python"] * 7 + ["json", "yaml"]
    if not SEED.exists():  # a fresh clone: the copy was checked where the seeds are
        return
    seed = _words(SEED.read_text())
    for _, code in BLOCKS:
        lines = _words(code)
        starts = [i for i, line in enumerate(seed) if line == lines[0]]
        assert any(seed[i:i + len(lines)] == lines for i in starts), lines[0]


def test_the_main_example_runs_with_only_the_import_changed(fake_provider, monkeypatch,
                                                             capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.api_base)
    fake_provider.default = judge_by_requirement
    code = to_grading(PYTHON[0])
    changed = [(a, b) for a, b in zip(PYTHON[0].splitlines(), code.splitlines(), strict=True)
               if a != b]
    assert changed == [("from rubric import Rubric", "from grading import Rubric"),
                       ("from rubric.autograders import PerCriterionGrader",
                        "from grading.autograders import PerCriterionGrader")]
    exec(compile(code, "<seed 002 example 0>", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.splitlines() == [
        "Score: 0.56",
        "  [MET] States Q4 2023 base margin as 17.2%",
        "    → judged MET",
        "  [UNMET] Explicitly uses Shapley attribution for decomposition",
        "    → judged UNMET",
        "  [UNMET] Uses total deliveries instead of cash-only deliveries",
        "    → judged UNMET",
    ]
    assert fake_provider.requests == 3
    assert {b["messages"][0]["content"] for b in fake_provider.bodies} == {
        "This overrides the default grader system prompt"}
    assert {b["model"] for b in fake_provider.bodies} == {"gpt-5-mini"}


@pytest.mark.parametrize("index", range(1, len(PYTHON)))
async def test_the_other_examples_run_with_only_the_import_changed(index, seed_namespace,
                                                                   tmp_path):
    (tmp_path / "rubric.json").write_text(JSON_FILE)
    (tmp_path / "rubric.yaml").write_text(YAML_FILE)
    namespace = {**seed_namespace, "your_function": seed_namespace["your_llm_fn"],
                 "your_custom_function": seed_namespace["your_llm_fn"]}
    wrapped = "async def __example__():\n" + textwrap.indent(to_grading(PYTHON[index]), "    ") \
        + "\n    return locals()\n"
    exec(compile(wrapped, f"<seed 002 example {index}>", "exec"), namespace)
    values = await namespace["__example__"]()
    if "grader" in values:  # the customisation examples: the grader they build grades
        report = await namespace["rubric"].grade("text", autograder=values["grader"])
        assert report.score is not None
    if "result2" in values:
        assert values["result1"].raw_score is not None
        assert values["result2"].llm_raw_score == 80.0  # the fake judge's holistic score
        assert values["result2"].raw_score == pytest.approx(0.8 * 15.0)
    if "raw_score" in values:
        assert values["raw_score"] == pytest.approx(0.8 * 15.0)
    if "yaml_data" in values:  # the loading examples: the last one read the YAML file
        assert isinstance(values["rubric"], grading.Rubric)
        assert [(c.weight, c.requirement) for c in values["rubric"].rubric] == [
            (10.0, "States Q4 2023 base margin as 17.2%"),
            (8.0, "Explicitly uses Shapley attribution for decomposition"),
            (-15.0, "Uses total deliveries instead of cash-only deliveries")]
        assert grading.Rubric.from_file("rubric.json").rubric == values["rubric"].rubric
