"""Samples per criterion after something went wrong, against the fake provider over real
HTTP: a sample whose call failed transiently is asked again in the next pass (the samples
that answered replay from the cache, none is paid twice), and a run killed mid-way resumes
with every grade holding all its samples."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections import Counter

from sqlalchemy import func, select

from grading.types import Verdict
from storage import models as m
from storage.engine import create_db_engine, make_session_factory
from storage.services import runs
from tests.fake_provider import Reply
from tests.fault_provider import fault_provider, fault_provider_server, wait_until
from tests.jobs.helpers import (
    CRITERIA,
    RUBRIC_YAML,
    cli_command,
    make_dataset,
    make_rubric,
    make_run,
    run_now,
    sampled_judge,
)

__all__ = ["fault_provider", "fault_provider_server"]


def test_a_sample_that_failed_transiently_is_asked_again_and_none_is_paid_twice(
        sessions, fake_provider):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions, 2)
    accurate, cites, harmful = (c.requirement for c in CRITERIA)
    votes = {accurate: ["MET", "UNMET", "MET"], cites: ["UNMET"] * 3,
             harmful: ["UNMET", "MET", "MET"]}
    fake_provider.enqueue(*[Reply(status=503, error_message="overloaded")] * 4)
    fake_provider.default = sampled_judge(lambda key, k: (votes[key[1]] + ["MET"] * 9)[k])
    run = make_run(sessions, version.id, dataset.id, fake_provider.api_base, samples=3,
                   transport_retries=0, retry_passes=3, pass_delay=0.2)

    result = run_now(sessions, run.id)

    assert (result.status, result.graded, result.failed) == ("done", 2, 0)
    # 2 responses x 3 criteria x 3 samples answered once each, plus the 4 refused calls
    assert fake_provider.requests == 2 * 3 * 3 + 4
    for grade in runs.list_grades(sessions, run.id):
        got = {c.position: c for c in grade.criteria}
        assert [Counter(got[i].samples) for i in range(3)] == [
            {"MET": 2, "UNMET": 1}, {"UNMET": 3}, {"MET": 2, "UNMET": 1}]
        assert [got[i].verdict for i in range(3)] == [Verdict.MET, Verdict.UNMET, Verdict.MET]



def test_a_run_with_samples_killed_mid_way_resumes_with_every_sample(tmp_path, fault_provider):
    (tmp_path / "rubric.yaml").write_text(RUBRIC_YAML)
    (tmp_path / "r.csv").write_text("id,text\n" + "".join(
        f"r{i},answer number {i}\n" for i in range(30)))
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    command = cli_command("grade", "--rubric", str(tmp_path / "rubric.yaml"), "--responses",
                   str(tmp_path / "r.csv"), "--grader", "per-criterion", "--model",
                   "openai/fake-judge", "--api-base", fault_provider.api_base, "--db", db,
                   "--concurrency", "4", "--samples", "3", "--temperature", "0.7")
    env = {**os.environ, "RUBRIC_WORKBENCH_API_KEY": "k"}
    fault_provider.latency = 0.05
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sessions = make_session_factory(create_db_engine(db))

    def stored() -> int:
        with contextlib.suppress(Exception), sessions() as session:
            return session.scalar(select(func.count()).select_from(m.GradeRow)) or 0
        return 0

    assert wait_until(lambda: stored() >= 5, timeout=90)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    asked_before = fault_provider.requests

    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)

    assert second.returncode == 0, second.stderr
    assert "resuming run(s) 1" in second.stderr
    [run] = runs.list_runs(sessions)
    grades = runs.list_grades(sessions, run.id)
    assert (run.status, len(grades)) == ("done", 30)
    criteria = len(RUBRIC_YAML.split("requirement:")) - 1
    assert all(len(c.samples) == 3 and None not in c.samples
               for g in grades for c in g.criteria)
    assert {len(g.criteria) for g in grades} == {criteria}
    # the second process re-asked at most what the kill lost: the calls in flight
    # (concurrency 4) and answers not yet written to the cache (as for one sample)
    assert asked_before < fault_provider.requests <= 30 * criteria * 3 + 8
    sessions.kw["bind"].dispose()
