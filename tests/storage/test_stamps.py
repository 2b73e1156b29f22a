"""The stamps cached pages key on (Results' and Agreement's) move whenever a run's grades
change, also when the graded count does not: a transient failure replaced by its grade."""

from __future__ import annotations

from grading.types import EvaluationReport, Verdict
from storage.services import runs
from storage.services.agreement_sources import data_stamp
from storage.services.results import results_stamp
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run
from tests.storage.judges import ScriptedJudge, grade

FAILED = EvaluationReport(score=None, error="HTTP 503 from the provider")


def _stamps(sessions, version, dataset, run):
    return results_stamp(sessions, [run.id]), data_stamp(sessions, version.id, dataset.id)


def test_a_transient_failure_replaced_by_its_grade_moves_both_stamps(sessions):
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=2)
    run = make_run(sessions, version.id, dataset.id)
    judge = ScriptedJudge(CRITERIA, {"r0": [Verdict.MET] * len(CRITERIA)})
    runs.record_grades(sessions, run.id, [runs.NewGrade(responses[0].id, FAILED, 0.1,
                                                         transient=True)])
    before = _stamps(sessions, version, dataset, run)

    report = grade("per_criterion", run.settings, CRITERIA, "[r0] answer", judge)
    runs.record_grades(sessions, run.id, [runs.NewGrade(responses[0].id, report, 0.2)])

    after = _stamps(sessions, version, dataset, run)
    progress = runs.get_run(sessions, run.id)
    assert (progress.done_count, progress.failed_count) == (1, 0)  # the sum stayed at one
    assert before[0] != after[0] and before[1] != after[1]

