"""``rubric-workbench grade --shuffle-options``: each response's multi-choice options are
shown in its own order (recorded with the grade, graded over litellm's HTTP path against the
fake provider); with rubric-as-judge, or a rubric without options, the flag is refused
before anything is stored."""

from __future__ import annotations

import re

from storage.engine import open_database
from storage.services import runs
from tests.jobs.helpers import grade_by_cli

RUBRIC = """\
- name: accurate
  requirement: States the dose correctly
  weight: 10
- name: clarity
  requirement: How clear is the answer?
  weight: 5
  options:
    - {label: Poor, value: 0}
    - {label: Fair, value: 0.25}
    - {label: Good, value: 0.75}
    - {label: Great, value: 1}
"""
BINARY = """\
- name: accurate
  requirement: States the dose correctly
  weight: 10
"""


def _grade(tmp_path, fake, *extra: str, rubric: str = RUBRIC,
           grader: str = "per-criterion") -> int:
    return grade_by_cli(tmp_path, fake, *extra, rubric=rubric, grader=grader,
                        responses="text\n" + "".join(f"answer {i}\n" for i in range(8)))


def _shown(prompt: str) -> list[str]:
    return re.findall(r"\b(Poor|Fair|Good|Great)\b", prompt[prompt.index("How clear"):])


def test_shuffle_options_shows_and_records_each_responses_own_order(tmp_path, fake_provider):
    assert _grade(tmp_path, fake_provider, "--shuffle-options") == 0
    sessions = open_database(f"sqlite:///{tmp_path / 'cli.db'}")
    [run] = runs.list_runs(sessions)
    assert run.settings.shuffle_options
    orders = set()
    for grade in runs.list_grades(sessions, run.id):
        accurate, clarity = grade.criteria
        assert accurate.shuffle_order is None  # binary: nothing to shuffle
        # recorded for every response, the rubric's own order too when the shuffle drew it:
        # the position effect counts every shuffled choice
        order = clarity.shuffle_order
        assert order is not None and sorted(order) == [0, 1, 2, 3]
        orders.add(order)
        # the fake judge picks the first option it was shown: the recorded order says which
        assert clarity.option == ["Poor", "Fair", "Good", "Great"][order[0]]
    assert len(orders) > 2
    prompts = [b["messages"][-1]["content"] for b in fake_provider.bodies
               if "How clear" in b["messages"][-1]["content"]]
    assert len({tuple(_shown(p)[:4]) for p in prompts}) > 1


def test_without_the_flag_nothing_is_shuffled(tmp_path, fake_provider):
    assert _grade(tmp_path, fake_provider) == 0
    sessions = open_database(f"sqlite:///{tmp_path / 'cli.db'}")
    [run] = runs.list_runs(sessions)
    assert not run.settings.shuffle_options
    assert all(c.shuffle_order is None for g in runs.list_grades(sessions, run.id)
               for c in g.criteria)


def test_shuffle_options_with_rubric_as_judge_is_refused_before_anything_is_stored(
        tmp_path, fake_provider, capsys):
    assert _grade(tmp_path, fake_provider, "--shuffle-options",
                  grader="rubric-as-judge") == 2
    assert "--shuffle-options does not apply to --grader rubric-as-judge" in (
        capsys.readouterr().err)
    assert runs.list_runs(open_database(f"sqlite:///{tmp_path / 'cli.db'}")) == []
    assert fake_provider.requests == 0


def test_shuffle_options_with_a_rubric_without_options_is_refused(tmp_path, fake_provider,
                                                                  capsys):
    assert _grade(tmp_path, fake_provider, "--shuffle-options", rubric=BINARY) == 2
    assert "none of its criteria has options" in capsys.readouterr().err
    assert runs.list_runs(open_database(f"sqlite:///{tmp_path / 'cli.db'}")) == []
    assert fake_provider.requests == 0
