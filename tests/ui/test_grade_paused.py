"""AppTest check of a run its provider breaker paused (issue 40.8): the Grade page says
"paused" and why, and its Resume button queues it again; resumed against a provider that is
back, it grades everything (litellm's HTTP path against the fault provider)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage.config import database_url
from storage.engine import open_database
from storage.services import runs
from tests.actors import ADMIN
from tests.fault_provider import Fault, fault_provider, fault_provider_server
from tests.jobs.helpers import run_now
from tests.storage.helpers import make_dataset, make_rubric
from tests.ui.pages import texts
from tests.ui.seed import APP

__all__ = ["fault_provider", "fault_provider_server"]


@pytest.fixture(autouse=True)
def _environment(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")  # the test runs the runs
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")


def test_a_paused_run_says_why_on_the_grade_page_and_resumes(fault_provider):
    sessions = open_database(database_url())
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, count=4)
    fault_provider.always(Fault(kind="reset"))
    run = runs.create_run(
        sessions, rubric_version_id=version.id, dataset_id=dataset.id, grader="one_shot",
        model="openai/judge-a", actor=ADMIN,
        settings={"api_base": fault_provider.api_base,
                  "extra": {"pause_after_failures": 3, "concurrency": 1,
                            "transport_retries": 0}})
    assert run_now(sessions, run.id).status == "failed"
    assert fault_provider.requests == 3

    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/grade.py").run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert ":orange-badge[paused]" in "\n".join(m.value for m in at.markdown)
    assert "failed 3 calls in a row (connection reset or refused)" in shown
    table = next(f.value for f in at.dataframe if "Status" in f.value.columns)
    assert list(table["Status"]) == ["paused"]
    resume = at.button(key=f"grade_requeue_{run.id}")
    assert resume.label == "Resume" and "probe call" in resume.help
    resume.click().run()
    assert not at.exception
    assert runs.get_run(sessions, run.id).status == "queued"

    fault_provider.always(None)
    assert run_now(sessions, run.id, worker_id="w2").status == "done"
    info = runs.get_run(sessions, run.id)
    assert (info.done_count, info.failed_count, info.error) == (4, 0, None)
