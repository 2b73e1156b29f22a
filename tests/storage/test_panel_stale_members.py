"""A "Combine as a panel" form (or a panel launch) whose runs were deleted by another tab in
the meantime, on SQLite and PostgreSQL: the missing runs are named, nothing is written, no
foreign-key error escapes; and deleting a dataset or rubric takes its panels with it."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import delete, func, select

from storage import models as m
from storage.errors import ConfirmationRequiredError, NotFoundError
from storage.services import datasets, panels, rubrics
from tests.storage.test_panels import ADMIN, three_judges

__all__ = ["three_judges"]


def _panel_rows(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.PanelRow))


def test_a_run_deleted_after_the_form_was_opened_is_named_and_nothing_is_made(
        sessions, three_judges):
    run_ids = three_judges[3]
    with sessions.begin() as session:  # the other tab's deletion of one member run
        session.execute(delete(m.RunRow).where(m.RunRow.id == run_ids[1]))
    with pytest.raises(NotFoundError) as refused:
        panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    assert str(refused.value) == (
        f"run #{run_ids[1]} no longer exists (deleted since the runs were picked, with their "
        "dataset or rubric); nothing was made: pick the member runs again")
    assert _panel_rows(sessions) == 0


def test_a_deleted_dataset_names_every_missing_run(sessions, three_judges):
    _version, dataset, _responses, run_ids = three_judges
    datasets.delete_dataset(sessions, dataset.id, confirm=True, actor=ADMIN)
    with pytest.raises(NotFoundError, match=(
            "runs " + ", ".join(f"#{r}" for r in run_ids) + " no longer exist ")):
        panels.ensure_panel(sessions, run_ids=run_ids, rule="any", actor=ADMIN)
    assert _panel_rows(sessions) == 0


def test_a_deletion_racing_the_create_is_named_never_a_foreign_key_error(
        sessions, three_judges):
    """The other tab's deletion has begun (its locks held, not committed) when the panel is
    submitted: the create waits, then names the run instead of failing half way."""
    run_ids = three_judges[3]
    other = sessions()
    other.begin()
    other.execute(delete(m.RunRow).where(m.RunRow.id == run_ids[2]))
    outcome: list[BaseException | object] = []

    def submit():
        try:
            outcome.append(panels.create_panel(sessions, run_ids=run_ids, rule="majority",
                                               actor=ADMIN))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=submit)
    thread.start()
    time.sleep(0.5)  # the submit reaches the database while the deletion holds its locks
    other.commit()
    other.close()
    thread.join(timeout=60)
    [result] = outcome
    assert isinstance(result, NotFoundError), repr(result)
    assert f"run #{run_ids[2]} no longer exists" in str(result)
    assert _panel_rows(sessions) == 0


def test_deleting_a_dataset_or_a_rubric_takes_its_panels_with_it(sessions, three_judges):
    version, dataset, _responses, run_ids = three_judges
    panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    panels.create_panel(sessions, run_ids=run_ids[:2], rule="any", actor=ADMIN)
    # The confirmation says the panels go too, before anything is deleted.
    assert datasets.deletion_summary(sessions, dataset.id).panels == 2
    with pytest.raises(ConfirmationRequiredError,
                       match="and the 2 judge panels built on them; confirm"):
        datasets.delete_dataset(sessions, dataset.id, actor=ADMIN)
    assert _panel_rows(sessions) == 2
    summary = datasets.delete_dataset(sessions, dataset.id, confirm=True, actor=ADMIN)
    assert (summary.runs, summary.panels) == (3, 2) and _panel_rows(sessions) == 0
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(m.PanelMemberRow)) == 0

    rows = [{"id": "r0", "text": "answer"}]
    again = datasets.create_dataset(sessions, "Again", responses=rows, actor=ADMIN)
    from tests.storage.helpers import make_run

    pair = [make_run(sessions, version.id, again.id).id for _ in range(2)]
    panels.create_panel(sessions, run_ids=pair, rule="any", actor=ADMIN)
    rubric_id = rubrics.get_version(sessions, version.id).rubric_id
    assert rubrics.deletion_summary(sessions, rubric_id).panels == 1
    with pytest.raises(ConfirmationRequiredError,
                       match="and the 1 judge panel built on them; confirm"):
        rubrics.delete_rubric(sessions, rubric_id, actor=ADMIN)
    rubrics.delete_rubric(sessions, rubric_id, confirm=True, actor=ADMIN)
    assert _panel_rows(sessions) == 0


def _trial_rows(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.CriterionTrialRow))


@pytest.mark.parametrize("owner", ["dataset", "rubric"])
def test_deleting_with_a_rewording_trial_takes_the_trial_too(sessions, three_judges, owner):
    """A trial re-asks one run's judge: with the people's verdicts deleted too (the library's
    switch), the dataset or rubric goes, never a foreign-key error."""
    from storage.services import trial_progress

    version, dataset, _responses, run_ids = three_judges
    criterion_id = rubrics.get_version(sessions, version.id).criteria[0].id
    trial_progress.begin(sessions, criterion_id=criterion_id, base_run_id=run_ids[0],
                         requirement="States the dose in mg", total=3, max_cost=None,
                         actor=ADMIN, worker="test")
    assert _trial_rows(sessions) == 1
    if owner == "dataset":
        summary = datasets.delete_dataset(sessions, dataset.id, confirm=True,
                                          delete_human_verdicts=True, actor=ADMIN)
    else:
        rubric_id = rubrics.get_version(sessions, version.id).rubric_id
        summary = rubrics.delete_rubric(sessions, rubric_id, confirm=True,
                                        delete_human_verdicts=True, actor=ADMIN)
    assert summary.runs == 3 and _trial_rows(sessions) == 0
