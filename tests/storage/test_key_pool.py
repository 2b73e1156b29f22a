"""The Agreement report's dicts keyed by (response, criterion) share one tuple per key
(storage.key_pool.KeyPool): people's, each run's and panel's verdicts and reasons and each
reviewer's, whether people's rows were read now or read back from the database by another
process (at 100,000 responses, 5% reviewed: ~350,000 tuples for 40,000 keys, 22 MB of the
kept report, before). SQLite and PostgreSQL."""

from __future__ import annotations

from storage.key_pool import KeyPool
from storage.services import agreement_kept
from tests.storage.helpers import another_process
from tests.storage.test_agreement_inputs import _kept
from tests.storage.test_agreement_kept import _assert_is_the_report
from tests.storage.test_report_counts import _random_world


def _keyed_dicts(data) -> list[dict]:
    return [found for name in ("verdicts", "reasons", "reviewer_verdicts")
            for found in getattr(data, name).values()]


def _assert_one_tuple_per_key(report) -> None:
    dicts = _keyed_dicts(report.data)
    keys = {key for found in dicts for key in found}
    objects = {id(key) for found in dicts for key in found}
    assert len(dicts) >= 10 and len(keys) > 40  # people, 3 runs, 2 panels, 3 reviewers
    assert len(objects) == len(keys)


def test_every_dict_of_the_report_shares_one_tuple_per_key(sessions, db_url):
    version, dataset = _random_world(sessions, 61, responses=30)
    made = agreement_kept.build(sessions, version.id, dataset.id,
                                _kept(sessions, version, dataset))  # people's rows read
    assert made is not None
    _assert_one_tuple_per_key(made.report)

    other = another_process(db_url)
    try:  # people's rows read back from the database
        read = agreement_kept.build(other, version.id, dataset.id,
                                    _kept(other, version, dataset))
        assert read is not None and read.report == made.report
        _assert_one_tuple_per_key(read.report)
        _assert_is_the_report(other, version, dataset, read)
    finally:
        other.kw["bind"].dispose()


def test_the_pool_hands_out_the_first_tuple_made_for_a_key():
    pool = KeyPool()
    seeded = (10**6, 3)  # a response id above the ints Python shares
    pool.seed({seeded: "met"})
    first = pool(10**6, 3)
    other = pool(10**6 + 1, 3)

    assert first is seeded and first == (10**6, 3)
    assert pool(10**6 + 1, 3) is other and pool(10**6, 4) is not first
