"""Kept rows (storage.services.kept_rows): what they write is not held by the process after
(issue 41: the engine's cache of compiled statements kept the first insert of each kind of
kept row with its values, 26 MB of arrays at 100,000 responses, for the process's life)."""

from __future__ import annotations

import gc
import sys

from sqlalchemy import select

from storage import models as m
from storage.services import kept_rows
from tests.storage.helpers import make_dataset, make_rubric


def test_a_replaced_rows_values_are_let_go_once_written(sessions):
    version, (dataset, _responses) = make_rubric(sessions), make_dataset(sessions)
    where = {"rubric_version_id": version.id, "dataset_id": dataset.id}
    for round_ in range(2):  # the first write of its kind, then one the cache reuses
        arrays = bytes(range(256)) * 4000 + bytes([round_])
        values = {"stamp": f"s{round_}", "figures": "{}", "arrays": arrays}
        gc.collect()
        held = sys.getrefcount(arrays)
        assert kept_rows.replace(sessions, m.AgreementPeopleRow, where, values)
        gc.collect()
        assert sys.getrefcount(arrays) == held  # nothing else holds them now
        with sessions() as session:
            assert session.scalar(select(m.AgreementPeopleRow.arrays)) == arrays
