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



def test_a_verdict_moves_the_panel_stamp_but_not_the_members_part(sessions):
    """The members' alpha is cached by ``member_stamp``: a person's verdict leaves it, a
    member's new grade moves it (the panel's own stamp moves with both)."""
    from storage.services import panels, reviews
    from storage.services.panel_results import current_member_stamp, member_stamp, panel_stamp
    from storage.services.reviewers import local_actor
    from tests.actors import ADMIN

    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=3)
    made = [make_run(sessions, version.id, dataset.id) for _ in range(2)]
    judge = ScriptedJudge(CRITERIA, {f"r{i}": [Verdict.MET] * len(CRITERIA) for i in range(3)})
    for run in made:
        for response in responses[:2]:
            report = grade("per_criterion", run.settings, CRITERIA,
                           f"[r{response.external_id[1:]}] answer", judge)
            runs.record_grades(sessions, run.id, [runs.NewGrade(response.id, report, 0.1)])
    panel = panels.create_panel(sessions, run_ids=[r.id for r in made], rule="majority",
                                actor=ADMIN)
    before = panel_stamp(sessions, [panel.id])
    # read alone (no count of the responses), the members' part is the same
    assert current_member_stamp(sessions, [panel.id]) == member_stamp(before)

    reviews.set_human_verdict(sessions, actor=local_actor("ana"), response_id=responses[0].id,
                              criterion_id=version.criteria[0].id, verdict="UNMET")
    after_verdict = panel_stamp(sessions, [panel.id])
    assert after_verdict != before
    assert member_stamp(after_verdict) == member_stamp(before)
    assert current_member_stamp(sessions, [panel.id]) == member_stamp(after_verdict)

    report = grade("per_criterion", made[0].settings, CRITERIA, "[r2] answer", judge)
    runs.record_grades(sessions, made[0].id, [runs.NewGrade(responses[2].id, report, 0.1)])
    assert member_stamp(panel_stamp(sessions, [panel.id])) != member_stamp(after_verdict)
    assert current_member_stamp(sessions, [panel.id]) == member_stamp(
        panel_stamp(sessions, [panel.id]))
    assert current_member_stamp(sessions, []) == member_stamp(panel_stamp(sessions, []))


def test_a_verdict_saved_after_deleting_the_newest_ones_moves_the_stamps(sessions):
    """Deleting a rubric deletes its verdicts; when they were the newest, SQLite used to hand
    the next verdict a deleted row's id, so (count, newest id) came back unchanged while the
    other rubric's data had changed (ids are never reused now: migration 0035)."""
    from storage.services import reviews, rubrics
    from storage.services.reviewers import local_actor
    from tests.actors import ADMIN

    kept = make_rubric(sessions, "Kept")
    gone = make_rubric(sessions, "Gone")
    dataset, responses = make_dataset(sessions, count=2)
    run = make_run(sessions, kept.id, dataset.id)
    ana = local_actor("ana")
    reviews.set_human_verdict(sessions, actor=ana, response_id=responses[0].id,
                              criterion_id=kept.criteria[0].id, verdict="MET")
    reviews.set_human_verdict(sessions, actor=ana, response_id=responses[0].id,
                              criterion_id=gone.criteria[0].id, verdict="MET")
    before = _stamps(sessions, kept, dataset, run)
    rubrics.delete_rubric(sessions, gone.rubric_id, confirm=True, delete_human_verdicts=True,
                          actor=ADMIN)

    reviews.set_human_verdict(sessions, actor=ana, response_id=responses[1].id,
                              criterion_id=kept.criteria[0].id, verdict="UNMET")

    after = _stamps(sessions, kept, dataset, run)
    assert before[0] != after[0] and before[1] != after[1]


def test_a_response_added_to_the_dataset_moves_the_results_stamp(sessions):
    """Results lists every response of the dataset (ungraded ones too): one added by
    someone else must show, not wait for the next grade or verdict."""
    from storage.services import datasets
    from tests.actors import ADMIN

    version = make_rubric(sessions)
    dataset, _responses = make_dataset(sessions, count=2)
    other, _ = make_dataset(sessions, count=1, name="Elsewhere")
    run = make_run(sessions, version.id, dataset.id)
    before = results_stamp(sessions, [run.id])
    datasets.add_response(sessions, other.id, "not this run's", actor=ADMIN)
    assert results_stamp(sessions, [run.id]) == before  # another dataset's response
    datasets.add_response(sessions, dataset.id, "a new answer", external_id="r9", actor=ADMIN)
    assert results_stamp(sessions, [run.id]) != before
