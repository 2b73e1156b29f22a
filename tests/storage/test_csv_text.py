"""``csv_cells.csv_text`` and ``csv_texts`` (a cell's text, a row's; the export's lines are
joined from them) are what the spreadsheet-safe ``csv.writer`` writes, cell for cell and row
for row, on texts that need quoting, a prefix, both, or neither, that hold the separator
``csv_texts`` joins with, and on every kind of value a record holds."""

from __future__ import annotations

import io
import random

from storage import csv_cells

CELLS = [None, "", "plain", "a,b", 'say "hi"', "two\nlines", "cr\rend", "crlf\r\nend",
         "=SUM(A1)", "+1", "-5", " -2e3", "@x", "'quoted", "''", "\t=tab", " =spaced",
         "\uff1dwide", "%s %d %%", "naïve — 漢字 🙂", "a\0b", " lead", "x\x0by", "é",
         0, -3, 10**20, 0.1, 1 / 3, -0.0, 1e300, float("inf"), float("nan"), True, False]


def _written(row: list) -> str:
    out = io.StringIO(newline="")
    csv_cells.writer(out).writerow(row)
    return out.getvalue()


def test_each_cell_is_the_safe_writers_text():
    for value in CELLS:
        assert csv_cells.csv_text(value) + ",x\r\n" == _written([value, "x"]), value


def test_rows_joined_from_cells_are_the_safe_writers_rows():
    rng = random.Random(5)
    for _ in range(500):
        row = [rng.choice(CELLS) if rng.random() < 0.8 else
               "".join(rng.choice(['"', ",", "\n", "=", "a", " ", "'", "-", "1", "\0"])
                       for _ in range(rng.randint(1, 6)))
               for _ in range(rng.randint(2, 12))]
        assert ",".join(map(csv_cells.csv_text, row)) + "\r\n" == _written(row), row
        assert ",".join(csv_cells.csv_texts(row)) + "\r\n" == _written(row), row


def test_each_way_through_csv_texts_is_taken():
    """Plain texts as they are; quoted ones; a row with a text that may need the prefix,
    or that holds the separator, cell by cell: each the writer's row."""
    for row in (["a", 1, None, 0.5], ["a,b", 'c"d', "e\nf", 2], ["ok", "=1+1", "x,y"],
                ["ok", " -1", 3], ["a\0=b", "c"], ["-5", "x"], ["x", -5, "y"]):
        assert ",".join(csv_cells.csv_texts(row)) + "\r\n" == _written(row), row
