""""This table (CSV)" of the Results page written a page of rows at a time to a temporary
file (storage.export_files): every matching response, one column group per run and panel,
then the response as uploaded. The bytes are those of ``exports.table_csv`` over one page
holding every row, without holding every row (and the text) at once."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from typing import IO

from storage import csv_cells
from storage import exports as ex
from storage.dto import RunInfo
from storage.engine import SessionFactory
from storage.export_files import to_temp_file
from storage.services import blindness, panels
from storage.services import datasets as dataset_service
from storage.services.panel_results import panel_results
from storage.services.results import ResultsPage

ReadPage = Callable[[int, int], ResultsPage]  # (offset, limit) -> a page of the table
PAGE = 500


def _pages(read_page: ReadPage, page_size: int) -> Iterator[ResultsPage]:
    offset = 0
    while True:
        page = read_page(offset, page_size)
        if page.rows:
            yield page
        offset += page_size
        if len(page.rows) < page_size or offset >= page.total:
            return


def _upload_columns(sessions: SessionFactory, read_page: ReadPage, page_size: int
                    ) -> tuple[list[str], bool]:
    """The uploads' own columns of the matching responses, in order of first appearance
    down the table (the header comes first, so this is a pass of its own), and whether
    any response matches."""
    uploaded: dict[str, None] = {}
    found = False
    for page in _pages(read_page, page_size):
        found = True
        for response in dataset_service.get_responses(
                sessions, [row.response_id for row in page.rows]):
            uploaded.update(dict.fromkeys(str(k) for k in response.metadata or {}))
    return list(uploaded), found


def write_table(sessions: SessionFactory, read_page: ReadPage, runs: Sequence[RunInfo],
                target: IO[str], panel_ids: Sequence[int] = (), *,
                sight: blindness.Sight = blindness.EVERYTHING, page_size: int = PAGE) -> int:
    """Write the table to ``target``; returns the number of rows. ``read_page`` reads the
    table's pages (the same filter and sort each time); the panels' grades are read with
    ``sight`` for each page's responses."""
    chosen = [panels.get_panel(sessions, pid) for pid in panel_ids]
    labels = [f"panel{p.id}_{p.rule}" for p in chosen]
    uploaded, any_rows = _upload_columns(sessions, read_page, page_size)
    writer = csv_cells.writer(target)
    writer.writerow(ex.table_header(runs, labels, uploaded, with_responses=any_rows))
    count = 0
    for page in _pages(read_page, page_size):
        ids = [row.response_id for row in page.rows]
        responses = {r.id: r for r in dataset_service.get_responses(sessions, ids)}
        grades = [{r.response_id: r.effective
                   for r in panel_results(sessions, p.id, ids, sight=sight)} for p in chosen]
        for row in page.rows:
            writer.writerow(ex.table_row(row, grades, responses[row.response_id], uploaded))
            count += 1
    return count


def table_csv_file(sessions: SessionFactory, read_page: ReadPage, runs: Sequence[RunInfo],
                   panel_ids: Sequence[int] = (), *,
                   sight: blindness.Sight = blindness.EVERYTHING,
                   page_size: int = PAGE) -> io.BufferedReader:
    """The table written to a temporary file, open for reading (the download button)."""
    return to_temp_file(lambda target: write_table(sessions, read_page, runs, target,
                                                   panel_ids, sight=sight,
                                                   page_size=page_size))
