"""AppTest checks of panels of pairwise judges on the Compare page: made from the form, listed
beside the comparisons, read like a judge (win rate with interval, position consistency, the
table per criterion, the panel beside its judges, the panel against people); a bad pick says
what is wrong and writes nothing; a second click finds the same panel; a panel deleted in
another tab is a message, not a traceback."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update
from streamlit.testing.v1 import AppTest

from storage import models as m
from storage.services import datasets, pair_panels, pair_reviews
from storage.services.pair_sides import shown_swapped, to_shown
from tests.actors import ADMIN
from tests.storage.pair_fixtures import ANN, BOB
from tests.storage.pair_panel_fixtures import judged, sources
from tests.storage.test_pair_panels import ONE, THREE, TWO
from tests.ui.pages import APP, db, frame_with, open_page, texts


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _trio() -> list[int]:
    src = sources(db())
    return [judged(db(), src, model, script) for model, script in
            (("openai/one", ONE), ("openai/two", TWO), ("openai/three", THREE))]


def _panels() -> int:
    with db()() as session:
        return session.scalar(select(func.count()).select_from(m.PairPanelRow))


def _make(at, members: list[int], name: str = ""):
    at.multiselect(key="compare_panel_members").set_value(members)
    at.text_input(key="compare_panel_name").set_value(name)
    at.run()  # as the browser reruns on each pick: the button is enabled from two members
    return at.button(key="compare_panel_make").click().run()


def test_a_panel_made_on_the_page_is_shown_as_a_judge_with_its_figures():
    ids = _trio()
    at = open_page("compare", reviewer="Ada", timeout=60)
    assert at.button(key="compare_panel_make").disabled  # no member picked yet

    at = _make(at, ids, name="trio")

    assert not at.exception, at.exception
    assert "Panel P1 made: it is shown below." in [s.value for s in at.success]
    picker = at.selectbox(key="compare_selected")
    assert picker.value == "P1"
    assert [o for o in picker.options if o.startswith("Panel")] == [
        f"Panel P1 trio · majority of #{ids[0]} openai/one, #{ids[1]} openai/two, "
        f"#{ids[2]} openai/three · Steps new vs Steps old"]
    metrics = {metric.label: metric.value for metric in at.metric}
    assert metrics["B's win rate (Steps new over Steps old)"] == "50%"
    assert metrics["Position consistency"] == "75%"
    assert metrics["Pairs judged"] == "4 of 4"
    table = frame_with(at, "position-consistent")
    assert list(table["criterion"]) == ["complete", "rude", "overall"]
    assert list(table["B wins"]) == [2, 1, 2] and list(table["A wins"]) == [2, 2, 2]
    judges = frame_with(at, "judge")
    assert list(judges["judge"]) == ["the panel", f"#{ids[0]} openai/one",
                                     f"#{ids[1]} openai/two", f"#{ids[2]} openai/three"]
    assert list(judges["B win rate"])[:2] == ["50%", "25%"]  # judge one alone: B wins 1 of 4
    assert list(judges["pairs judged"]) == [4, 4, 3, 3]


def test_a_bad_pick_says_what_is_wrong_and_makes_nothing():
    ids = _trio()
    other = judged(db(), sources(db(), name="Else"), "openai/four", ONE)
    at = open_page("compare", reviewer="Ada", timeout=60)

    at = _make(at, [ids[0], other])

    assert not at.exception, at.exception
    [error] = [e.value for e in at.error]
    assert "No panel was made" in error
    assert (f"comparison #{other} used another rubric version than comparison #{ids[0]}"
            in texts(at))
    assert _panels() == 0
    assert at.selectbox(key="compare_selected").value == other  # still the newest comparison


def test_members_deleted_in_another_tab_before_the_click_are_named_and_nothing_is_made():
    ids = _trio()
    at = open_page("compare", reviewer="Ada", timeout=60)
    at.multiselect(key="compare_panel_members").set_value(ids[:2]).run()
    with db()() as session:
        b = session.get(m.ComparisonRow, ids[0]).b_dataset_id
    datasets.delete_dataset(db(), b, confirm=True, actor=ADMIN)  # another tab

    at.button(key="compare_panel_make").click().run()

    assert not at.exception, at.exception
    [error] = [e.value for e in at.error]
    assert f"comparisons #{ids[0]}, #{ids[1]} no longer exist" in texts(at)
    assert "No panel was made" in error and _panels() == 0
    assert "compare_selected" not in [box.key for box in at.selectbox]  # none left


def test_making_the_same_panel_again_shows_the_first_one():
    ids = _trio()
    at = open_page("compare", reviewer="Ada", timeout=60)
    at = _make(at, ids[:2])
    at = _make(at, list(reversed(ids[:2])))

    assert not at.exception, at.exception
    assert "Panel P1 already combines these comparisons: it is shown below." in [
        i.value for i in at.info]
    assert _panels() == 1 and at.selectbox(key="compare_selected").value == "P1"


def _reviewed_trio() -> list[int]:
    """The trio's panel, and two people agreeing B is better on the first two pairs
    (reviewed in the first member)."""
    ids = _trio()
    pair_panels.create_pair_panel(db(), comparison_ids=ids, actor=ADMIN)
    with db()() as session:
        pairs = list(session.scalars(select(m.ComparisonPairRow.id).where(
            m.ComparisonPairRow.comparison_id == ids[0]).order_by(m.ComparisonPairRow.position)))
    for who in (ANN, BOB):
        for p in pairs[:2]:
            flip = shown_swapped(who.key, p)
            pair_reviews.save_pair_review(db(), actor=who, pair_id=p, shown_swapped=flip,
                                          preferences={"complete": to_shown("B", flip),
                                                       "rude": to_shown("B", flip)})
    return ids


def test_the_panel_against_people_once_they_reviewed_pairs():
    _reviewed_trio()
    at = open_page("compare", reviewer="Ada", timeout=60)
    at.selectbox(key="compare_selected").set_value("P1").run()

    assert not at.exception, at.exception
    assert "The panel with people's preferences" in [h.value for h in at.subheader]
    metrics = {metric.label: metric.value for metric in at.metric}
    assert metrics["B's win rate, the panel alone"] == "50%"
    assert metrics["B's win rate with people's preferences"] == "75%"
    agreement = frame_with(at, "kappa")
    assert list(agreement["criterion"]) == ["complete", "rude"]
    assert list(agreement["n"]) == [2, 2]
    assert list(agreement["agreement %"]) == ["50", "50"]


def test_deleting_the_panel_keeps_its_comparisons_and_one_deleted_elsewhere_is_a_message():
    ids = _trio()
    first = pair_panels.create_pair_panel(db(), comparison_ids=ids, actor=ADMIN)
    second = pair_panels.create_pair_panel(db(), comparison_ids=ids[:2], actor=ADMIN)
    at = open_page("compare", reviewer="Ada", timeout=60)
    at.selectbox(key="compare_selected").set_value(f"P{first.id}").run()

    at.button(key=f"compare_panel_delete_{first.id}").click().run()

    assert not at.exception, at.exception
    assert f"Panel P{first.id} was deleted; its comparisons are kept." in [
        i.value for i in at.info]
    assert f"P{first.id}" not in at.selectbox(key="compare_selected").options
    assert _panels() == 1

    at.selectbox(key="compare_selected").set_value(f"P{second.id}").run()
    pair_panels.delete_pair_panel(db(), second.id, actor=ADMIN)  # another tab
    at.run()

    assert not at.exception, at.exception
    assert f"panel P{second.id} of pairwise judges does not exist" in texts(at)
    at.run()  # the next run lists what is there
    assert not at.exception, at.exception
    assert at.selectbox(key="compare_selected").value == ids[-1]


def test_the_agreement_page_lists_the_panel_against_people_beside_the_comparisons():
    ids = _reviewed_trio()
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = "Ada"
    at.run()
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception, at.exception

    table = frame_with(at, "comparison")
    assert list(table["comparison"]) == [f"#{ids[0]} · Steps new vs Steps old"] * 2 + [
        "Panel P1 · Steps new vs Steps old"] * 2
    panel = table[table["comparison"].str.startswith("Panel")]
    assert list(panel["criterion"]) == ["complete", "rude"]
    assert list(panel["n"]) == [2, 2] and list(panel["agreement %"]) == ["50", "50"]


def test_a_member_judging_again_is_said_and_followed():
    ids = _trio()
    pair_panels.create_pair_panel(db(), comparison_ids=ids[:2], actor=ADMIN)
    with db().begin() as session:  # resumed: judging its failed pair again
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == ids[1])
                        .values(status="running"))
    at = open_page("compare", reviewer="Ada", timeout=60)
    at.selectbox(key="compare_selected").set_value("P1").run()

    assert not at.exception, at.exception
    assert f"Judging again: #{ids[1]}. The panel's figures follow" in texts(at)
    assert f"#{ids[1]} openai/two (running)" in texts(at)
