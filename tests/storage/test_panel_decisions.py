"""Judge panels' decisions stored when their members' grades land (issue 41), on SQLite and
PostgreSQL: after every step of a random history (members grading in any order, failing
whole or on a criterion, failing transiently and graded again, abstaining, choosing options
and NA options; panels of every rule made before, during and after the grading; a member
still grading; a panel stored under the old tie rule) the kept tables equal a rebuild from
the grades row for row, and the panel's grades read from them equal the recomputation from
the members' grades, field for field."""

from __future__ import annotations

import random

import pytest

from grading.options import MultiChoiceVerdict
from grading.types import Criterion, CriterionReport, EvaluationReport, ScoringSettings
from grading.types import Verdict as V
from storage import models as m
from storage.cli import main as cli_main
from storage.services import (
    blindness,
    datasets,
    panel_agreement,
    panel_results,
    panel_upkeep,
    panels,
    reviews,
    runs,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_concurrency import _together
from tests.storage.test_panels import stored_before_the_tie_rule

CRITERIA = [*MIXED,
            Criterion(name="cites", requirement="Cites a source", weight=5),
            Criterion(name="harmful", requirement="Recommends a harmful action", weight=-8)]
PANELS = [("majority", [0, 1, 2], None), ("weighted", [0, 1, 2, 3], [2.0, 1.0, 1.0, 0.5]),
          ("unanimous", [1, 3], None), ("any", [0, 3], None), ("majority", [2, 3], None),
          ("majority", [0, 1, 2, 3], None)]


def _choice(rng: random.Random, criterion: Criterion) -> str | None:
    if rng.random() < 0.1:
        return None  # the judge failed on this criterion
    if criterion.options is None:
        return rng.choice(["MET", "MET", "UNMET", "UNMET", "CANNOT_ASSESS"])
    return rng.choice([o.label for o in criterion.options])


def _report(rng: random.Random) -> EvaluationReport:
    if rng.random() < 0.08:
        return EvaluationReport(score=None, error="the judge's answer could not be parsed")
    items = []
    chosen = [_choice(rng, c) for c in CRITERIA]
    for criterion, choice in zip(CRITERIA, chosen, strict=True):
        base = criterion.model_dump()
        if choice is None:
            items.append(CriterionReport(**base, error="no answer"))
        elif criterion.options is None:
            items.append(CriterionReport(**base, verdict=V(choice), reason="why"))
        else:
            index = criterion.find_option_by_label(choice)
            option = criterion.options[index]
            items.append(CriterionReport(**base, reason="why", multi_choice_verdict=(
                MultiChoiceVerdict(selected_index=index, selected_label=option.label,
                                   value=option.value, na=option.na))))
    failed = any(c is None for c in chosen)
    return EvaluationReport(score=None if failed else 0.5, error="failed" if failed else None,
                            report=items,
                            completion_cost=None if rng.random() < 0.05 else 0.002)


def _check(sessions, panel_ids, responses) -> None:
    """The kept rows equal a rebuild; the stored reads equal the recomputation."""
    _count, changed = panel_upkeep.rebuild_panels(sessions, actor=ADMIN)
    assert changed == 0
    subset = [r.id for r in responses[::3]]
    for panel_id in panel_ids:
        assert panels.panel_grades(sessions, panel_id) == panels.recomputed_grades(
            sessions, panel_id)
        assert panels.panel_grades(sessions, panel_id, subset) == panels.recomputed_grades(
            sessions, panel_id, subset)
        assert panel_agreement.member_agreement(
            sessions, panel_id) == panel_agreement.recounted_agreement(sessions, panel_id)
    version = panels.get_panel(sessions, panel_ids[0]).rubric_version_id if panel_ids else 0
    where = {"dataset_id": responses[0].dataset_id, "rubric_version_id": version,
             "panel_ids": panel_ids}
    for sight in (blindness.EVERYTHING, blindness.as_reviewer("ana")):
        assert panel_results.panel_columns(sessions, **where, sight=sight) == (
            panel_results.recomputed_columns(sessions, **where, sight=sight))


@pytest.mark.parametrize("seed", [1, 2])
def test_stored_panel_decisions_equal_a_rebuild_and_the_recomputation(sessions, seed):
    rng = random.Random(seed)
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": "answer " * (i + 1)} for i in range(10)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(4)]
    todo = [(run_id, r.id) for run_id in judges for r in responses]
    rng.shuffle(todo)
    todo = todo[:int(len(todo) * 0.85)]  # some responses are never graded by some members
    made: list[int] = []
    plans = list(PANELS)
    old_rule = None
    for step, (run_id, response_id) in enumerate(todo):
        if plans and (step == 0 or rng.random() < 0.08):
            rule, members, weights = plans.pop(0)
            panel = panels.create_panel(sessions, run_ids=[judges[i] for i in members],
                                        rule=rule, weights=weights, actor=ADMIN,
                                        scoring=ScoringSettings(length_penalty={
                                            "free_budget": 3, "max_cap": 5,
                                            "penalty_at_cap": 0.3, "penalty_type": "OUTPUT_ONLY"}
                                        ) if rule == "any" else None)
            made.append(panel.id)
            if old_rule is None:  # stored before the one tie rule, as the migration finds it
                old_rule = panel.id
                stored_before_the_tie_rule(sessions, panel.id)
                panel_upkeep.rebuild_panels(sessions, actor=ADMIN)
        if rng.random() < 0.1:  # failed transiently first, graded again in a later pass
            runs.record_grade(sessions, run_id, response_id, EvaluationReport(
                score=None, error="HTTP 503"), transient=True)
            if step % 3 == 0:
                _check(sessions, made, responses)
        runs.record_grade(sessions, run_id, response_id, _report(rng))
        if rng.random() < 0.15:  # people's verdicts change the panel's effective scores
            criterion = rng.choice(version.criteria)
            choice = (rng.choice(["MET", "UNMET"]) if criterion.options is None
                      else rng.choice([o.label for o in criterion.options]))
            reviews.set_human_verdict(sessions, actor=local_actor(rng.choice(["ana", "bo"])),
                                      response_id=response_id, criterion_id=criterion.id,
                                      verdict=choice)
        if step % 10 == 0:
            _check(sessions, made, responses)
    for rule, members, weights in plans:
        made.append(panels.create_panel(sessions, run_ids=[judges[i] for i in members],
                                        rule=rule, weights=weights, actor=ADMIN).id)
    _check(sessions, made, responses)
    # a member still grading: the responses it has not graded read as pending
    runs.start_run(sessions, judges[1])
    for run_id in (judges[0], judges[2]):
        runs.start_run(sessions, run_id)
        runs.finish_run(sessions, run_id)
    _check(sessions, made, responses)
    assert any(g.pending_members for g in panels.panel_grades(sessions, made[0]))
    assert any(row.decision.tie for pid in made for g in panels.panel_grades(sessions, pid)
               for row in g.criteria)
    assert any(row.decision.option for g in panels.panel_grades(sessions, made[0])
               for row in g.criteria)
    assert any(g.error for g in panels.panel_grades(sessions, made[0]))
    assert {panels.get_panel(sessions, pid).tie_rule for pid in made} == {
        "lower_score", "undecided"}
    alphas = [a for pid in made for a in panel_agreement.member_agreement(sessions, pid)]
    assert any(a.alpha is not None and a.alpha != 1 for a in alphas)


def _world(sessions, members: int = 3, count: int = 4):
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(count)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(members)]
    return responses, judges


