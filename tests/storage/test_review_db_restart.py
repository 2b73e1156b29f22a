"""Issue 40 item 12: Review's Save and Decide while PostgreSQL restarts. A save that meets a
restart waits for the server (the pool reconnects) and lands; a server that stays away is one
clear sentence (DatabaseUnavailableError), never the driver's error, and nothing is written."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from grading.types import Verdict
from storage import models as m
from storage.errors import DatabaseUnavailableError
from storage.services import reviews, save_retry
from storage.services.reviewers import local_actor
from tests.storage.conftest import postgres_or_fail
from tests.storage.helpers import make_dataset, make_rubric

PG = [pytest.param("postgresql", marks=pytest.mark.postgres)]
ANN, BO, JUDY = local_actor("ann"), local_actor("bo"), local_actor("judy")


@pytest.fixture
def disputed(sessions):
    """Ann and Bo disagree on the first criterion of r0: a dispute to decide."""
    version = make_rubric(sessions)
    _dataset, responses = make_dataset(sessions, count=3)
    criterion = version.criteria[0].id
    for actor, verdict in ((ANN, Verdict.MET), (BO, Verdict.UNMET)):
        reviews.set_human_verdict(sessions, actor=actor, response_id=responses[0].id,
                                  criterion_id=criterion, verdict=verdict)
    return responses, criterion


def _count(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.HumanVerdictRow))


@pytest.mark.parametrize("backend", PG, indirect=True)
def test_save_and_decide_while_postgresql_is_down_are_one_sentence(
        sessions, disputed, _postgres, monkeypatch):
    server = postgres_or_fail(_postgres)
    responses, criterion = disputed
    before = _count(sessions)
    monkeypatch.setattr(save_retry, "UNREACHABLE_DEADLINE_S", 1.0)
    server.pg_ctl_run("stop", "-m", "fast")
    try:
        with pytest.raises(DatabaseUnavailableError) as saved:
            reviews.save_review(sessions, actor=ANN, response_id=responses[1].id,
                                verdicts={criterion: (Verdict.MET, "")})
        with pytest.raises(DatabaseUnavailableError) as decided:
            reviews.adjudicate(sessions, actor=JUDY, response_id=responses[0].id,
                               criterion_id=criterion, verdict=Verdict.MET,
                               expected_current_id=None)
    finally:
        server.pg_ctl_run("start")
    for caught in (saved, decided):
        text = str(caught.value)
        assert text == ("the database server cannot be reached (restarting or down); "
                        "nothing was saved — try again in a moment"), text
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert _count(sessions) == before  # nothing half-written; the server is back
    reviews.adjudicate(sessions, actor=JUDY, response_id=responses[0].id,
                       criterion_id=criterion, verdict=Verdict.MET, expected_current_id=None)
    assert _count(sessions) == before + 1


@pytest.mark.parametrize("backend", PG, indirect=True)
def test_saves_and_decides_during_a_postgresql_restart_all_land(sessions, disputed, _postgres):
    server = postgres_or_fail(_postgres)
    responses, criterion = disputed
    before = _count(sessions)
    errors: list[BaseException] = []
    done = threading.Event()

    def restart() -> None:
        try:
            server.pg_ctl_run("restart", "-m", "fast")
        finally:
            done.set()

    restarter = threading.Thread(target=restart)
    restarter.start()
    saves = 0
    try:
        while not done.is_set() or saves < 4:  # saves before, during and after the restart
            verdict = Verdict.MET if saves % 2 else Verdict.UNMET
            try:
                reviews.save_review(sessions, actor=ANN, response_id=responses[1].id,
                                    verdicts={criterion: (verdict, f"save {saves}")})
                reviews.adjudicate(sessions, actor=JUDY, response_id=responses[0].id,
                                   criterion_id=criterion, verdict=verdict)
            except Exception as exc:  # the test reports what came out
                errors.append(exc)
                break
            saves += 1
    finally:
        restarter.join(120)
    assert errors == []
    assert _count(sessions) == before + 2 * saves
