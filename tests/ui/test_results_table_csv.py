""""This table (CSV)" as the Results page builds it (ui.results_readers.table_reader into
storage.table_export): the bytes the one-page table gave, for everyone and a blind
reviewer, with a judge panel."""

from __future__ import annotations

from storage import table_export
from storage.exports import table_csv, table_responses
from storage.services import blindness, panels, reviews
from storage.services.panel_results import panel_results
from storage.services.results import ResultsFilter
from tests.actors import ADMIN
from tests.ui.seed import seed_graded
from ui import results_readers as readers
from ui import runtime


def test_the_pages_table_csv_is_the_one_page_table_for_every_viewer():
    seeded = seed_graded(7)
    panel = panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                                rule="majority", actor=ADMIN)
    reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[1].id,
                              criterion_id=seeded.version.criteria[1].id, verdict="MET",
                              actor=ADMIN)
    db = runtime.database_key()
    run_ids = tuple(r.id for r in seeded.runs)
    for sight in (blindness.EVERYTHING, blindness.as_reviewer("someone-else")):
        read = readers.table_reader(
            db, seeded.responses[0].dataset_id,
            seeded.version.id, run_ids, ResultsFilter(), "score", run_ids[1], True,
            readers.run_stamp(db, run_ids), panel_ids=(panel.id,),
            panel_stamp=(), sight=sight)
        page = read(0, 100)
        assert len(page.rows) == 7
        expected = table_csv(page, seeded.runs, [(f"panel{panel.id}_majority", {
            r.response_id: r.effective for r in panel_results(seeded.sessions, panel.id,
                                                              sight=sight)})],
            table_responses(seeded.sessions, page)).encode("utf-8")
        with table_export.table_csv_file(runtime.sessions_for(db), read, seeded.runs,
                                         (panel.id,), sight=sight, page_size=3) as found:
            assert found.read() == expected


def test_the_reviewed_scores_are_aggregated_only_for_the_python_page_or_a_blind_viewer(
        monkeypatch):
    """With a panel shown, a viewer who sees every verdict reads the kept scores in SQL:
    no Python aggregation of the reviewed responses, unless the panel is read in Python
    (its stored decisions not the ones read)."""
    from storage.services import results
    from tests.storage.test_panels import stored_before_the_tie_rule

    seeded = seed_graded(5)
    run_ids = tuple(r.id for r in seeded.runs)
    panel = panels.create_panel(seeded.sessions, run_ids=list(run_ids), rule="majority",
                                actor=ADMIN)
    reviews.set_human_verdict(seeded.sessions, response_id=seeded.responses[0].id,
                              criterion_id=seeded.version.criteria[0].id, verdict="MET",
                              actor=ADMIN)
    aggregated: list = []
    original = results.reviewed_effective_scores
    monkeypatch.setattr(results, "reviewed_effective_scores",
                        lambda *a, **k: aggregated.append(k["sight"]) or original(*a, **k))
    db = runtime.database_key()

    def read(sight, stamp):
        readers.get_reviewed_scores.clear()
        return readers.table_reader(
            db, seeded.responses[0].dataset_id, seeded.version.id, run_ids,
            ResultsFilter(), "score", None, True, readers.run_stamp(db, run_ids),
            distribution_bins=3, panel_ids=(panel.id,), panel_stamp=stamp,
            sort_panel_id=panel.id, sight=sight)(0, 10)

    everything = read(blindness.EVERYTHING, ("settled",))
    assert aggregated == [] and len(everything.rows) == 5
    read(blindness.as_reviewer("someone-else"), ("settled",))
    assert aggregated == [blindness.as_reviewer("someone-else")]
    # its stored decisions no longer the ones read (stored under the old tie rule)
    stored_before_the_tie_rule(seeded.sessions, panel.id)
    aggregated.clear()
    read(blindness.EVERYTHING, ("unsettled",))
    assert aggregated == [blindness.EVERYTHING]
