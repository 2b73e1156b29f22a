"""What changed between two rubric versions: criteria added, removed and changed."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from grading.options import CriterionOption, label_key
from grading.types import Criterion
from storage.dto import RubricVersionInfo
from storage.engine import SessionFactory
from storage.services.rubrics import get_version

ChangeKind = Literal["added", "removed", "changed", "unchanged"]
WordKind = Literal["same", "removed", "added"]


@dataclass(frozen=True)
class WordRun:
    """A run of words of a reworded requirement: kept, removed from the old wording or added
    in the new one."""
    kind: WordKind
    text: str


@dataclass(frozen=True)
class CriterionChange:
    kind: ChangeKind
    label: str
    old: Criterion | None
    new: Criterion | None
    # Human-readable field changes, e.g. "weight 10 → 8"; empty unless kind == "changed".
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class VersionDiff:
    old: RubricVersionInfo
    new: RubricVersionInfo
    changes: tuple[CriterionChange, ...]

    @property
    def counts(self) -> dict[str, int]:
        counts = {"added": 0, "removed": 0, "changed": 0, "unchanged": 0}
        for change in self.changes:
            counts[change.kind] += 1
        return counts


def _key(criterion: Criterion) -> tuple[str, str]:
    # Named criteria are matched by name; unnamed ones by their requirement text.
    if criterion.name:
        return ("name", criterion.name)
    return ("requirement", criterion.requirement.strip())


def _label(criterion: Criterion, position: int) -> str:
    return criterion.name or f"criterion {position + 1}"


def _fmt_weight(weight: float) -> str:
    return f"{weight:g}"


def _details(old: Criterion, new: Criterion, old_pos: int, new_pos: int) -> tuple[str, ...]:
    details = []
    if old.weight != new.weight:
        details.append(f"weight {_fmt_weight(old.weight)} → {_fmt_weight(new.weight)}")
    if old.requirement != new.requirement:
        details.append("requirement reworded")
    if old.section != new.section:
        details.append(f"section {old.section or '(none)'} → {new.section or '(none)'}")
    details.extend(_kind_details(old, new))
    if old_pos != new_pos:
        details.append(f"moved from position {old_pos + 1} to {new_pos + 1}")
    return tuple(details)


def _kind(criterion: Criterion) -> str:
    return "MET/UNMET" if criterion.options is None else f"{criterion.scale_type} options"


def _value(option: CriterionOption) -> str:
    return "NA" if option.na else f"{option.value:g}"


def _option_text(option: CriterionOption) -> str:
    return f"{option.label!r} ({_value(option)})"


def _kind_details(old: Criterion, new: Criterion) -> list[str]:
    """Option and gate changes, each named: "option 'Fair' value 0.5 → 0.4"."""
    details = []
    if old.required != new.required:
        details.append("now required" if new.required else "no longer required")
    if (old.options is None) != (new.options is None) or (
            old.options is not None and old.scale_type != new.scale_type):
        details.append(f"{_kind(old)} → {_kind(new)}")
    if old.options is None or new.options is None:
        return details
    old_by = {label_key(o.label): (i, o) for i, o in enumerate(old.options)}
    new_keys = {label_key(o.label) for o in new.options}
    for position, option in enumerate(new.options):
        found = old_by.get(label_key(option.label))
        if found is None:
            details.append(f"option {_option_text(option)} added")
            continue
        old_position, before = found
        if before.label != option.label:
            details.append(f"option {before.label!r} relabelled {option.label!r}")
        if before.na != option.na or before.value != option.value:
            details.append(f"option {option.label!r} value {_value(before)} → "
                           f"{_value(option)}")
        if old_position != position:
            details.append(f"option {option.label!r} moved from {old_position + 1} to "
                           f"{position + 1}")
    details.extend(f"option {_option_text(o)} removed" for o in old.options
                   if label_key(o.label) not in new_keys)
    return details


def diff_criteria(
    old: Sequence[Criterion], new: Sequence[Criterion]
) -> tuple[CriterionChange, ...]:
    """Changes in the new version's order, with removed criteria after the ones kept."""
    old_by_key = {_key(c): (i, c) for i, c in enumerate(old)}
    seen: set[tuple[str, str]] = set()
    changes: list[CriterionChange] = []
    for new_pos, criterion in enumerate(new):
        key = _key(criterion)
        match = old_by_key.get(key) if key not in seen else None
        seen.add(key)
        label = _label(criterion, new_pos)
        if match is None:
            changes.append(CriterionChange("added", label, None, criterion))
            continue
        old_pos, previous = match
        details = _details(previous, criterion, old_pos, new_pos)
        kind: ChangeKind = "changed" if details else "unchanged"
        changes.append(CriterionChange(kind, label, previous, criterion, details))
    for key, (old_pos, criterion) in old_by_key.items():
        if key not in seen:
            changes.append(CriterionChange("removed", _label(criterion, old_pos), criterion, None))
    return tuple(changes)


def word_diff(old: str, new: str) -> tuple[WordRun, ...]:
    """Word-level changes from ``old`` to ``new`` in reading order (a replacement is its
    removed words, then its added words). Whitespace runs count as one space."""
    old_words, new_words = old.split(), new.split()
    runs: list[WordRun] = []
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            runs.append(WordRun("same", " ".join(old_words[i1:i2])))
            continue
        if i2 > i1:
            runs.append(WordRun("removed", " ".join(old_words[i1:i2])))
        if j2 > j1:
            runs.append(WordRun("added", " ".join(new_words[j1:j2])))
    return tuple(runs)


def diff_versions(sessions: SessionFactory, old_version_id: int,
                  new_version_id: int) -> VersionDiff:
    old = get_version(sessions, old_version_id)
    new = get_version(sessions, new_version_id)
    return VersionDiff(old, new, diff_criteria(old.to_criteria(), new.to_criteria()))
