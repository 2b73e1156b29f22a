"""A panel's members' alpha kept in the database (storage.services.member_alpha_store, issue
41): computed and stored once, read back by another process as the very figures computed
now; computed again when a member's grade lands (the members' stamp moves) or it was stored
in another format; a writer holding SQLite's lock does not fail the read. SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from grading.types import ScoringSettings, Verdict
from storage import models as m
from storage.engine import create_db_engine, make_session_factory
from storage.services import datasets, member_alpha_store, panel_agreement, panels, runs
from tests.storage.helpers import CRITERIA, Calls, judge_report
from tests.storage.test_trust_counted import _world


def _panel(sessions, seed: int):
    version, dataset = _world(sessions, seed)
    found = panels.list_panels(sessions, dataset_id=dataset.id, rubric_version_id=version.id)
    return found[0]


def _kept(sessions, panel_id: int):
    return member_alpha_store.kept_member_agreement(
        sessions, panel_id, member_alpha_store.current_stamp(sessions, panel_id))


def _stored(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.MemberAlphaRow))


@pytest.mark.parametrize("seed", [1, 2])
def test_a_new_process_reads_the_stored_alpha_as_the_alpha_computed_now(
        sessions, db_url, seed, monkeypatch):
    panel = _panel(sessions, seed)
    made = _kept(sessions, panel.id)
    assert _stored(sessions) == 1
    other = make_session_factory(create_db_engine(db_url))
    counted = Calls(monkeypatch, panel_agreement, "member_agreement")
    read = _kept(other, panel.id)
    assert counted.calls == 0  # read back, not computed again
    monkeypatch.undo()
    fresh = panel_agreement.member_agreement(other, panel.id)
    assert read == made == fresh and repr(read) == repr(fresh)
    assert [type(a.alpha) for a in read] == [type(a.alpha) for a in fresh]
    assert any(a.alpha is not None and a.units > 0 for a in read)
    other.kw["bind"].dispose()


def test_a_members_grade_landing_moves_the_stamp_and_the_stale_alpha_is_never_used(
        sessions, monkeypatch):
    panel = _panel(sessions, 3)
    before = member_alpha_store.current_stamp(sessions, panel.id)
    stale = _kept(sessions, panel.id)
    member = panel.members[0].run.id
    with sessions() as session:
        graded = set(session.scalars(select(m.GradeRow.response_id)
                                     .where(m.GradeRow.run_id == member)))
    ungraded = [r for r in datasets.list_responses(sessions, panel.dataset_id, limit=None)
                if r.id not in graded]
    for response in ungraded:  # every one the member left: its answers move every alpha
        runs.record_grade(sessions, member, response.id, judge_report(
            CRITERIA, [Verdict.UNMET] * len(CRITERIA), ScoringSettings(), response.output))

    moved = member_alpha_store.current_stamp(sessions, panel.id)
    assert moved != before
    fresh = panel_agreement.member_agreement(sessions, panel.id)
    assert stale != fresh  # the stale figures would show
    counted = Calls(monkeypatch, panel_agreement, "member_agreement")
    # a caller still holding the old stamp: the figures stored at it are not used
    assert member_alpha_store.kept_member_agreement(sessions, panel.id, before) == fresh
    assert counted.calls == 1
    assert member_alpha_store.kept_member_agreement(sessions, panel.id, moved) == fresh
    assert counted.calls == 2
    assert member_alpha_store.kept_member_agreement(sessions, panel.id, moved) == fresh
    assert counted.calls == 2 and _stored(sessions) == 1  # the new ones stored, read back


def test_figures_computed_while_a_members_grade_lands_are_shown_but_not_kept(
        sessions, monkeypatch):
    panel = _panel(sessions, 5)
    stamp = member_alpha_store.current_stamp(sessions, panel.id)
    member = panel.members[0].run.id
    with sessions() as session:
        graded = set(session.scalars(select(m.GradeRow.response_id)
                                     .where(m.GradeRow.run_id == member)))
    response = next(r for r in datasets.list_responses(sessions, panel.dataset_id, limit=None)
                    if r.id not in graded)
    compute = panel_agreement.member_agreement
    before = compute(sessions, panel.id)

    def grade_lands_meanwhile(sessions_, panel_id):
        found = compute(sessions_, panel_id)
        runs.record_grade(sessions, member, response.id, judge_report(
            CRITERIA, [Verdict.UNMET] * len(CRITERIA), ScoringSettings(), response.output))
        return found

    monkeypatch.setattr(panel_agreement, "member_agreement", grade_lands_meanwhile)
    shown = member_alpha_store.kept_member_agreement(sessions, panel.id, stamp)
    monkeypatch.undo()
    assert shown == before  # shown to the caller all the same
    assert member_alpha_store.current_stamp(sessions, panel.id) != stamp
    # not stored under the stamp read before they were computed: they are not that stamp's
    assert _stored(sessions) == 0


def test_figures_stored_in_another_format_are_computed_again(sessions, monkeypatch):
    panel = _panel(sessions, 4)
    made = _kept(sessions, panel.id)
    with sessions.begin() as session:
        session.execute(update(m.MemberAlphaRow).values(stamp=m.MemberAlphaRow.stamp + " "))
    counted = Calls(monkeypatch, panel_agreement, "member_agreement")
    assert _kept(sessions, panel.id) == made
    assert counted.calls == 1
    assert _kept(sessions, panel.id) == made
    assert counted.calls == 1


def test_a_database_locked_by_a_writer_does_not_fail_the_read(sessions, db_url, monkeypatch):
    if not db_url.startswith("sqlite"):
        pytest.skip("a writer holding the database's lock is SQLite's case")
    import sqlite3

    from sqlalchemy.engine import make_url

    from storage import engine as engine_module

    panel = _panel(sessions, 5)
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    page = make_session_factory(create_db_engine(db_url, connect_args={"timeout": 0.2}))
    counted = Calls(monkeypatch, panel_agreement, "member_agreement")
    writer = sqlite3.connect(make_url(db_url).database, timeout=5, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        while_locked = _kept(page, panel.id)
        assert counted.calls == 1 and while_locked
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert _stored(sessions) == 0
    assert _kept(page, panel.id) == while_locked
    assert counted.calls == 2 and _stored(sessions) == 1
    assert _kept(page, panel.id) == while_locked
    assert counted.calls == 2
    page.kw["bind"].dispose()
