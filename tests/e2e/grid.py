"""Editing an ``st.data_editor`` in a real browser without guessing pixel positions.

The grid is a canvas, but glide-data-grid keeps an accessible table inside it: column headers
by name and one ``td#glide-cell-<column>-<row>`` per rendered cell, with ``aria-selected`` on
the cell in focus. A cell is reached the way a keyboard user reaches it (click the first cell,
then arrow keys), each step confirmed by that table, so a changed column width or order cannot
send an edit to the wrong cell.
"""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

ROW_HEIGHT = 35  # Streamlit's default row height, the header row included


class Grid:
    def __init__(self, page: Page, container: str) -> None:
        """``container``: a selector for the element holding exactly one data editor."""
        self.page = page
        self.root = page.locator(f'{container} [data-testid="stDataFrame"]')

    def column(self, name: str) -> int:
        """The 1-based column index of the header ``name``."""
        headers = self.root.locator('th[role="columnheader"]')
        expect(headers.first).to_be_attached(timeout=30_000)
        names = [text.strip() for text in headers.all_inner_texts()]
        assert name in names, f"no column {name!r} in {names}"
        return names.index(name) + 1

    def cell(self, column: str, row: int) -> Locator:
        return self.root.locator(f"#glide-cell-{self.column(column)}-{row}")

    def rows(self) -> int:
        """Rows the grid holds (the empty line for adding a row is not one)."""
        return self.root.locator('tbody tr[role="row"]').count()

    def edit(self, column: str, row: int, value: str) -> None:
        """Type ``value`` into a cell (``row`` == rows() adds a row) and confirm the grid
        shows it; the caller then waits for the rerun the edit starts."""
        index = self.column(column)
        adding = row >= self.rows()
        first = self.root.locator("#glide-cell-1-0")
        box = self.root.bounding_box()
        # The first data cell: past the row-marker column, under the header row.
        self.page.mouse.click(box["x"] + 50, box["y"] + ROW_HEIGHT + ROW_HEIGHT // 2)
        expect(first).to_have_attribute("aria-selected", "true", timeout=10_000)
        for _ in range(index - 1):
            self.page.keyboard.press("ArrowRight")
        for _ in range(row):
            self.page.keyboard.press("ArrowDown")
        if not adding:  # the adding line is not in the accessible table
            expect(self.root.locator(f"#glide-cell-{index}-{row}")).to_have_attribute(
                "aria-selected", "true", timeout=10_000)
        self.page.keyboard.press("Enter")
        editor = self.page.locator("#portal textarea, #portal input").first
        expect(editor).to_be_visible(timeout=10_000)
        expect(editor).to_be_editable()
        editor.focus()
        self.page.keyboard.press("ControlOrMeta+a")
        self.page.keyboard.press("Backspace")
        if value:
            editor.press_sequentially(value)
        expect(editor).to_have_value(value)
        self._settle()
        self.page.keyboard.press("Enter")
        expect(editor).to_have_count(0, timeout=10_000)
        expect(self.root.locator(f"#glide-cell-{index}-{row}")).to_have_text(
            value, timeout=10_000)

    def _settle(self) -> None:
        """Pause as a person does between the last key and Enter. The grid's editor commits the
        value of its last *render*, which can lag what the text box already shows: an Enter sent
        right after the keys (as a script can, a person cannot) committed an empty cell in three
        runs out of six here. Two animation frames let that render happen; the short pause
        covers a busy renderer."""
        self.page.evaluate(
            "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        self.page.wait_for_timeout(100)
