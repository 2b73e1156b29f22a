"""The members' alpha from the grades' verdict keys (issue 41) equals the alpha recomputed
from every panel grade, on SQLite and PostgreSQL: keyed grades, failed criteria (``?``),
failed grades (``-``), grades not keyed yet (NULL) and option choices; the database's
grouped count runs only for the responses the keys do not tell."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import delete, func, select, update

from storage import models as m
from storage.services import datasets, panel_agreement, panels, runs
from storage.services import member_units as member_units_module
from storage.services.member_units import member_units
from tests.actors import ADMIN
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_panel_decisions import CRITERIA, _report


def _world(sessions, seed: int, members: int):
    rng = random.Random(seed)
    version = make_rubric(sessions, "Mixed", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": f"r{i}", "text": "answer " * (i + 1)} for i in range(24)], actor=ADMIN)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(members)]
    for run_id in judges:
        for response in datasets.list_responses(sessions, dataset.id, limit=None):
            if rng.random() < 0.9:
                runs.record_grade(sessions, run_id, response.id, _report(rng))
    panel = panels.create_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN)
    return version, judges, panel


@pytest.mark.parametrize(("seed", "members"), [(1, 3), (2, 4), (3, 5)])
def test_the_members_alpha_from_the_keys_equals_the_recomputed_one(sessions, seed, members):
    _version, _judges, panel = _world(sessions, seed, members)
    found = panel_agreement.member_agreement(sessions, panel.id)
    assert found == panel_agreement.recounted_agreement(sessions, panel.id)
    assert any(a.alpha is not None and a.alpha != 1 for a in found)
    with sessions() as session:  # some keys do not tell every verdict: a failed criterion
        assert session.scalar(select(func.count()).where(m.GradeRow.verdict_key == "?"))

    with sessions.begin() as session:  # grades not keyed yet (before rebuild-verdict-keys)
        session.execute(update(m.GradeRow).where(m.GradeRow.id % 3 == 0)
                        .values(verdict_key=None))
    assert panel_agreement.member_agreement(sessions, panel.id) == found


def test_grades_read_a_part_at_a_time_give_the_same_alpha(sessions, monkeypatch):
    """At 100,000 responses the members' grades are read and made arrays 20,000 at a time
    (issue 41: held as rows they took ~170 MB): parts of 7 give the alpha of one part."""
    _version, _judges, panel = _world(sessions, 5, 3)
    whole = panel_agreement.member_agreement(sessions, panel.id)
    monkeypatch.setattr(member_units_module, "ROWS_AT_A_TIME", 7)
    assert panel_agreement.member_agreement(sessions, panel.id) == whole
    assert whole == panel_agreement.recounted_agreement(sessions, panel.id)


def test_only_the_responses_the_keys_do_not_tell_are_counted_by_the_database(sessions):
    version, judges, _panel = _world(sessions, 4, 3)
    criteria = [c.id for c in version.criteria]
    binary = [c.id for c in version.criteria if c.options is None]
    with sessions.begin() as session:  # every key tells: the grouped query is not asked
        partial = select(m.GradeRow.id).where(m.GradeRow.verdict_key == "?")
        session.execute(delete(m.GradeCriterionRow).where(
            m.GradeCriterionRow.grade_id.in_(partial)))
        session.execute(delete(m.GradeRow).where(m.GradeRow.verdict_key == "?"))
    asked = []

    def units_query(members):
        asked.append(members)
        return panel_agreement.units_query(members)

    with sessions() as session:
        keyed = member_units(session, judges, criteria, binary, units_query)
        assert asked == []
        session.execute(update(m.GradeRow).where(m.GradeRow.id % 2 == 0)
                        .values(verdict_key=None))
        mixed = member_units(session, judges, criteria, binary, units_query)
        assert asked == [judges]
        session.execute(update(m.GradeRow).values(verdict_key=None))
        counted = member_units(session, judges, criteria, binary, units_query)
    assert keyed == mixed == counted
    assert any(units.disagreeing for units in keyed.values())