def test_members_grading_the_same_responses_at_once_leave_the_decisions_whole(sessions):
    """Each member's grade lands in its own transaction at the same moment: on PostgreSQL
    each would see only its own grade without the response lock, and the last to commit
    would store a decision missing the others'."""
    responses, judges = _world(sessions, members=4, count=5)
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    rng = random.Random(5)
    reports = {(run_id, r.id): _report(rng) for run_id in judges for r in responses}
    for response in responses:
        found = _together(len(judges), lambda i, rid=response.id: runs.record_grade(
            sessions, judges[i], rid, reports[judges[i], rid]))
        assert not [f for f in found if isinstance(f, Exception)], found
    assert panel_upkeep.rebuild_panels(sessions, actor=ADMIN)[1] == 0
    assert all(g.members_graded == 4 for g in panels.panel_grades(sessions, panel.id))
    assert panels.panel_grades(sessions, panel.id) == panels.recomputed_grades(
        sessions, panel.id)


def test_rebuild_panels_command_repairs_the_tables_and_says_so(sessions, db_url, capsys):
    responses, judges = _world(sessions, members=2, count=2)
    rng = random.Random(3)
    for run_id in judges:
        for response in responses:
            runs.record_grade(sessions, run_id, response.id, _report(rng))
    panel = panels.create_panel(sessions, run_ids=judges, rule="any", actor=ADMIN)
    assert cli_main(["rebuild-panels", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == (
        "judge panels' decisions rebuilt: 2 panel grades; they were up to date")
    with sessions.begin() as session:  # a row lost (a bug, a hand edit)
        session.execute(m.PanelGradeRow.__table__.delete().where(
            m.PanelGradeRow.response_id == responses[0].id))
    assert len(panels.panel_grades(sessions, panel.id)) == 1
    assert cli_main(["rebuild-panels", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == (
        "judge panels' decisions rebuilt: 2 panel grades; 1 rows differed from the kept "
        "tables (removed + added)")
    assert panels.panel_grades(sessions, panel.id) == panels.recomputed_grades(
        sessions, panel.id)
    panels.delete_panel(sessions, panel.id, actor=ADMIN)  # its rows go with it
    with sessions() as session:
        assert panel_upkeep.maintained_rows(session) == []


def test_the_stored_panel_reads_use_indexes_not_full_scans(sessions):
    """The panel's rows by their primary key, a pending member's grades by (run, response),
    the members' answers for the alpha by the grades' (run, response) and the verdicts'
    (grade, criterion) keys: no full scan of any of the four tables."""
    from storage.services import panel_reads
    from tests.storage.test_agreement_counts import _full_scans, _plan

    responses, judges = _world(sessions, members=3, count=3)
    rng = random.Random(2)
    for run_id in judges:
        for response in responses:
            runs.record_grade(sessions, run_id, response.id, _report(rng))
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    checks = [
        (panel_reads.grades_query(panel.id), "panel_grades"),
        (panel_reads.verdicts_query(panel.id), "panel_verdicts"),
        (panel_reads.waiting_query(panel.id, judges[:2]), "panel_grades"),
        (panel_agreement.units_query(judges), "grade_criteria"),
    ]
    for query, table in checks:
        plan = _plan(sessions, query)
        assert table in plan, plan
        for name in ("panel_grades", "panel_verdicts", "grades", "grade_criteria"):
            assert not _full_scans(plan, name), plan
