"""In a real browser: three finished comparisons of the same two sources by three judges are
made into a panel on the Compare page, which then shows the panel as a judge — B's win rate
by majority, its position consistency, and the panel beside each of its judges."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from storage.engine import open_database
from storage.services import pair_panels
from tests.e2e.streamlit_page import no_tracebacks, submit, wait_idle
from tests.e2e.test_journey import _add_choice
from tests.storage.pair_panel_fixtures import judged, sources
from tests.storage.test_pair_panels import ONE, THREE, TWO

MODELS = (("openai/one", ONE), ("openai/two", TWO), ("openai/three", THREE))


SEEDED: list[str] = []


def _seed(db_url: str) -> None:
    SEEDED.append(db_url)
    sessions = open_database(db_url)
    src = sources(sessions)
    for model, script in MODELS:
        judged(sessions, src, model, script)
    sessions.kw["bind"].dispose()


def test_a_panel_of_three_judges_is_made_and_its_win_rate_read(page: Page, seeded_app_server,
                                                                screenshot):
    url = seeded_app_server(_seed)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/compare")
    expect(page.get_by_role("heading", name="Compare", exact=True)).to_be_visible(
        timeout=45_000)
    wait_idle(page)
    page.get_by_text("New panel of judges").click()
    for number, (model, _script) in enumerate(MODELS, start=1):
        _add_choice(page, "Panel members", f"#{number} · {model} · Steps new vs Steps old")
    page.get_by_label("Panel name (optional)").fill("trio")
    page.get_by_label("Panel name (optional)").press("Enter")
    wait_idle(page)
    make = page.get_by_role("button", name="Make panel")
    expect(make).to_be_enabled()
    submit(page, make, page.get_by_text("Panel P1 made: it is shown below."))
    wait_idle(page)

    expect(page.get_by_role("combobox", name="Comparison")).to_have_value(
        "Panel P1 trio · majority of #1 openai/one, #2 openai/two, #3 openai/three · "
        "Steps new vs Steps old")
    win_rate = page.get_by_test_id("stMetric").filter(has_text="B's win rate")
    expect(win_rate).to_contain_text("50%")
    expect(page.get_by_test_id("stMetric").filter(has_text="Position consistency")
           ).to_contain_text("75%")
    expect(page.get_by_test_id("stMetric").filter(has_text="Pairs judged")).to_contain_text(
        "4 of 4")
    expect(page.get_by_text("The panel beside its judges")).to_be_visible()
    no_tracebacks(page)
    screenshot("compare-pair-panel-1280")

    sessions = open_database(SEEDED[-1])
    try:
        [panel] = pair_panels.list_pair_panels(sessions)
        assert (panel.name, [c.model for c in panel.members]) == (
            "trio", [model for model, _script in MODELS])
    finally:
        sessions.kw["bind"].dispose()
