"""Load the sample rubric and responses once; loading again finds them and changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

from grading.rubric import Rubric
from storage.engine import SessionFactory
from storage.errors import NameTakenError
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.response_files import read_responses
from storage.services.datasets import create_dataset
from storage.services.reviewers import Actor, Role, require
from storage.services.rubrics import create_rubric


@dataclass(frozen=True)
class SampleLoad:
    rubric_id: int
    dataset_id: int
    rubric_created: bool
    dataset_created: bool

    @property
    def already_loaded(self) -> bool:
        return not (self.rubric_created or self.dataset_created)


def _existing_rubric(sessions: SessionFactory, name: str) -> int | None:
    with sessions() as session:
        row = rubric_repo.find_rubric_by_name(session, name)
        return None if row is None else row.id


def _existing_dataset(sessions: SessionFactory, name: str) -> int | None:
    with sessions() as session:
        row = dataset_repo.find_dataset_by_name(session, name)
        return None if row is None else row.id


def load_sample(
    sessions: SessionFactory, *, rubric_name: str, rubric_text: str, rubric_filename: str,
    dataset_name: str, responses_data: bytes, responses_filename: str,
    description: str = "", actor: Actor,
) -> SampleLoad:
    """Create the sample rubric and dataset unless rubrics/datasets with these names exist."""
    require(actor, Role.ADMIN, "load the samples")
    rubric = Rubric.from_text(rubric_text, filename=rubric_filename)
    responses = read_responses(responses_data, responses_filename)
    rubric_id = _existing_rubric(sessions, rubric_name)
    rubric_created = False
    if rubric_id is None:
        try:
            rubric_id = create_rubric(sessions, rubric_name, rubric,
                                      description=description, actor=actor).rubric_id
            rubric_created = True
        except NameTakenError:  # a second click raced the first
            rubric_id = _existing_rubric(sessions, rubric_name)
    dataset_id = _existing_dataset(sessions, dataset_name)
    dataset_created = False
    if dataset_id is None:
        try:
            dataset_id = create_dataset(sessions, dataset_name, description=description,
                                        responses=responses, actor=actor).id
            dataset_created = True
        except NameTakenError:
            dataset_id = _existing_dataset(sessions, dataset_name)
    assert rubric_id is not None and dataset_id is not None
    return SampleLoad(rubric_id, dataset_id, rubric_created, dataset_created)
