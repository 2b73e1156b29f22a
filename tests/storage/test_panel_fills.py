"""A new judge panel filled by a worker's job (storage.jobs.panel_fills), not in the request
that makes it, on SQLite and PostgreSQL: until filled it reads as being built and its figures
are refused (never partial); a second tab or worker does not fill it twice; a worker that
dies half way is resumed from its last chunk; members' grades landing during the fill are
in the result; the app's worker loop picks the job up."""

from __future__ import annotations

import asyncio
import random
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from storage import models as m
from storage.jobs import panel_fills
from storage.jobs.worker import Worker
from storage.services import (
    agreement_sources,
    panel_agreement,
    panel_results,
    panel_upkeep,
    panels,
    runs,
)
from tests.actors import ADMIN
from tests.storage.test_concurrency import _together
from tests.storage.test_panel_decisions import _report, _world


def _graded_world(sessions, *, members: int = 3, count: int = 12, share: float = 0.8,
                  seed: int = 4):
    """Members that graded about ``share`` of the responses (each its own random ones)."""
    responses, judges = _world(sessions, members=members, count=count)
    rng = random.Random(seed)
    left = []
    for run_id in judges:
        for response in responses:
            if rng.random() < share:
                runs.record_grade(sessions, run_id, response.id, _report(rng))
            else:
                left.append((run_id, response.id))
    return responses, judges, left, rng


def _later(sessions, judges, **options):
    return panels.ensure_panel(sessions, run_ids=judges, rule="majority", actor=ADMIN,
                               fill="later", **options)


def _whole(sessions, panel_id: int) -> None:
    """Ready, the kept rows equal a rebuild, the reads equal the recomputation."""
    info = panels.get_panel(sessions, panel_id)
    assert info.ready and info.building is None
    assert panel_upkeep.rebuild_panels(sessions, actor=ADMIN)[1] == 0
    assert panels.panel_grades(sessions, panel_id) == panels.recomputed_grades(
        sessions, panel_id)
    assert panel_agreement.member_agreement(
        sessions, panel_id) == panel_agreement.recounted_agreement(sessions, panel_id)


def _fill_row(sessions, panel_id: int) -> m.PanelFillRow | None:
    with sessions() as session:
        return session.get(m.PanelFillRow, panel_id)


def test_a_panel_filled_later_reads_as_being_built_and_its_figures_are_refused(sessions):
    responses, judges, _left, _rng = _graded_world(sessions)
    panel, created = _later(sessions, judges)
    assert created and not panel.ready and panel.building == panels.Building(0, None)
    assert panel.building.words == "waiting for a worker"
    with sessions() as session:  # nothing stored yet: any figure would be partial
        assert panel_upkeep.maintained_rows(session) == []
    where = {"dataset_id": responses[0].dataset_id,
             "rubric_version_id": panel.rubric_version_id}
    for read in (lambda: panels.panel_grades(sessions, panel.id),
                 lambda: panel_agreement.member_agreement(sessions, panel.id),
                 lambda: panel_results.panel_results(sessions, panel.id),
                 lambda: panel_results.panel_columns(sessions, **where,
                                                     panel_ids=[panel.id])):
        with pytest.raises(panels.PanelBuildingError, match=f"P{panel.id} is still being "
                                                            "built"):
            read()
    assert panel_results.panel_sources(sessions, panel.rubric_version_id,
                                       responses[0].dataset_id) == []
    stamp = agreement_sources.data_stamp(sessions, panel.rubric_version_id,
                                         responses[0].dataset_id)
    assert stamp[2] == ()  # the Agreement report reads it once it is whole

    done = panel_fills.fill_panel(sessions, panel.id, worker="w1", chunk=4)
    assert done.status == "filled"
    assert _fill_row(sessions, panel.id) is None
    _whole(sessions, panel.id)
    assert len(panels.panel_grades(sessions, panel.id)) == len(responses)
    assert agreement_sources.data_stamp(sessions, panel.rubric_version_id,
                                        responses[0].dataset_id)[2] == (panel.id,)
    assert [s.panel.id for s in panel_results.panel_sources(
        sessions, panel.rubric_version_id, responses[0].dataset_id)] == [panel.id]


def test_auto_fills_a_small_panel_at_once_and_leaves_a_big_one_to_a_worker(
        sessions, monkeypatch):
    _responses, judges, _left, _rng = _graded_world(sessions)
    small = panels.ensure_panel(sessions, run_ids=judges, rule="any", actor=ADMIN,
                                fill="auto")[0]
    assert small.ready
    monkeypatch.setattr(panels, "FILL_IN_REQUEST_GRADES", 5)
    big = panels.ensure_panel(sessions, run_ids=judges, rule="unanimous", actor=ADMIN,
                              fill="auto")[0]
    assert not big.ready
    assert panel_fills.fill_panel(sessions, big.id, worker="w").status == "filled"
    _whole(sessions, big.id)


