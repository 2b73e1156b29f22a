"""AppTest checks of panels on the Agreement page: the panel next to its members with cost,
member agreement per criterion with low agreement flagged, and the worst criteria's way to
the rewording trial on the Judges page."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from storage.services import panels
from tests.actors import ADMIN
from tests.storage.agreement_seed import seed
from tests.ui.pages import APP, agreement_tab, texts


def _open(tab: str = "Criteria") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = "Ada"
    at.run()
    at.switch_page("app_pages/agreement.py")
    return agreement_tab(at, tab)


def test_the_panel_is_shown_next_to_its_members_with_cost_and_member_agreement(sessions):
    seeded = seed(sessions)
    panel = panels.create_panel(sessions, run_ids=[seeded.cheap.id, seeded.strong.id],
                                rule="majority", actor=ADMIN, name="pair")
    at = _open("Judges and cost")
    assert "Judge panels next to their members" in [h.value for h in at.subheader]
    table = next(f.value for f in at.dataframe if "Macro-F1 vs Human" in f.value.columns)
    assert list(table["Role"]) == ["panel", "member", "member"]
    assert table["Judge"][0] == f"Panel P{panel.id}"
    assert list(table["Cost / grade"]) == ["$0.0094", "$0.0004", "$0.0090"]
    members = next(f.value for f in at.dataframe if "Flag" in f.value.columns)
    assert set(members["Criterion"]) == {"accurate", "cites", "concise", "harmful"}
    flagged = set(members[members["Flag"] == "low agreement"]["Criterion"])
    assert "cites" in flagged  # the two judges split on 'cites' in r3 and r5
    assert any("read" in w.value and "differently" in w.value for w in at.warning)
    # the panel is one more source in the pairwise matrix and the pair picker
    at = agreement_tab(at, "Criteria")
    assert (f"Human  vs  Panel P{panel.id} pair · majority of #{seeded.cheap.id}, "
            f"#{seeded.strong.id}" in at.selectbox(key="agreement_pair").options)


def test_reword_on_a_worst_criterion_opens_the_trial_with_that_criterion(sessions):
    seeded = seed(sessions)
    at = _open()
    worst = at.dataframe[0].value["Criterion"][0]
    criterion = next(c for c in seeded.version.criteria if c.label == worst)
    button = at.button(key=f"agreement_reword_{criterion.id}")
    button.click().run()
    assert not at.exception, at.exception
    assert at.session_state.judges_criterion_id == criterion.id
    assert at.selectbox(key="judges_criterion_id").value == criterion.id
    assert at.selectbox(key="judges_set").value == (
        f"{seeded.dataset.id}:{seeded.version.id}")
    assert at.text_area(key=f"judges_text_{criterion.id}").value == criterion.requirement
    assert "reviewed responses" in texts(at)  # the trial's estimate is shown


def test_open_in_results_from_a_panel_pair_shows_the_panel_and_its_members(sessions):
    seeded = seed(sessions)
    panel = panels.create_panel(sessions, run_ids=[seeded.cheap.id, seeded.strong.id],
                                rule="majority", actor=ADMIN, name="pair")
    at = _open()
    at.selectbox(key="agreement_pair").set_value(f"human|panel:{panel.id}").run()
    assert not at.exception, at.exception
    next(b for b in at.button if b.label == "Open in Results").click().run()
    assert not at.exception, at.exception
    assert at.session_state.results_run_ids == [seeded.cheap.id, seeded.strong.id]
    assert at.multiselect(key="results_panel_ids").value == [panel.id]
    table = at.dataframe[0].value
    assert f"P{panel.id} pair" in table.columns


def test_a_saved_verdict_does_not_recompute_the_members_alpha(sessions, monkeypatch):
    """The members' alpha (seconds at 100,000 responses) reads the members' grades alone:
    the page after a person's verdict shows it from the cache."""
    from storage.services import panel_agreement, reviews
    from storage.services.reviewers import local_actor
    from ui import panel_readers

    seeded = seed(sessions)
    panels.create_panel(sessions, run_ids=[seeded.cheap.id, seeded.strong.id],
                        rule="majority", actor=ADMIN, name="pair")
    computed = []
    real = panel_agreement.member_agreement
    monkeypatch.setattr(panel_agreement, "member_agreement",
                        lambda *args: computed.append(args) or real(*args))
    panel_readers.get_member_agreement.clear()
    at = _open("Judges and cost")
    assert not at.exception, at.exception
    assert len(computed) == 1
    response = seeded.responses["r5"]
    reviews.set_human_verdict(sessions, actor=local_actor("ana"), response_id=response.id,
                              criterion_id=seeded.version.criteria[0].id, verdict="MET")
    panel_readers.get_stamp.clear()  # as 2 s later: the page sees the verdict
    at.run()
    assert not at.exception, at.exception
    assert "Judge panels next to their members" in [h.value for h in at.subheader]
    assert len(computed) == 1
    assert next(f.value for f in at.dataframe if "Flag" in f.value.columns) is not None
