"""How a human decision is labelled: "reviewers agree" only when there are reviewers to
agree (issue 35 item 15: one reviewer's verdict was labelled "reviewers agree")."""

from __future__ import annotations

from datetime import UTC, datetime

from grading.types import Verdict
from storage.dto import HumanVerdictInfo
from storage.services.consensus import decide
from ui.response_view import decision_caption


def _verdict(id_: int, who: str, verdict: Verdict = Verdict.MET) -> HumanVerdictInfo:
    return HumanVerdictInfo(
        id=id_, response_id=1, rubric_version_id=1, criterion_id=7, seq=1, verdict=verdict,
        reviewer=who, note="", created_at=datetime(2026, 1, 1, tzinfo=UTC), replaces_id=None,
        previous_verdict=None, reviewer_key=f"local:{who}")


def test_one_reviewers_verdict_is_not_called_an_agreement():
    caption = decision_caption(decide(7, [_verdict(1, "ana")], None))
    assert "agree" not in caption
    assert "one reviewer" in caption


def test_two_reviewers_with_the_same_verdict_agree():
    caption = decision_caption(decide(7, [_verdict(1, "ana"), _verdict(2, "bo")], None))
    assert "reviewers agree" in caption
