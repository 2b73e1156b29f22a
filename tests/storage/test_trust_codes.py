"""The trust report's numpy codes (trust_frame, trust_samples, trust_panels) against the
per-(response, criterion) Python computation they replaced (tests/storage/trust_reference),
on random verdicts and samples stored in a real database: binary, rating and category
criteria (with an NA option), failed samples, CANNOT_ASSESS, samples lists shorter than the
run asked, rows asked once, verdicts a viewer may not see, responses outside the frame, and
panels of every rule over members with their own samples and members whose samples are runs.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from grading.types import Verdict
from storage.services import agreement, datasets, panels, rubrics, runs, trust_panels
from storage.services import trust_samples as samples_module
from storage.services.grade_records import NewGrade, record_grades
from storage.services.trust_frame import code_matrix, make_frame, seen_of
from storage.services.trust_reads import read, sample_groups
from tests.actors import ADMIN
from tests.kinds import LIKERT, MIXED, judge_report
from tests.storage import trust_reference

RESPONSES = 40
ANSWERS = [
    ["MET", "UNMET"],  # accurate
    [o.label for o in LIKERT],  # clarity
    ["formal", "casual", "no text"],  # tone ("no text" is NA)
]
ODD = ["CANNOT_ASSESS", None, ""]  # a sample that abstained, failed, or said nothing


def _sample(rng: random.Random, j: int) -> str | None:
    return rng.choice(ODD) if rng.random() < 0.12 else rng.choice(ANSWERS[j])


def _run(sessions, rng, version, dataset_id: int, ids: list[int], model: str,
         samples: int = 1) -> int:
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset_id,
                          grader="per_criterion", model=model, actor=ADMIN,
                          settings={"extra": {"samples": samples}} if samples > 1 else None)
    grades = []
    for rid in ids:
        choices = [rng.choice(ANSWERS[0] + ["CANNOT_ASSESS"]), *(
            rng.choice(ANSWERS[j]) for j in (1, 2))]
        report = judge_report(choices, MIXED)
        items = list(report.report)
        for j, item in enumerate(items):
            update: dict = {}
            if samples > 1 and rng.random() > 0.1:  # else: this row was asked once
                length = samples if rng.random() > 0.1 else rng.randint(1, samples - 1)
                update["samples"] = tuple(_sample(rng, j) for _ in range(length))
            if j == 0 and rng.random() < 0.05:
                update.update(verdict=None, error="the judge failed")
            items[j] = item.model_copy(update=update)
        grades.append(NewGrade(rid, report.model_copy(update={"report": items})))
    record_grades(sessions, run.id, grades)
    runs.start_run(sessions, run.id, worker="seed")
    runs.finish_run(sessions, run.id)
    return run.id


@pytest.fixture
def world(sessions):
    rng = random.Random(23)
    version = rubrics.create_rubric(sessions, "Codes", MIXED, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "Codes answers", responses=[
        {"id": f"c{i}", "query": f"question {i}", "text": "word " * rng.randint(5, 80)}
        for i in range(RESPONSES)], actor=ADMIN)
    ids = [r.id for r in datasets.list_responses(sessions, dataset.id, limit=None)]
    made = {
        "s3": _run(sessions, rng, version, dataset.id, ids, "openai/sampled", samples=3),
        "s2": _run(sessions, rng, version, dataset.id, ids, "openai/twice", samples=2),
        "a1": _run(sessions, rng, version, dataset.id, ids, "openai/judge-a"),
        "a2": _run(sessions, rng, version, dataset.id, ids, "openai/judge-a"),
        "a3": _run(sessions, rng, version, dataset.id, ids, "openai/judge-a"),
        "b": _run(sessions, rng, version, dataset.id, ids, "openai/judge-b"),
    }
    made_panels = [
        panels.create_panel(sessions, run_ids=[made["s3"], made["a1"]], rule="majority",
                            actor=ADMIN),
        panels.create_panel(sessions, run_ids=[made["s3"], made["s2"], made["a2"]],
                            rule="unanimous", actor=ADMIN),
        panels.create_panel(sessions, run_ids=[made["a1"], made["s2"]], rule="any",
                            actor=ADMIN),
        panels.create_panel(sessions, run_ids=[made["s3"], made["a3"], made["s2"]],
                            rule="weighted", weights=[1.0, 2.0, 1.5], actor=ADMIN),
        panels.create_panel(sessions, run_ids=[made["a1"], made["b"]], rule="majority",
                            actor=ADMIN),
    ]
    report = agreement.agreement_report(sessions, version.id, dataset.id)
    return report, made, made_panels, ids


def _views(data, rng: random.Random):
    """The data as seen in full, and with a fifth of every source's verdicts hidden."""
    hidden = dataclasses.replace(data, verdicts={
        key: {k: v for k, v in verdicts.items() if rng.random() > 0.2}
        for key, verdicts in data.verdicts.items()})
    return [data, hidden]


