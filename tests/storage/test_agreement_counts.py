"""Agreement counts made by the database (storage.services.agreement_counts): every pairwise
figure identical to the Agreement report's, on SQLite and PostgreSQL, and the GROUP BY read
through indexes, never by a full scan of the verdict table (EXPLAIN)."""

from __future__ import annotations

import re

from sqlalchemy import select, text

from storage import models as m
from storage.services import agreement, agreement_counts, panels, reviews, runs
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.agreement_seed import seed
from tests.storage.report_checks import assert_same_report
from tests.storage.test_calibration import _alternating, _grade_alternating, _launch, _review
from tests.storage.test_calibration import _setup as calibration_setup


def _report_pairs(sessions, version_id, dataset_id) -> dict:
    report = agreement.agreement_report(sessions, version_id, dataset_id)
    return {pair: found for pair, found in report.pairwise.items()
            if not any(key.startswith("panel:") for key in pair)}


def test_counts_give_the_reports_pairwise_figures_on_the_seed(sessions):
    seeded = seed(sessions)

    counted = agreement_counts.pairwise_agreement(sessions, seeded.version.id,
                                                  seeded.dataset.id)

    expected = _report_pairs(sessions, seeded.version.id, seeded.dataset.id)
    assert set(counted) == {("human", f"run:{seeded.cheap.id}"),
                            ("human", f"run:{seeded.strong.id}"),
                            (f"run:{seeded.cheap.id}", f"run:{seeded.strong.id}")}
    assert counted == expected
    assert counted["human", f"run:{seeded.cheap.id}"].overall.pairs_used > 0


def test_disputed_adjudicated_and_panels_leave_the_figures_identical(sessions):
    seeded = seed(sessions)
    first, second = seeded.version.criteria[0], seeded.version.criteria[1]
    r0, r1 = seeded.responses["r0"], seeded.responses["r1"]
    bo = local_actor("bo")
    # bo disagrees on two criteria (disputed: no human verdict in force), one is adjudicated,
    # and bo answers a criterion ana left open on r4 (agreed by everyone who answered).
    reviews.set_human_verdict(sessions, actor=bo, response_id=r0.id, criterion_id=first.id,
                              verdict="UNMET")
    reviews.set_human_verdict(sessions, actor=bo, response_id=r1.id, criterion_id=second.id,
                              verdict="MET")
    reviews.adjudicate(sessions, actor=ADMIN, response_id=r1.id, criterion_id=second.id,
                       verdict="CANNOT_ASSESS")
    reviews.set_human_verdict(sessions, actor=bo, response_id=seeded.responses["r4"].id,
                              criterion_id=seeded.version.criteria[2].id, verdict="UNMET")
    panels.create_panel(sessions, run_ids=[seeded.cheap.id, seeded.strong.id],
                        rule="majority", actor=ADMIN)

    counted = agreement_counts.pairwise_agreement(sessions, seeded.version.id,
                                                  seeded.dataset.id)

    assert counted == _report_pairs(sessions, seeded.version.id, seeded.dataset.id)


def test_a_calibrated_runs_example_responses_are_left_out_as_in_the_report(sessions):
    version, dataset, responses = calibration_setup(sessions, count=10)
    _review(sessions, version, responses, _alternating)
    calibrated = _launch(sessions, version, dataset, k=2)
    plain = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset.id,
                            grader="per_criterion", model="openai/judge", actor=ADMIN)
    _grade_alternating(sessions, (calibrated, plain), responses, version.to_criteria())

    counted = agreement_counts.pairwise_agreement(sessions, version.id, dataset.id)

    expected = _report_pairs(sessions, version.id, dataset.id)
    assert counted == expected
    pair = counted["human", f"run:{calibrated.id}"].overall
    assert 0 < pair.pairs_used < 10 * len(version.criteria)


def test_nothing_graded_or_reviewed_gives_no_pairs(sessions):
    version, dataset, _responses = calibration_setup(sessions, count=3)

    assert agreement_counts.pairwise_agreement(sessions, version.id, dataset.id) == {}


def _plan(sessions, query) -> str:
    engine = sessions.kw["bind"]
    compiled = query.compile(engine, compile_kwargs={"literal_binds": True})
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            rows = connection.execute(text(f"EXPLAIN QUERY PLAN {compiled}")).all()
            return "\n".join(row[-1] for row in rows)
        # A tiny table is scanned whatever its indexes: ask PostgreSQL for the plan it would
        # take on a large one.
        connection.execute(text("SET enable_seqscan = off"))
        return "\n".join(row[0] for row in connection.execute(text(f"EXPLAIN {compiled}")))


def _full_scans(plan: str, table: str) -> list[str]:
    """Plan lines that read every row of ``table`` (or of one of its indexes): SQLite's
    "SCAN t" (an index lookup says SEARCH), PostgreSQL's Seq Scan."""
    return [line for line in plan.splitlines()
            if re.search(rf"\bSCAN {table}(_\d+)?\b", line)
            or re.search(rf"Seq Scan on {table}\b", line)]


def test_the_pair_counts_query_reads_the_verdict_table_through_an_index(sessions):
    seeded = seed(sessions)
    for query in (agreement_counts.pair_counts_query(seeded.cheap.id, seeded.strong.id),
                  agreement_counts.totals_query(seeded.cheap.id)):
        plan = _plan(sessions, query)
        assert "grade_criteria" in plan, plan
        assert not _full_scans(plan, "grade_criteria"), plan
        assert not _full_scans(plan, "grades"), plan


def test_the_scan_check_catches_a_query_that_reads_every_verdict(sessions):
    # What the check above would report if the counts lost their run filter: it can fail.
    seed(sessions)
    plan = _plan(sessions, select(m.GradeCriterionRow.verdict)
                 .where(m.GradeCriterionRow.reason == "x"))
    assert _full_scans(plan, "grade_criteria"), plan


def test_the_report_uses_the_counts_and_its_figures_stay_the_same(sessions):
    seeded = seed(sessions)
    data = agreement.gather_sources(sessions, seeded.version.id, seeded.dataset.id)

    report = agreement.agreement_report(sessions, seeded.version.id, seeded.dataset.id)

    assert_same_report(report, agreement.build_report(data))


def test_counts_of_other_verdicts_than_the_data_are_not_used(sessions):
    # Counts read before a verdict landed, data after: the pair with people is computed
    # from the data, not taken from the stale counts.
    seeded = seed(sessions)
    stale = agreement_counts.pairwise_agreement(sessions, seeded.version.id, seeded.dataset.id)
    reviews.set_human_verdict(sessions, actor=local_actor("ana"),
                              response_id=seeded.responses["r5"].id,
                              criterion_id=seeded.version.criteria[0].id, verdict="UNMET")
    data = agreement.gather_sources(sessions, seeded.version.id, seeded.dataset.id)
    pair = ("human", f"run:{seeded.cheap.id}")
    assert stale[pair] != agreement.build_report(data).pairwise[pair]

    report = agreement.build_report(data, stale)

    assert report == agreement.build_report(data)
