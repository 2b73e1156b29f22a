"""YAML alias bombs are refused at once, in time linear in the file; honest reuse still loads."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from grading import Rubric, RubricValidationError
from grading.rubric_io import IgnoredFieldsWarning, load_yaml_text

REPO = Path(__file__).resolve().parents[2]


def _bomb(levels: int, width: int = 9) -> str:
    """``width`` aliases of ``width`` aliases of ... of ``width`` scalars."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]"
              for i in range(1, levels + 1)]
    return "\n".join([*lines, f"criteria: *a{levels}"]) + "\n"


def test_a_five_level_alias_bomb_is_refused_at_once_with_the_line():
    started = time.perf_counter()
    with pytest.raises(RubricValidationError, match=r"at line \d+: its aliases \(\*name\) "
                                                    r"repeat more than 10,000 values"):
        load_yaml_text(_bomb(5))  # 590,490 values from 6 lines
    assert time.perf_counter() - started < 1.0


def test_an_eleven_level_bomb_costs_no_more_than_a_short_file():
    # Hours before; the walk counts each written node once, whatever the aliases repeat.
    code = ("import sys; from grading import Rubric, RubricValidationError\n"
            "try:\n    Rubric.from_yaml(sys.stdin.read())\n"
            "except RubricValidationError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], input=_bomb(11), capture_output=True,
                          text=True, timeout=60, cwd=REPO, env={"PYTHONPATH": str(REPO)})
    assert "repeat more than 10,000 values" in done.stdout, done.stderr
    started = time.perf_counter()
    with pytest.raises(RubricValidationError):
        load_yaml_text(_bomb(40, width=2))  # 2**40 values
    assert time.perf_counter() - started < 1.0


def test_an_alias_inside_its_own_value_is_refused():
    with pytest.raises(RubricValidationError, match="line 1"):
        load_yaml_text("a: &a {b: *a}\n")


def test_a_rubric_that_reuses_a_block_with_aliases_still_loads():
    text = ("defaults: &d {weight: 2}\n"
            "criteria:\n"
            "  - <<: *d\n    name: cites\n    requirement: cites a source\n"
            "  - <<: *d\n    name: polite\n    requirement: is polite\n")
    with pytest.warns(IgnoredFieldsWarning, match="defaults"):
        rubric = Rubric.from_yaml(text)
    assert [(c.name, c.weight) for c in rubric.criteria] == [("cites", 2), ("polite", 2)]


def test_a_large_rubric_without_aliases_is_not_counted_against_the_budget():
    rows = "".join(f"- name: c{i}\n  weight: 1\n  requirement: says {i}\n"
                   for i in range(3_000))  # ~12,000 values, all written out
    assert len(Rubric.from_yaml(rows).criteria) == 3_000
