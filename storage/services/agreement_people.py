"""What the Agreement report reads row by row of people's side (issue 41), as one value that
can be kept in the database (storage.services.agreement_people_store) and read back by a new
process instead of ~300,000 rows at 100,000 responses: the responses' labels, the verdicts in
force (``effective.applied_rows``), each reviewer's current verdicts
(``effective_reads.current_review_rows``) and each run's verdicts on the reviewed responses
(``runs.run_verdicts``; not their reasons, which a counted report does not hold).
``gather_people`` builds the report's data from it exactly as from the rows it reads itself.

Stored as JSON and raw arrays (storage.services.trust_share_codec, no pickle): each list of
rows as columns, its values (verdicts, options, notes, names) as a table of distinct values
with each row's place in it.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.key_pool import KeyPool
from storage.plain_rows import plain_rows
from storage.repositories import effective as effective_repo
from storage.repositories import runs as run_repo
from storage.repositories.effective import AppliedRow
from storage.services import effective_reads
from storage.services.effective_reads import ReviewRow
from storage.services.label_column import LabelColumn

Key = tuple[int, int]


@dataclass(frozen=True)
class PeopleRows:
    """The rows, as ``gather_with_newest`` reads them."""

    labels: Mapping[int, str]  # response id -> external id or "#<id>", by id: a LabelColumn
    applied: list[AppliedRow]
    own: list[ReviewRow]
    # run id -> its choices; not its reasons (a counted report holds none of the judges':
    # agreement_listing.with_judge_reasons reads those it lists)
    runs: dict[int, dict[Key, object]]


def read_rows(session: Session, rubric_version_id: int, dataset_id: int,
              run_ids: list[int], within: Select | None) -> PeopleRows:
    """The rows read now (``within``: the query of the responses whose runs' verdicts to
    read); the runs' scores are not read. The runs' dicts share their keys (KeyPool)."""
    found = plain_rows(session.connection(),  # driver rows: 100,000s
                       select(m.ResponseRow.id, m.ResponseRow.external_id)
                       .where(m.ResponseRow.dataset_id == dataset_id)
                       .order_by(m.ResponseRow.id))
    labels = LabelColumn([rid for rid, _external in found],
                         [external or f"#{rid}" for rid, external in found])
    del found
    runs = {}
    key = KeyPool()
    for run_id in run_ids:
        runs[run_id] = run_repo.run_verdicts(session, run_id, within, scores=False, key=key,
                                             reasons=False).choices
    applied = effective_repo.applied_rows(session, rubric_version_id, dataset_id)
    own = reviewer_rows(session, rubric_version_id, dataset_id)
    return PeopleRows(labels, applied, own, runs)


def reviewer_rows(session: Session, rubric_version_id: int, dataset_id: int,
                  response_ids: Sequence[int] | None = None) -> list[ReviewRow]:
    """Every reviewer's own current verdict as light rows
    (``effective_reads.current_review_rows``; ``response_ids``: on these responses only);
    tests/storage/recomputed.py switches it to the verdicts recomputed from the history."""
    return effective_reads.current_review_rows(session, rubric_version_id, dataset_id,
                                               response_ids)


# -- advanced by appended verdicts (agreement_people_store.read_stored) ----------------------


def read_touched(session: Session, rubric_version_id: int, dataset_id: int,
                 run_ids: list[int], touched: Sequence[int]) -> PeopleRows:
    """``read_rows`` of these responses only (no labels): their verdicts in force, each
    reviewer's current verdicts on them and, of those reviewed now, the runs' verdicts."""
    ev = m.EffectiveVerdictRow
    reviewed = sorted(set(session.scalars(
        select(ev.response_id).where(ev.rubric_version_id == rubric_version_id,
                                     ev.dataset_id == dataset_id,
                                     ev.response_id.in_(list(touched))))))
    runs = {run_id: run_repo.run_choices(session, run_id, reviewed, reasons=False)[0]
            if reviewed else {} for run_id in run_ids}
    applied = effective_repo.applied_rows(session, rubric_version_id, dataset_id, touched)
    own = reviewer_rows(session, rubric_version_id, dataset_id, touched)
    return PeopleRows({}, applied, own, runs)


def advanced(stored: PeopleRows, fresh: PeopleRows, touched: Sequence[int]) -> PeopleRows:
    """``stored`` with the ``touched`` responses' rows replaced by ``fresh``'s
    (``read_touched``), each where ``read_rows`` reads it: the rows of every list are in
    response order (then criterion, then id or the criterion's position), the rows of one
    response in the order ``fresh`` has them. The labels stay (the responses did not move)."""
    touched = sorted(set(touched))

    def first(row) -> int:
        return row[0]

    def first_of_key(item) -> int:
        return item[0][0]

    runs = {}
    for run_id, choices in stored.runs.items():
        runs[run_id] = dict(_spliced(list(choices.items()), list(fresh.runs[run_id].items()),
                                     touched, first_of_key))
    return PeopleRows(stored.labels, _spliced(stored.applied, fresh.applied, touched, first),
                      _spliced(stored.own, fresh.own, touched, first), runs)


def _spliced(old: list, fresh: list, touched: list[int], response) -> list:
    """``old`` (in response order) with each touched response's rows replaced by
    ``fresh``'s (in response order): found by bisection, copied slice by slice."""
    by_response: dict[int, list] = {}
    for row in fresh:
        by_response.setdefault(response(row), []).append(row)
    if set(by_response) - set(touched):
        raise ValueError("fresh rows of a response not touched")
    out: list = []
    start = 0
    for rid in touched:
        lo = bisect_left(old, rid, lo=start, key=response)
        hi = bisect_right(old, rid, lo=lo, key=response)
        out += old[start:lo]
        out += by_response.get(rid, ())
        start = hi
    out += old[start:]
    return out


# -- as JSON and raw arrays, and back ---------------------------------------------------------


class _Table:
    """Distinct values in the order met, and each value's place (a Verdict and the option
    text equal to it are different values: keyed by type too)."""

    def __init__(self) -> None:
        self.places: dict = {}
        self.values: list = []

    def at(self, values) -> object:
        import numpy as np

        places, found = self.places, []
        for value in values:
            key = (type(value), value)
            place = places.get(key)
            if place is None:
                place = places[key] = len(self.values)
                self.values.append(value)
            found.append(place)
        return np.array(found, dtype=np.int64)


def _ints(values) -> object:
    import numpy as np

    return np.fromiter(values, dtype=np.int64)


def encode(rows: PeopleRows) -> tuple[str, bytes]:
    import numpy as np

    table = _Table()
    own = rows.own
    seconds = [r.review_seconds for r in own]
    value = {
        # one JSON text: 100,000 strings read back by json, not walked value by value
        "labels": [_ints(rows.labels), json.dumps(list(rows.labels.values()))],
        "applied": [_ints(r.response_id for r in rows.applied),
                    _ints(r.criterion_id for r in rows.applied),
                    table.at(r.choice for r in rows.applied),
                    table.at(r.note for r in rows.applied)],
        "own": [_ints(r.response_id for r in own), _ints(r.criterion_id for r in own),
                _ints(r.id for r in own), table.at(r.choice for r in own),
                table.at(r.reviewer_key for r in own), table.at(r.reviewer for r in own),
                np.array([0.0 if s is None else s for s in seconds], dtype=np.float64),
                np.array([s is not None for s in seconds], dtype=bool)],
        "runs": [[run_id, _ints(rid for rid, _cid in choices),
                  _ints(cid for _rid, cid in choices), table.at(choices.values())]
                 for run_id, choices in rows.runs.items()],
        "values": table.values,
    }
    from storage.services import trust_share_codec  # it reads agreement_sources

    return trust_share_codec.encode(value)


def _rows_of(cls, *columns: list) -> list:
    """Named tuples of ``cls`` from their columns, made as tuples are (not through the
    named tuple's Python ``__new__``: 116,000 of them)."""
    return list(map(tuple.__new__, repeat(cls), zip(*columns, strict=True)))


def decode(text: str, blob: bytes) -> PeopleRows:
    """The rows ``encode`` wrote (``trust_share_codec.UnknownShape``: not of this shape)."""
    from storage.services import trust_share_codec  # it reads agreement_sources

    value = trust_share_codec.decode(text, blob)
    try:
        values = value["values"]

        def looked_up(places) -> list:
            return [values[i] for i in places.tolist()]

        ids, texts = value["labels"]
        labels = LabelColumn(ids, json.loads(texts))
        rids, cids, choices, notes = value["applied"]
        applied = _rows_of(AppliedRow, rids.tolist(), cids.tolist(), looked_up(choices),
                           looked_up(notes))
        rids, cids, vids, choices, keys, names, seconds, timed = value["own"]
        spent = [s if t else None for s, t in zip(seconds.tolist(), timed.tolist(),
                                                   strict=True)]
        own = _rows_of(ReviewRow, rids.tolist(), cids.tolist(), vids.tolist(),
                       looked_up(choices), looked_up(keys), looked_up(names), spent)
        runs = {}
        key = KeyPool()  # the runs' dicts share their keys
        for run_id, rids, cids, choices in value["runs"]:
            keys = list(map(key, rids.tolist(), cids.tolist()))
            if len(keys) != len(rids) or len(keys) != len(cids):
                raise ValueError("a run's columns of another length")
            runs[int(run_id)] = dict(zip(keys, looked_up(choices), strict=True))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
        raise trust_share_codec.UnknownShape(f"not people's rows: {error}") from error
    return PeopleRows(labels, applied, own, runs)
