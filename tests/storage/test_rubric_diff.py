"""The diff between two rubric versions: added, removed, changed (weight, wording, order)."""

from __future__ import annotations

from grading.types import Criterion
from storage.services import rubrics
from storage.services.rubric_diff import diff_criteria, diff_versions
from tests.actors import ADMIN


def C(name, weight=10, requirement=None, section=None):
    return Criterion(name=name, weight=weight, requirement=requirement or f"does {name}",
                     section=section)


def test_identical_criteria_are_all_unchanged():
    old = [C("a"), C("b")]
    assert [c.kind for c in diff_criteria(old, old)] == ["unchanged", "unchanged"]


def test_added_removed_and_changed_criteria_are_told_apart():
    old = [C("a"), C("b", 5), C("gone")]
    new = [C("a"), C("b", -5, "reworded", "Safety"), C("new")]
    changes = {c.label: c for c in diff_criteria(old, new)}
    assert changes["a"].kind == "unchanged"
    assert changes["b"].kind == "changed"
    assert changes["b"].details == ("weight 5 → -5", "requirement reworded",
                                    "section (none) → Safety")
    assert changes["new"].kind == "added" and changes["new"].old is None
    assert changes["gone"].kind == "removed" and changes["gone"].new is None


def test_a_move_is_a_change():
    changes = diff_criteria([C("a"), C("b")], [C("b"), C("a")])
    assert [c.details for c in changes] == [("moved from position 2 to 1",),
                                            ("moved from position 1 to 2",)]


def test_unnamed_criteria_are_matched_by_requirement():
    old = [Criterion(requirement="Is polite", weight=3)]
    new = [Criterion(requirement="Is polite", weight=4), Criterion(requirement="Is short")]
    changes = diff_criteria(old, new)
    assert [(c.kind, c.label) for c in changes] == [("changed", "criterion 1"),
                                                   ("added", "criterion 2")]


def test_diff_versions_reads_both_versions(sessions):
    first = rubrics.create_rubric(sessions, "r", [C("a"), C("b")], actor=ADMIN)
    rubrics.freeze_version(sessions, first.id, actor=ADMIN)
    second = rubrics.save_criteria(sessions, first.id, [C("a", 7), C("c")], actor=ADMIN)
    diff = diff_versions(sessions, first.id, second.id)
    assert (diff.old.number, diff.new.number) == (1, 2)
    assert diff.counts == {"added": 1, "removed": 1, "changed": 1, "unchanged": 0}


def test_word_diff_keeps_both_wordings_word_by_word():
    from storage.services.rubric_diff import word_diff
    runs = word_diff("States the refund  window in days", "States the return window in days")
    assert [(r.kind, r.text) for r in runs] == [
        ("same", "States the"), ("removed", "refund"), ("added", "return"),
        ("same", "window in days")]
    old = " ".join(r.text for r in runs if r.kind != "added")
    new = " ".join(r.text for r in runs if r.kind != "removed")
    assert (old, new) == ("States the refund window in days", "States the return window in days")