def _frames(data, reads, rng: random.Random):
    """A frame over every response, and one over a random part of them."""
    part = {rid: n for rid, n in reads.lengths.items() if rng.random() > 0.3}
    return [make_frame(data.criteria, reads.lengths), make_frame(data.criteria, part)]


def test_verdict_codes_match_the_python_computation(sessions, world):
    report, _made, _panels, _ids = world
    reads = read(sessions, report)
    rng = random.Random(3)
    for data in _views(report.data, rng):
        for frame in _frames(data, reads, rng):
            for key, verdicts in data.verdicts.items():
                assert np.array_equal(code_matrix(verdicts, frame),
                                      trust_reference.code_matrix(verdicts, frame)), key
                present = np.zeros((len(frame.positions), len(frame.columns)), dtype=bool)
                for rid, cid in verdicts:
                    if rid in frame.positions and cid in frame.columns:
                        present[frame.positions[rid], frame.columns[cid]] = True
                assert np.array_equal(seen_of(data, frame, key), present), key


def test_a_runs_own_samples_code_as_before(sessions, world):
    report, made, _panels, _ids = world
    reads = read(sessions, report)
    with sessions() as session:
        old = trust_reference.within_samples(session, list(made.values()))
    assert set(reads.within) == set(old) == {made["s3"], made["s2"]}
    rng = random.Random(5)
    for data in _views(report.data, rng):
        for frame in _frames(data, reads, rng):
            for run_id, stored in reads.within.items():
                count, choices = old[run_id]
                assert stored.count == count
                key = f"run:{run_id}"
                new = samples_module.stack_within(frame, seen_of(data, frame, key), stored)
                before = trust_reference.stack_choices(frame, data.verdicts.get(key, {}),
                                                       count, choices)
                assert np.array_equal(new, before), run_id
                measured = (new >= 0).all(axis=2).sum()
                assert 0 < measured < len(frame.positions) * len(frame.columns)


@pytest.mark.parametrize("tie_rule", ["undecided", "lower_score"])
def test_a_panels_samples_code_as_before(sessions, world, tie_rule):
    report, made, made_panels, _ids = world
    reads = read(sessions, report)
    groups = sample_groups(report, reads.replayed)
    with sessions() as session:
        old = trust_reference.within_samples(session, list(made.values()))
    rng = random.Random(7)
    measured = 0
    for data in _views(report.data, rng):
        for frame in _frames(data, reads, rng):
            for made_panel in made_panels:
                panel = dataclasses.replace(panels.get_panel(sessions, made_panel.id),
                                            tie_rule=tie_rule)
                key = f"panel:{panel.id}"
                count, _basis, new = trust_panels.panel_codes(data, frame, reads, groups,
                                                              key, panel)
                before_count, before = trust_reference.panel_codes(data, frame, old, groups,
                                                                   key, panel)
                assert count == before_count
                if before is None:
                    assert new is None
                    continue
                assert np.array_equal(new, before), (panel.rule, panel.id)
                measured += int((new >= 0).all(axis=2).sum())
    assert measured > 100


def test_distinct_vote_rows_by_numbers_and_by_numpys_row_sort_agree():
    rng = np.random.default_rng(1)
    for size, members in [(4, 3), (9, 7)]:  # 4**3 fits the table of flags; 9**7 does not
        table = rng.integers(0, size, size=(500, members), dtype=np.int32)
        distinct, inverse = trust_panels._distinct_rows(table, size)
        assert np.array_equal(np.asarray(distinct)[inverse], table)
        assert len(distinct) == len({tuple(row) for row in table.tolist()})


def test_a_verdict_and_its_label_text_are_one_vote():
    """A run's verdicts are Verdict members and its stored samples plain text: the same
    choice either way, coded once (as the reference's dict lookups saw them)."""
    votes = trust_panels._Votes()
    assert votes.code(Verdict.MET) == votes.code("MET") != votes.code(None) == 0
