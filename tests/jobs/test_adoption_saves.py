"""A reviewer still on the page of v1 saves after an admin adopted a wording trial (v2), on
SQLite and PostgreSQL: the verdicts are recorded on v1, the version the page showed (never
moved to v2), and the save says the rubric moved on — which verdicts count under v2 and which
must be judged again on the new wording."""

from __future__ import annotations

import asyncio

import pytest

from grading.types import Verdict
from storage.errors import InvalidInputError
from storage.services import reviews, rubrics, trials
from storage.services.reviewers import local_actor
from tests.jobs.test_trials import ADMIN, STRICT, reviewed

__all__ = ["reviewed"]
M, U = Verdict.MET, Verdict.UNMET
SAM = local_actor("Sam")


def _adopt(sessions, run, accurate):
    plan = trials.plan_trial(sessions, base_run_id=run.id, criterion_id=accurate.id,
                             requirement=STRICT)
    result = asyncio.run(trials.run_trial(sessions, plan, actor=ADMIN, max_cost=None))
    return trials.adopt_wording(sessions, result.trial_id, actor=ADMIN,
                                carry_human_verdicts=True)


def test_a_save_after_an_adoption_is_kept_on_the_shown_version_and_says_so(
        sessions, fake_provider, reviewed):
    version, responses, run, accurate = reviewed
    polite = version.criteria[1]
    # Sam opened response r1 on v1; meanwhile the admin adopts the stricter wording (v2).
    adopted = _adopt(sessions, run, accurate)
    result = reviews.save_review(
        sessions, actor=SAM, response_id=responses[1].id,
        verdicts={accurate.id: (M, ""), polite.id: (U, "curt")},
        expected={accurate.id: None, polite.id: None}, shown_version_id=version.id)
    assert {h.rubric_version_id for h in result.saved} == {version.id}  # never moved
    newer = result.newer
    assert newer is not None
    assert (newer.saved_number, newer.newer_number) == (1, 2)
    assert newer.newer_version_id == adopted.id
    assert newer.not_carried == ("accurate",) and newer.carried == ("polite",)
    assert newer.message.startswith("Saved on v1, the version this page shows — but the "
                                    "rubric now has a newer version, v2 (reworded")
    assert "Your verdict on “accurate” counts for v1 only" in newer.message
    assert "switch to v2" in newer.message
    assert "“polite” also counts under v2" in newer.message

    # What the message says is what happens: under v2 Sam's 'polite' counts, 'accurate' not.
    sams = reviews.current_verdicts(sessions, responses[1].id, adopted.id, reviewer_key="Sam")
    assert set(sams) == {adopted.criteria[1].id}
    on_v1 = reviews.current_verdicts(sessions, responses[1].id, version.id, reviewer_key="Sam")
    assert on_v1[accurate.id].verdict is M


def test_a_save_on_the_newest_version_says_nothing_more(sessions, fake_provider, reviewed):
    version, responses, run, accurate = reviewed
    adopted = _adopt(sessions, run, accurate)
    result = reviews.save_review(
        sessions, actor=SAM, response_id=responses[1].id,
        verdicts={adopted.criteria[0].id: (U, "")}, shown_version_id=adopted.id)
    assert result.newer is None and len(result.saved) == 1
    still_v1 = reviews.save_review(  # a page still on v1 is told, whatever the response
        sessions, actor=SAM, response_id=responses[2].id,
        verdicts={accurate.id: (M, "")}, shown_version_id=version.id)
    assert still_v1.newer is not None
    assert still_v1.newer.not_carried == ("accurate",) and still_v1.newer.carried == ()


def test_a_criterion_of_another_version_than_the_page_showed_is_refused(
        sessions, fake_provider, reviewed):
    version, responses, run, accurate = reviewed
    adopted = _adopt(sessions, run, accurate)
    with pytest.raises(InvalidInputError, match="not in the rubric version this page shows"):
        reviews.save_review(sessions, actor=SAM, response_id=responses[1].id,
                            verdicts={adopted.criteria[0].id: (M, "")},
                            shown_version_id=version.id)
    assert "Sam" not in {h.reviewer for h in reviews.verdict_history(
        sessions, responses[1].id)}
    assert rubrics.get_version(sessions, adopted.id).number == 2
