"""AppTest checks of the Agreement page's verdict import: a file with problems lists them (as
the file's text, never as markdown) and writes nothing; a valid file is written and announced."""

from __future__ import annotations

import re

from storage.services import reviews
from tests.storage.agreement_seed import seed
from tests.ui.pages import agreement_tab, unescape
from tests.ui.test_agreement_page import _open


def test_import_errors_are_listed_and_nothing_is_written(sessions):
    seeded = seed(sessions)
    at = agreement_tab(_open(), "Labels and pairwise")
    at.session_state.reviewer_name = "lead"  # who imports (every role in local mode)
    at.file_uploader(key="agreement_import_file_0").upload(
        "verdicts.csv", b"response_id,criterion,verdict,reviewer\nr5,tone,maybe,\n", "text/csv")
    next(b for b in at.button if b.label == "Import verdicts").click().run()
    assert not at.exception
    [error] = at.error
    shown = unescape(error.value)
    assert "fix these 3 problems" in shown
    assert "column 'criterion'" in shown and "column 'reviewer'" in shown
    assert reviews.current_verdicts(sessions, seeded.responses["r5"].id,
                                    seeded.version.id) == {}


def test_import_problems_show_the_files_text_as_text(sessions):
    seed(sessions)
    at = agreement_tab(_open(), "Labels and pairwise")
    at.session_state.reviewer_name = "lead"
    at.file_uploader(key="agreement_import_file_0").upload(
        "verdicts.csv", b"response_id,criterion,verdict,reviewer\n"
        b"ana@example.org,**tone**,[met](http://e.invalid),bo\n", "text/csv")
    next(b for b in at.button if b.label == "Import verdicts").click().run()
    [error] = at.error
    shown = unescape(error.value)
    assert "ana@example.org" in shown and "**tone**" in shown, shown
    parsed = re.sub(r"\\(.)", r"\1", error.value)  # the text remark-gfm looks for links in
    assert not re.search(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+|https?://", parsed), parsed
    assert "**tone**" not in error.value and "](http" not in error.value


def test_a_valid_import_is_written_and_announced(sessions):
    seeded = seed(sessions)
    at = agreement_tab(_open(), "Labels and pairwise")
    at.session_state.reviewer_name = "lead"  # who imports (every role in local mode)
    at.file_uploader(key="agreement_import_file_0").upload(
        "verdicts.csv", b"response_id,criterion,verdict,reviewer,note\nr5,cites,met,bo,ok\n",
        "text/csv")
    next(b for b in at.button if b.label == "Import verdicts").click().run()
    assert not at.exception
    assert "Imported 1 verdict on 1 response" in at.success[0].value
    current = reviews.current_verdicts(sessions, seeded.responses["r5"].id, seeded.version.id)
    assert [v.reviewer for v in current.values()] == ["bo"]
