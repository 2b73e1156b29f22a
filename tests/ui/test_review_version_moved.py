"""AppTest: the Review page shows v1 while the rubric gets a v2 (a wording adopted). The save
is recorded on v1, the version the reviewer read, and the page says, under the save buttons,
that the rubric has a newer version — with a button that switches the page to it."""

from __future__ import annotations

import pytest

from storage.services import reviews, rubrics, runs
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA
from tests.ui import verdict_form
from tests.ui.pages import open_page, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _warnings(at) -> list[str]:
    """The notices, markdown escapes removed."""
    return [w.value.replace("\\", "") for w in at.warning if "newer version" in w.value]


def _reword_cites(seeded):
    reworded = [c.model_copy(update={"requirement": "Cites a named, checkable source"})
                if c.name == "cites" else c for c in CRITERIA]
    newer = rubrics.save_criteria(seeded.sessions, seeded.version.id, reworded,
                                  note="reworded 'cites' (trial 1)", actor=ADMIN)
    assert newer.id != seeded.version.id and newer.number == 2
    return newer


def test_a_save_after_a_newer_version_is_kept_on_the_shown_one_and_offers_a_switch():
    seeded = seed_graded(count=3)
    at = open_page("review")
    at.text_input(key="review_name_input").input("ana").run()
    response_id = at.session_state.review_shown[0]
    cites = seeded.version.criteria[1]
    newer = _reword_cites(seeded)  # meanwhile, in the admin's tab
    runs.create_run(seeded.sessions, rubric_version_id=newer.id,
                    dataset_id=seeded.responses[0].dataset_id, grader="per_criterion",
                    model="openai/judge-a", actor=ADMIN)
    verdict_form.submit(at, {cites.id: "UNMET"})
    assert not at.exception
    [saved] = reviews.verdict_history(seeded.sessions, response_id)
    assert saved.rubric_version_id == seeded.version.id  # the version the page showed
    [warning] = _warnings(at)
    assert warning.startswith("Saved on v1, the version this page shows — but the rubric "
                              "now has a newer version, v2 (reworded")
    assert "“cites” counts for v1 only" in warning
    assert "Saved 1 verdict (cites)" in texts(at)

    at.button(key="review_version_switch").click().run()
    assert not at.exception
    assert at.session_state.review_set[1] == newer.id
    assert at.selectbox(key="review_set").value[1] == newer.id
    assert not _warnings(at)  # on v2 now


def test_without_a_run_on_the_newer_version_the_page_says_how_to_get_one():
    seeded = seed_graded(count=3)
    at = open_page("review")
    at.text_input(key="review_name_input").input("ana").run()
    _reword_cites(seeded)
    accurate = seeded.version.criteria[0]
    verdict_form.submit(at, {accurate.id: "MET"})
    [warning] = _warnings(at)
    assert "“accurate” also counts under v2 (same requirement)" in warning
    assert "No run has graded this dataset under v2 yet" in texts(at)
    assert not [b for b in at.button if b.key == "review_version_switch"]
