"""Every Python example of the rubric package's documentation (seed 000) runs on grading with
only ``rubric`` replaced by ``grading`` in the imports.

The default generate_fn (litellm) is pointed at the local fake provider through the
environment. The documentation's own stand-ins — a Hugging Face tokenizer and a model client
— are given whitespace/scripted equivalents in the namespace, as a reader would. Blocks that
are signatures, not code, are listed and must stay the only ones that do not compile.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import grading
from tests.compat.seeds import seed_file, to_grading

SEED = seed_file("000_59c6fc2cafcd4ffe.txt")
COPY = Path(__file__).parent / "seed_000_examples.md"  # the blocks, verbatim, for CI
BLOCKS = re.findall(r"```python\n(.*?)```", COPY.read_text(), re.S)
# Signature listings ("def __init__(...", "async def __call__(...) -> str") and a call with a
# literal "..." argument: documentation, not runnable code.
NOT_CODE = {5, 6, 22}


def test_the_seed_has_the_examples_we_expect():
    assert len(BLOCKS) == 27
    if SEED.exists():  # next to the seeds (not in a fresh clone): the copy is still verbatim
        assert re.findall(r"```python\n(.*?)```", SEED.read_text(), re.S) == BLOCKS
    for index in NOT_CODE:
        with pytest.raises(SyntaxError):
            compile(textwrap.indent(BLOCKS[index], "    "), "<seed>", "exec")


@pytest.mark.parametrize("index", [i for i in range(len(BLOCKS)) if i not in NOT_CODE])
async def test_seed_example_runs_with_only_the_import_changed(index, seed_namespace):
    code = to_grading(BLOCKS[index])
    wrapped = "async def __example__():\n" + textwrap.indent(code, "    ") + (
        "\n    return locals()\n")
    exec(compile(wrapped, f"<seed 000 example {index}>", "exec"), seed_namespace)
    values = await seed_namespace["__example__"]()
    result = values.get("result")
    if result is not None:
        assert isinstance(result, grading.EvaluationReport) and result.score is not None
    if "compute_rewards_batch" in values:
        scores = await values["compute_rewards_batch"](["a", "b"], [seed_namespace["rubric"]] * 2)
        assert len(scores) == 2 and all(s is not None for s in scores)
