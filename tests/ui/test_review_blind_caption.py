"""Blind mode's form caption does not speak of the judges it hides (issue 9 item 11)."""

from __future__ import annotations

import pytest

from tests.ui.pages import open_page, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def test_blind_mode_caption_does_not_mention_agreeing_with_the_judges():
    seed_graded(count=2)
    at = open_page("review")
    at.toggle(key="review_blind").set_value(True).run()
    assert not at.exception
    shown = texts(at)
    assert "agree with the judges" not in shown
    assert "where the judges agree" not in shown
    assert "Judges hidden until you answer (blind mode)." in shown
