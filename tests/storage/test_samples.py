"""Loading the sample rubric and responses is idempotent."""

from __future__ import annotations

from pathlib import Path

from storage.services import datasets, rubrics
from storage.services.samples import load_sample
from tests.actors import ADMIN

SAMPLES = Path(__file__).resolve().parents[2] / "ui" / "samples"


def _load(sessions):
    return load_sample(
        sessions, rubric_name="Sample: refund support", dataset_name="Sample: refund replies",
        rubric_text=(SAMPLES / "sample_rubric.yaml").read_text(),
        rubric_filename="sample_rubric.yaml",
        responses_data=(SAMPLES / "sample_responses.csv").read_bytes(),
        responses_filename="sample_responses.csv", actor=ADMIN,
    )


def test_first_load_creates_the_rubric_and_dataset(sessions):
    loaded = _load(sessions)
    assert loaded.rubric_created and loaded.dataset_created and not loaded.already_loaded
    version = rubrics.latest_version(sessions, loaded.rubric_id)
    assert any(c.weight < 0 for c in version.criteria)
    assert datasets.get_dataset(sessions, loaded.dataset_id).response_count == 4


def test_second_load_changes_nothing(sessions):
    first = _load(sessions)
    second = _load(sessions)
    assert second.already_loaded
    assert (second.rubric_id, second.dataset_id) == (first.rubric_id, first.dataset_id)
    assert len(rubrics.list_rubrics(sessions)) == 1
    assert datasets.get_dataset(sessions, first.dataset_id).response_count == 4


def test_a_missing_half_is_restored(sessions):
    first = _load(sessions)
    datasets.delete_dataset(sessions, first.dataset_id, actor=ADMIN)
    again = _load(sessions)
    assert not again.rubric_created and again.dataset_created