def test_a_second_tab_and_a_second_worker_do_not_build_it_twice(sessions):
    _responses, judges, _left, _rng = _graded_world(sessions)
    panel, created = _later(sessions, judges)
    again, created_again = _later(sessions, judges)  # a double click, a second tab
    assert created and not created_again and again.id == panel.id
    with sessions() as session:
        assert panels.building_ids(session) == [panel.id]
    # w1 takes it and is still on it: w2 finds it busy and leaves it
    assert panel_fills.fill_panel(sessions, panel.id, worker="w1", chunk=4,
                                  max_chunks=1).status == "stopped"
    assert panel_fills.fill_panel(sessions, panel.id, worker="w2", chunk=4).status == "busy"
    assert panel_fills.next_fill(sessions) is None  # nobody else is offered it
    row = _fill_row(sessions, panel.id)
    assert (row.claimed_by, row.done, row.total) == ("w1", 4, 12)
    assert panels.get_panel(sessions, panel.id).building.words == "4 of 12 responses combined"
    assert panel_fills.fill_panel(sessions, panel.id, worker="w1").status == "filled"
    assert panel_fills.fill_panel(sessions, panel.id, worker="w2").status == "filled"
    _whole(sessions, panel.id)


def test_a_worker_that_died_half_way_is_resumed_from_its_last_chunk(sessions):
    _responses, judges, _left, _rng = _graded_world(sessions)
    panel, _ = _later(sessions, judges)
    assert panel_fills.fill_panel(sessions, panel.id, worker="w1", chunk=4,
                                  max_chunks=2).status == "stopped"  # then w1 dies
    row = _fill_row(sessions, panel.id)
    assert row.done == 8
    with sessions.begin() as session:  # its heartbeat goes stale
        session.execute(update(m.PanelFillRow).values(
            heartbeat_at=m.utcnow() - timedelta(seconds=panel_fills.STALE_SECONDS + 1)))
    assert panel_fills.next_fill(sessions) == panel.id
    resumed = panel_fills.fill_panel(sessions, panel.id, worker="w2", chunk=4)
    # the last 4 responses and the closing look: not the 8 w1 had done
    assert resumed == panel_fills.FillOutcome("filled", 2)
    _whole(sessions, panel.id)
    # the dead worker's next chunk finds it gone and stops
    assert panel_fills.fill_panel(sessions, panel.id, worker="w1").status == "filled"


def test_a_stopped_worker_releases_the_fill_for_the_next_at_once(sessions):
    _responses, judges, _left, _rng = _graded_world(sessions)
    panel, _ = _later(sessions, judges)
    stop = threading.Event()
    stop.set()
    assert panel_fills.fill_panel(sessions, panel.id, worker="w1",
                                  stop=stop).status == "stopped"
    assert _fill_row(sessions, panel.id).claimed_by is None
    assert panel_fills.next_fill(sessions) == panel.id


def test_grades_landing_during_the_fill_are_in_the_panel(sessions):
    """Members grade responses behind the fill's cursor, ahead of it and never graded
    before, between its chunks: the grade writer's upkeep and the fill each recompute."""
    _responses, judges, left, rng = _graded_world(sessions, count=16, share=0.6)
    panel, _ = _later(sessions, judges)
    assert panel_fills.fill_panel(sessions, panel.id, worker="w1", chunk=3,
                                  max_chunks=2).status == "stopped"
    rng.shuffle(left)
    for step, (run_id, response_id) in enumerate(left):
        runs.record_grade(sessions, run_id, response_id, _report(rng))
        if step % 4 == 0:
            panel_fills.fill_panel(sessions, panel.id, worker="w1", chunk=3, max_chunks=1)
    assert panel_fills.fill_panel(sessions, panel.id, worker="w1",
                                  chunk=3).status == "filled"
    _whole(sessions, panel.id)
    assert {g.members_graded for g in panels.panel_grades(sessions, panel.id)} == {3}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grades_landing_at_the_same_moment_as_a_chunk_are_not_lost(sessions, seed):
    """A chunk and members' grade writers on the same responses at once (PostgreSQL: without
    the chunk's response lock, the chunk could commit a decision read before a grade)."""
    _responses, judges, left, rng = _graded_world(sessions, count=8, share=0.5, seed=seed)
    panel, _ = _later(sessions, judges)
    reports = {key: _report(rng) for key in left}
    writers = left[:5]

    def work(i: int):
        if i == 0:
            return panel_fills.fill_panel(sessions, panel.id, worker="w", chunk=8)
        run_id, response_id = writers[i - 1]
        return runs.record_grade(sessions, run_id, response_id, reports[run_id, response_id])

    found = _together(1 + len(writers), work)
    assert not [f for f in found if isinstance(f, Exception)], found
    assert found[0].status == "filled"
    _whole(sessions, panel.id)


def test_the_workers_loop_fills_a_waiting_panel(sessions):
    _responses, judges, _left, _rng = _graded_world(sessions)
    for run_id in judges:  # graded: nothing for the worker but the panel
        runs.start_run(sessions, run_id)
        runs.finish_run(sessions, run_id)
    panel, _ = _later(sessions, judges)
    worker = Worker(sessions, poll_interval=0.05)
    asyncio.run(worker.run(asyncio.Event(), until_idle=True))
    _whole(sessions, panel.id)
    with sessions() as session:
        assert session.scalars(select(m.PanelFillRow)).all() == []
