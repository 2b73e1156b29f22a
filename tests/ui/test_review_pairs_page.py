"""AppTest checks of the Review pairs page: an empty database says where to start; a
comparison's pair is drawn blind (no source name anywhere on the page, not even in the
comparison picker) with Previous / Next over its pairs. Keys and saving: the browser test
tests/e2e/test_review_pairs.py (the form is a browser component)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.storage.pair_fixtures import make_comparison
from tests.ui import verdict_form
from tests.ui.pages import APP, db, texts


def _open() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer_name"] = "Ada"
    at.run()
    at.switch_page("app_pages/review_pairs.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _everything(at: AppTest) -> str:
    return texts(at) + " ".join(str(o) for box in at.selectbox for o in box.options)


def test_an_empty_database_says_to_start_a_comparison():
    at = _open()
    assert "start one on the Compare page" in texts(at)


def test_a_pair_is_shown_blind_and_the_pairs_are_paged():
    make_comparison(db(), pairs=2)
    at = _open()

    shown = _everything(at)
    assert "Pair 1 of 2" in shown and "Question 0?" in shown
    assert "Old prompt" not in shown and "New prompt" not in shown
    assert at.button(key="pairs_prev").disabled
    at.button(key="pairs_next").click().run()
    assert not at.exception, at.exception
    assert "Pair 2 of 2" in texts(at) and "Question 1?" in texts(at)
    assert at.button(key="pairs_next").disabled


def test_the_agreement_table_shows_judge_against_people_per_criterion():
    from storage.services import pair_reviews
    from storage.services.pair_sides import shown_swapped, to_shown
    from tests.storage.pair_fixtures import ANN, BOB

    sessions = db()
    _cid, pairs, _names = make_comparison(sessions, pairs=3, judge=("A", "B"))
    for who in (ANN, BOB):
        for p in pairs:
            flip = shown_swapped(who.key, p)
            pair_reviews.save_pair_review(
                sessions, actor=who, pair_id=p, shown_swapped=flip,
                preferences={"complete": to_shown("A", flip), "rude": to_shown("B", flip)})
    at = _open()
    at.toggle(key="pairs_show_agreement").set_value(True).run()
    assert not at.exception, at.exception

    table = at.dataframe[0].value
    assert list(table["Criterion"]) == ["complete", "rude"]
    assert list(table["n (judge vs people)"]) == [3, 3]
    assert list(table["Agreement %"]) == ["100", "100"]
    assert list(table["Pairs with 2+ people"]) == [3, 3]
    assert "kappa undefined" in texts(at)  # always the same side: no kappa, and why


def test_an_adjudicator_decides_a_disputed_pair_from_the_queue():
    from storage.services import pair_results, pair_reviews
    from storage.services.pair_sides import shown_swapped, to_shown
    from tests.storage.pair_fixtures import ADJ, ANN, BOB

    sessions = db()
    cid, pairs, _names = make_comparison(sessions, pairs=2, judge=("A", "B"))
    for who, side in ((ANN, "A"), (BOB, "B")):
        flip = shown_swapped(who.key, pairs[0])
        pair_reviews.save_pair_review(
            sessions, actor=who, pair_id=pairs[0], shown_swapped=flip,
            preferences={"complete": (to_shown(side, flip), f"{who.name} says {side}"),
                         "rude": "T"})
    at = _open()  # local mode: the one person holds every role

    assert any("Waiting for adjudication (1)" in e.label for e in at.expander)
    assert "Ann: A (Old prompt) — Ann says A" in texts(at)
    at.button(key=f"FormSubmitter:pairs_adj_{pairs[0]}_0-Decide").click().run()
    assert "Choose a side before deciding." in texts(at)  # nothing chosen: nothing written
    assert len(pair_results.pair_adjudication_queue(sessions, actor=ADJ,
                                                    comparison_id=cid)) == 1

    at.radio(key=f"pairs_adj_side_{pairs[0]}_0").set_value("B")
    at.button(key=f"FormSubmitter:pairs_adj_{pairs[0]}_0-Decide").click().run()
    assert not at.exception, at.exception
    assert "Decided complete of pair q0." in texts(at)
    assert pair_results.pair_adjudication_queue(sessions, actor=ADJ, comparison_id=cid) == []
    result = pair_results.pair_result(sessions, actor=ADJ, pair_id=pairs[0])
    assert (result.decisions[0].status, result.decisions[0].side) == ("adjudicated", "B")


def _disputed(reviewers) -> tuple[int, list[int]]:
    from storage.services import pair_reviews
    from storage.services.pair_sides import shown_swapped, to_shown

    sessions = db()
    cid, pairs, _names = make_comparison(sessions, pairs=1, judge=("A", "B"))
    for who, side in reviewers:
        flip = shown_swapped(who.key, pairs[0])
        pair_reviews.save_pair_review(
            sessions, actor=who, pair_id=pairs[0], shown_swapped=flip,
            preferences={"complete": to_shown(side, flip), "rude": "T"})
    return cid, pairs


def _adjudications(pair_id: int) -> list[str]:
    from sqlalchemy import select

    from storage import models as m

    with db()() as session:
        return list(session.scalars(select(m.PairReviewRow.side).where(
            m.PairReviewRow.pair_id == pair_id,
            m.PairReviewRow.stream == m.ADJUDICATION_STREAM)))


def test_a_decision_on_a_card_decided_meanwhile_elsewhere_is_refused():
    from storage.services import pair_reviews
    from tests.storage.pair_fixtures import ADJ, ANN, BOB

    _cid, pairs = _disputed([(ANN, "A"), (BOB, "B")])
    at = _open()  # the card is drawn: nobody decided yet
    pair_reviews.adjudicate_pair(db(), actor=ADJ, pair_id=pairs[0], criterion="complete",
                                 side="A")  # another adjudicator (or tab) meanwhile

    at.radio(key=f"pairs_adj_side_{pairs[0]}_0").set_value("B")
    at.button(key=f"FormSubmitter:pairs_adj_{pairs[0]}_0-Decide").click().run()

    assert not at.exception, at.exception
    assert "Not saved: complete was decided meanwhile by Adj (A (Old prompt))" in texts(at)
    assert _adjudications(pairs[0]) == ["A"]  # not overwritten
    assert any("Waiting for adjudication (0)" in e.label for e in at.expander)


def test_a_decision_on_a_card_whose_reviewers_answered_again_is_refused():
    from storage.services import pair_reviews
    from storage.services.pair_sides import shown_swapped, to_shown
    from tests.storage.pair_fixtures import ANN, BOB, CAT

    _cid, pairs = _disputed([(ANN, "A"), (BOB, "B"), (CAT, "B")])
    at = _open()
    flip = shown_swapped(CAT.key, pairs[0])  # Cat changes her mind: still disputed
    pair_reviews.save_pair_review(db(), actor=CAT, pair_id=pairs[0], shown_swapped=flip,
                                  preferences={"complete": to_shown("TIE", flip)})

    at.radio(key=f"pairs_adj_side_{pairs[0]}_0").set_value("B")
    at.button(key=f"FormSubmitter:pairs_adj_{pairs[0]}_0-Decide").click().run()

    assert not at.exception, at.exception
    assert "Not saved: Cat answered TIE on complete" in texts(at)
    assert "while you were deciding; reload" in texts(at)
    assert _adjudications(pairs[0]) == []
    assert "Cat: tie" in texts(at)  # the card now shows her new answer



def _save(at: AppTest, answer: str) -> dict:
    """A save as the browser sends it (its JavaScript: tests/e2e/test_review_pairs.py)."""
    [keys] = [p for p in verdict_form.parts(at) if p["part"] == "keys"]
    first = keys["criteria"][0]["id"]
    return {"id": f"{keys['form']}#1", "form": keys["form"], "advance": False,
            "answers": [{"criterion": first, "answer": answer, "note": ""}]}


def test_a_save_the_browser_sends_again_keeps_its_message():
    """The browser sends a save again when it has not heard back in 3 s (a busy machine):
    taken once, and the rerun that answers it says again what came of it — not a page
    without it (the reviewer would not know it was saved)."""
    make_comparison(db(), pairs=1)
    at = _open()
    save = _save(at, "A")
    at.session_state["pairs_submitted"] = save
    at.run()
    assert not at.exception, at.exception
    assert "Saved 1 preference." in texts(at)
    at.session_state["pairs_submitted"] = dict(save)  # the same save, sent again
    at.run()
    assert not at.exception, at.exception
    assert "Saved 1 preference." in texts(at)
    assert at.session_state["pairs_done"] == save["id"]
    at.run()  # the next rerun (a click elsewhere): the message was shown, it is gone
    assert "Saved 1 preference." not in texts(at)


def test_a_refused_save_sent_again_keeps_saying_why():
    make_comparison(db(), pairs=1)
    at = _open()
    save = _save(at, "A")
    save["answers"] = []  # nothing answered: refused with a reason
    at.session_state["pairs_submitted"] = save
    at.run()
    assert "Nothing to save: answer a criterion first." in texts(at)
    at.session_state["pairs_submitted"] = dict(save)
    at.run()
    assert not at.exception, at.exception
    assert "Nothing to save: answer a criterion first." in texts(at)
