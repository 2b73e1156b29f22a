"""Two text columns of one upload made into the two sources of a comparison
(storage.services.column_sources), on SQLite and PostgreSQL: made once and reused, a name
taken by other responses and identical columns refused with nothing written."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from storage import models as m
from storage.errors import InvalidInputError
from storage.services import column_sources, datasets
from tests.actors import ADMIN


def _upload(sessions, rows) -> int:
    return datasets.create_dataset(sessions, "Side", actor=ADMIN, responses=[
        {"id": i, "query": f"Q {i}?", "text": before, "after": after}
        for i, before, after in rows]).id


def _datasets(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.DatasetRow))


def test_the_columns_are_made_into_datasets_once_and_reused(sessions):
    upload = _upload(sessions, [("r1", "a", "b"), ("r2", "c", "d")])
    first = column_sources.sources_from_columns(sessions, upload, "", "after", actor=ADMIN)
    assert first.made == ("Side · response text", "Side · after")
    again = column_sources.sources_from_columns(sessions, upload, "", "after", actor=ADMIN)
    assert (again.a_dataset_id, again.b_dataset_id, again.made) == (
        first.a_dataset_id, first.b_dataset_id, ())
    assert _datasets(sessions) == 3


def test_a_name_taken_by_other_responses_is_refused_and_nothing_is_written(sessions):
    upload = _upload(sessions, [("r1", "a", "b")])
    datasets.create_dataset(sessions, "Side · after", actor=ADMIN,
                            responses=[{"id": "x", "text": "other"}])
    with pytest.raises(InvalidInputError, match="'Side · after' exists with other responses"):
        column_sources.sources_from_columns(sessions, upload, "", "after", actor=ADMIN)
    assert _datasets(sessions) == 2  # not even the response-text one


def test_columns_with_the_same_text_in_every_row_are_refused(sessions):
    upload = _upload(sessions, [("r1", "a", "a")])
    with pytest.raises(InvalidInputError, match="same text in every row"):
        column_sources.sources_from_columns(sessions, upload, "", "after", actor=ADMIN)
    assert _datasets(sessions) == 1
