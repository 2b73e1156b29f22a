"""AppTest checks of the Compare page's Resume: it queues the comparison for the app's
worker (no thread of the page's own), offers it after a cancel, says so when the app's
worker is off, and a second tab's Resume changes nothing."""

from __future__ import annotations

import threading

from sqlalchemy import func, select

from grading.types import Criterion
from storage import models as m
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.fake_provider import fake_provider, fake_provider_server
from tests.fault_provider import wait_until
from tests.ui.pages import db, open_page, texts

__all__ = ["fake_provider", "fake_provider_server"]

CRITERIA = [Criterion(name="complete", requirement="Covers every step", weight=4)]


def _cancelled_comparison(api_base: str) -> int:
    sessions = db()
    version = rubrics.create_rubric(sessions, "Steps", CRITERIA, actor=ADMIN).id
    ids = [datasets.create_dataset(sessions, name, responses=[
        {"id": f"q{i}", "query": f"Q{i}?", "text": text * i} for i in (1, 2)],
        actor=ADMIN).id for name, text in (("Old", "a "), ("New", "b b "))]
    made = comparisons.create_comparison(
        sessions, rubric_version_id=version, a=Source(ids[0]), b=Source(ids[1]),
        model="openai/judge", settings={"api_base": api_base}, actor=ADMIN)
    comparisons.cancel_comparison(sessions, made.id, actor=ADMIN)
    return made.id


def _resumes() -> int:
    with db()() as session:
        return session.scalar(select(func.count()).select_from(m.AuditEventRow)
                              .where(m.AuditEventRow.action == "resume comparison"))


def test_resume_of_a_cancelled_comparison_queues_it_for_the_apps_worker(
        fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    made = _cancelled_comparison(fake_provider.api_base)
    at = open_page("compare", reviewer="Ada", timeout=60)

    at.button(key=f"compare_resume_{made}").click().run()

    assert not at.exception, at.exception
    assert "the app's worker takes it now" in texts(at)
    assert f"comparison-{made}" not in [t.name for t in threading.enumerate()]
    assert wait_until(lambda: comparisons.get_comparison(db(), made).finished, timeout=60)
    ended = comparisons.get_comparison(db(), made)
    assert (ended.status, ended.done_count) == ("done", 2)
    assert fake_provider.requests == 2 * 1 * 2


def test_with_the_apps_worker_off_resume_queues_and_says_who_judges_it(
        fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")
    made = _cancelled_comparison(fake_provider.api_base)
    at = open_page("compare", reviewer="Ada", timeout=60)

    at.button(key=f"compare_resume_{made}").click().run()

    assert not at.exception, at.exception
    assert "rubric-workbench worker" in texts(at) and "worker is off" in texts(at)
    assert comparisons.get_comparison(db(), made).status == "queued"
    assert f"comparison-{made}" not in [t.name for t in threading.enumerate()]
    assert fake_provider.requests == 0


def test_a_second_tabs_resume_changes_nothing(fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")  # it stays queued
    made = _cancelled_comparison(fake_provider.api_base)
    first = open_page("compare", reviewer="Ada", timeout=60)
    second = open_page("compare", reviewer="Ada", timeout=60)  # shows it cancelled too

    first.button(key=f"compare_resume_{made}").click().run()
    second.button(key=f"compare_resume_{made}").click().run()

    assert not second.exception, second.exception
    assert f"Comparison #{made} is already queued; nothing was started twice" in texts(second)
    assert _resumes() == 1
    assert comparisons.get_comparison(db(), made).status == "queued"
