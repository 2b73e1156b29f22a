"""Seed 001's quick example (autorubric's core grading docs) runs on grading with only the
imports changed, against the local fake provider."""

from __future__ import annotations

import contextlib
import io
import re
import textwrap

from tests.compat.seeds import seed_file

SEED = seed_file("001_e3aeb9b3e457df8a.txt")
# The example as the documentation shows it; the seed's copy lost the indentation of the
# loop body, which is restored here (nothing else differs, checked below).
QUICK_EXAMPLE = '''\
from autorubric import Rubric, Criterion, CriterionVerdict, LLMConfig
from autorubric.graders import CriterionGrader
# Define criteria
rubric = Rubric([
Criterion(name="accuracy", weight=10.0, requirement="States the correct answer"),
Criterion(name="clarity", weight=5.0, requirement="Explains reasoning clearly"),
Criterion(weight=-15.0, requirement="Contains factual errors"), # name optional
])
# Or from dict/file
rubric = Rubric.from_dict([
{"weight": 10.0, "requirement": "States the correct answer"},
{"requirement": "Explains reasoning clearly"}, # weight defaults to 10.0
])
rubric = Rubric.from_file("rubric.yaml")
# Grade
grader = CriterionGrader(llm_config=LLMConfig(model="openai/gpt-4.1-mini"))
result = await rubric.grade(to_grade="...", grader=grader)
# result.score is `float | None` (None if the grade failed); guard before formatting.
print(f"Score: {result.score:.2f}" if result.score is not None else "Score: n/a (grade failed)")
for cr in result.report:
    # `final_verdict` is None on error/multi-choice criteria; guard before printing.
    verdict = cr.final_verdict.value if cr.final_verdict is not None else "n/a"
    print(f" [{verdict}] {cr.criterion.requirement}")
    print(f" Reason: {cr.final_reason}")
'''


def test_the_copy_is_the_seeds_example():
    if SEED.exists():
        flat = "\n".join(line.strip() for line in QUICK_EXAMPLE.splitlines())
        assert flat in "\n".join(line.strip() for line in SEED.read_text().splitlines())


async def test_the_quick_example_runs_with_only_the_imports_changed(seed_namespace):
    code = re.sub(r"\bautorubric\b", "grading", QUICK_EXAMPLE)
    assert code.count("grading") == 2  # the two import lines, nothing else
    wrapped = "async def __example__():\n" + textwrap.indent(code, "    ") + (
        "\n    return locals()\n")
    namespace: dict = {}
    exec(compile(wrapped, "<seed 001 quick example>", "exec"), namespace)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        values = await namespace["__example__"]()
    # rubric.yaml: +10, +5, -3, and the fake judge says MET to everything: 12 / 15
    assert output.getvalue().splitlines()[0] == "Score: 0.80"
    assert " [MET] States the answer" in output.getvalue()
    assert " Reason: the response does this" in output.getvalue()
    assert values["result"].cannot_assess_count == 0
    from_dict = values["rubric"].__class__.from_dict([{"requirement": "Explains"}])
    assert from_dict.criteria[0].weight == 10.0
