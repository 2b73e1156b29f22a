"""A judge panel as a first-class column of the Results table (SQLite and PostgreSQL): the
score range, the verdict filter, sorting and the score distribution cover it like a run."""

from __future__ import annotations

import pytest

from storage.errors import InvalidInputError
from storage.services import datasets, panel_results, panels, results, reviews
from tests.storage.helpers import make_run
from tests.storage.test_panels import ADMIN, stored_before_the_tie_rule, three_judges

__all__ = ["three_judges"]
R0, R1, R2 = 1.0, (10 + 2.5 - 8) / 17.5, 0.0  # the majority panel's scores (see three_judges)


def _page(sessions, judged, panel_ids, **kwargs):
    version, dataset, _responses, run_ids = judged
    columns = panel_results.panel_columns(sessions, dataset_id=dataset.id,
                                          rubric_version_id=version.id, panel_ids=panel_ids)
    return results.results_page(sessions, dataset_id=dataset.id,
                                rubric_version_id=version.id, run_ids=run_ids[:2],
                                panels=columns, **kwargs)


@pytest.fixture
def judged(sessions, three_judges):
    """A majority panel stored before the one tie rule: its r1 ties went to the lower score
    and must keep reading back so through the Results columns (test_panels checks the one
    rule on a new panel)."""
    panel = panels.create_panel(sessions, run_ids=three_judges[3], rule="majority",
                                actor=ADMIN)
    stored_before_the_tie_rule(sessions, panel.id)
    return (*three_judges, panel.id)


def test_each_row_carries_the_panels_effective_score(sessions, judged):
    panel_id = judged[4]
    page = _page(sessions, judged[:4], [panel_id])
    assert page.panel_ids == (panel_id,)
    assert [row.panel_scores for row in page.rows] == [
        (pytest.approx(R0),), (pytest.approx(R1),), (pytest.approx(R2),)]


def test_the_score_range_applies_to_a_panel_or_to_any_column(sessions, judged):
    _version, _dataset, responses, _run_ids, panel_id = judged
    low = results.ResultsFilter(min_score=0.2, max_score=0.3, score_panel_id=panel_id)
    page = _page(sessions, judged[:4], [panel_id], filters=low)
    assert [row.response_id for row in page.rows] == [responses[1].id]
    # on any column: the runs' scores of r1 (0.54, 0.71) are outside, the panel's is in
    any_column = results.ResultsFilter(min_score=0.2, max_score=0.3)
    assert [row.response_id for row in _page(sessions, judged[:4], [panel_id],
                                             filters=any_column).rows] == [responses[1].id]
    assert _page(sessions, judged[:4], [], filters=any_column).total == 0


def test_sorting_by_a_panels_score(sessions, judged):
    _version, _dataset, responses, _run_ids, panel_id = judged
    page = _page(sessions, judged[:4], [panel_id], sort="score", sort_panel_id=panel_id,
                 descending=True)
    assert [row.response_id for row in page.rows] == [r.id for r in responses]
    ascending = _page(sessions, judged[:4], [panel_id], sort="score", sort_panel_id=panel_id)
    assert [row.response_id for row in ascending.rows] == [r.id for r in reversed(responses)]


def test_the_verdict_filter_reads_the_panels_verdict_with_peoples_in_place(sessions, judged):
    version, _dataset, responses, _run_ids, panel_id = judged
    cites = version.criteria[1]
    wanted = results.ResultsFilter(verdict=results.VerdictFilter(
        criterion_id=cites.id, verdict="UNMET", run_id=None, panel_id=panel_id))
    # r1: a tie on 'cites' resolved to UNMET; r2: every judge UNMET
    assert [r.response_id for r in _page(sessions, judged[:4], [panel_id],
                                         filters=wanted).rows] == [responses[1].id,
                                                                   responses[2].id]
    reviews.set_human_verdict(sessions, response_id=responses[1].id, criterion_id=cites.id,
                              verdict="MET", actor=ADMIN)
    assert [r.response_id for r in _page(sessions, judged[:4], [panel_id],
                                         filters=wanted).rows] == [responses[2].id]
    # the person's verdict also moves the panel's effective score
    [row] = _page(sessions, judged[:4], [panel_id], filters=results.ResultsFilter(
        search="answer 1")).rows
    assert row.panel_scores == (pytest.approx((10 + 5 + 2.5 - 8) / 17.5),)


def test_the_distribution_has_the_panels_bins_next_to_the_runs(sessions, judged):
    panel_id = judged[4]
    page = _page(sessions, judged[:4], [panel_id], distribution_bins=4)
    bins = [b for b in page.distribution if b.panel_id == panel_id]
    assert [b.count for b in bins] == [1, 1, 0, 1]  # 0.0 | 0.26 | - | 1.0
    assert all(b.run_id is None for b in bins)
    assert {b.run_id for b in page.distribution if b.panel_id is None} == set(judged[3][:2])


def test_a_panel_not_shown_or_of_another_result_set_is_refused(sessions, judged):
    version, _dataset, _responses, _run_ids, panel_id = judged
    with pytest.raises(InvalidInputError, match="judge panel that is not shown"):
        _page(sessions, judged[:4], [], sort="score", sort_panel_id=panel_id)
    with pytest.raises(InvalidInputError, match="judge panel that is not shown"):
        _page(sessions, judged[:4], [], filters=results.ResultsFilter(
            min_score=0.5, score_panel_id=panel_id))
    other = datasets.create_dataset(sessions, "Other", responses=[{"id": "x", "text": "t"}],
                                    actor=ADMIN)
    pair = [make_run(sessions, version.id, other.id).id for _ in range(2)]
    elsewhere = panels.create_panel(sessions, run_ids=pair, rule="any", actor=ADMIN)
    with pytest.raises(InvalidInputError, match="another dataset or rubric version"):
        _page(sessions, judged[:4], [elsewhere.id])
