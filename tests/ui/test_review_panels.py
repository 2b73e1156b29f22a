"""AppTest checks of panels on the Review page: under the judges, each panel's verdict with
how it was reached and its members' verdicts; hidden where blind mode hides the judges."""

from __future__ import annotations

import pytest

from storage.services import panels
from tests.actors import ADMIN
from tests.ui import verdict_form
from tests.ui.pages import open_page, texts
from tests.ui.seed import seed_graded


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _review_with_panel():
    seeded = seed_graded(count=3)
    panel = panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                                rule="majority", actor=ADMIN, name="pair")
    at = open_page("review")
    at.text_input(key="review_name_input").input("ana").run()
    return seeded, panel, at


def test_the_panels_verdict_and_its_members_show_under_the_judges():
    seeded, _panel, at = _review_with_panel()
    assert not at.exception, at.exception
    assert at.session_state.review_shown[0] == seeded.responses[1].id  # the disagreement
    shown = texts(at)
    assert "tie (MET 1, UNMET 1, abstained 0): undecided, CANNOT_ASSESS" in shown
    # the members are the judges just above: named, their verdicts not repeated
    assert f"Members: #{seeded.runs[0].id}, #{seeded.runs[1].id} (verdicts above)" in shown
    assert "judge-a MET" not in shown
    assert ":gray-badge[CANNOT ASSESS] **pair** · :orange-badge[tie]" in "\n".join(
        str(m.value) for m in at.markdown)


def test_blind_mode_hides_the_panel_with_the_judges_until_you_answer():
    _seeded, _panel, at = _review_with_panel()
    at.toggle(key="review_blind").set_value(True).run()
    shown = texts(at)
    assert "Judges hidden until you answer (blind mode)." in shown
    assert "Members:" not in shown and "undecided, CANNOT_ASSESS" not in shown
    assert "**pair**" not in "\n".join(str(m.value) for m in at.markdown)


def _score_row(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_the_score_row_shows_the_panels_score_next_to_the_judges():
    seeded, panel, at = _review_with_panel()
    row = _score_row(at)
    # r1: the judges disagree on 'cites', the panel's tie is undecided (skipped: 12.5 of 12.5)
    judges = [label for label in row if label.startswith("#")]
    assert len(judges) == 2
    assert row[f"Panel P{panel.id}"] == "1.000"
    assert list(row).index(f"Panel P{panel.id}") == list(row).index("Human verdicts") - 1
    shown = texts(at)
    assert (f"pair · majority of #{seeded.runs[0].id}, #{seeded.runs[1].id} · panel 1.000 · "
            "reviewed 0/4 · 1 ties") in shown


def test_blind_mode_hides_the_panels_score_with_the_judges_until_every_criterion_is_answered():
    _seeded, panel, at = _review_with_panel()
    at.toggle(key="review_blind").set_value(True).run()
    row = _score_row(at)
    assert f"Panel P{panel.id}" not in row and not [k for k in row if k.startswith("#")]
    assert "Scores appear once you have answered every criterion" in texts(at)
    verdict_form.submit(at, {c["id"]: "MET" for c in verdict_form.form(at)["criteria"]})
    assert not at.exception, at.exception
    row = _score_row(at)
    # every criterion answered: the judges' scores come back, and the panel's with them,
    # now with the person's verdicts in place of the panel's
    assert len([k for k in row if k.startswith("#")]) == 2
    assert row[f"Panel P{panel.id}"] == row["Human verdicts"]


def test_a_member_not_among_the_judges_shown_keeps_its_verdict_in_the_members_line():
    from grading.types import Verdict
    from ui.results_panels import members_line
    from ui.verdict_view import md_escape

    seeded = seed_graded(count=1)
    panel = panels.create_panel(seeded.sessions, run_ids=[r.id for r in seeded.runs],
                                rule="majority", actor=ADMIN)
    first, second = seeded.runs
    b, a = md_escape(f"#{second.id} judge-b"), md_escape(f"#{first.id} judge-a")
    line = members_line(panel, (Verdict.MET, None), {first.id})
    assert line == f"Members: #{first.id} (verdicts above) · {b} failed"
    assert members_line(panel, (Verdict.CANNOT_ASSESS, Verdict.UNMET), ()) == (
        f"Members: {a} CANNOT ASSESS · {b} UNMET")
