"""AppTest checks of a judge panel a worker is still building (storage.jobs.panel_fills): the
Judges, Results and Agreement pages say so with its progress and show none of its figures;
once the worker has filled it, the next run shows them."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage.jobs import panel_fills
from storage.services import panels
from tests.actors import ADMIN
from tests.ui.pages import APP, agreement_tab, open_page, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    """No worker in the page's process: the test plays the worker, when it chooses to."""
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


@pytest.fixture
def _big_panels(monkeypatch):
    """Every panel counts as too big to fill inside the request."""
    monkeypatch.setattr(panels, "FILL_IN_REQUEST_GRADES", 0)


def _judges(name: str = "Ada") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = name
    at.run()
    at.switch_page("app_pages/judges.py")
    return at.run()


def test_a_big_panel_made_on_judges_shows_as_being_built_then_its_figures(_big_panels):
    seeded = seed_graded(4)
    at = _judges()
    at.button[0].click().run()  # the form's "Create panel"
    assert not at.exception, at.exception
    [panel] = panels.list_panels(seeded.sessions)
    assert not panel.ready
    shown = texts(at)
    assert f"Created {panel.label}. It is being built (waiting for a worker)" in shown
    assert f"{panel.label} is being built: waiting for a worker." in shown
    assert "nothing partial is shown" in shown
    assert "background worker is turned off: start `rubric-workbench worker`" in shown
    assert not at.metric  # no figure of it: no responses, mean score, ties or cost
    assert not [f for f in at.dataframe if "α" in f.value.columns]
    at.button[0].click().run()  # a second click finds it being built: no second one
    assert [p.id for p in panels.list_panels(seeded.sessions)] == [panel.id]
    assert "no copy was made. It is being built" in texts(at)

    assert panel_fills.fill_panel(seeded.sessions, panel.id, worker="test").status == "filled"
    at.run()
    assert not at.exception, at.exception
    assert "is being built" not in texts(at)
    assert [m.label for m in at.metric][:3] == ["Responses", "Mean panel score",
                                                "Ties (undecided)"]
    assert next(m for m in at.metric if m.label == "Responses").value == "4"
    agreement = next(f.value for f in at.dataframe if "α" in f.value.columns)
    assert list(agreement["criterion"]) == ["accurate", "cites", "concise", "harmful"]


def _made_to_fill_later(seeded) -> panels.PanelInfo:
    """A majority panel of the seeded runs, left for a worker to fill."""
    return panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                               rule="majority", actor=ADMIN, fill="later")


def test_results_offers_a_panel_being_built_only_once_it_is_ready():
    seeded = seed_graded(3)
    panel = _made_to_fill_later(seeded)
    at = open_page("results", reviewer="Ada")
    assert not at.exception, at.exception
    assert f"{panel.label} is being built: waiting for a worker." in texts(at)
    assert not [m for m in at.multiselect if m.label == "Panels to compare"]
    assert not [c for c in at.dataframe[0].value.columns if c.startswith(f"P{panel.id} ")]

    assert panel_fills.fill_panel(seeded.sessions, panel.id, worker="test").status == "filled"
    at.run()
    assert not at.exception, at.exception
    assert "is being built" not in texts(at)
    picker = next(m for m in at.multiselect if m.label == "Panels to compare")
    picker.set_value([panel.id]).run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value[f"P{panel.id} majority"]) == pytest.approx(
        [1.0, 1.0, 1.0])


def test_agreement_says_a_panel_is_being_built_and_leaves_it_out_until_ready():
    seeded = seed_graded(3)
    panel = _made_to_fill_later(seeded)
    at = agreement_tab(open_page("agreement", reviewer="Ada"), "Judges and cost")
    shown = texts(at)
    assert f"{panel.label} is being built: waiting for a worker." in shown
    assert "Judge panels next to their members" not in shown
    panel_fills.fill_panel(seeded.sessions, panel.id, worker="test")
    at.run()
    assert not at.exception, at.exception
    assert "is being built" not in texts(at)


def test_a_panel_deleted_while_being_built_leaves_the_page_without_a_traceback():
    # Another tab deletes the panel while this page follows its progress: the poll finds it
    # gone and the page is drawn again without it.
    seeded = seed_graded(3)
    panel = _made_to_fill_later(seeded)
    at = open_page("results", reviewer="Ada")
    assert f"{panel.label} is being built: waiting for a worker." in texts(at)
    panels.delete_panel(seeded.sessions, panel.id, actor=ADMIN)
    at.run()
    assert not at.exception, at.exception
    assert "is being built" not in texts(at)
    assert f"judge panel {panel.id} does not exist" not in texts(at)
