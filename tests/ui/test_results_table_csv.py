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
