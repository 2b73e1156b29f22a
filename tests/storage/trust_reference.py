"""The trust report's sample and verdict codes as they were computed before they were
vectorised (a Python dict or list per (response, criterion)), kept verbatim as the reference
the numpy computation is compared with (tests/storage/test_trust_codes.py)."""

from __future__ import annotations

import json

import numpy as np
from sqlalchemy import Text, cast, select

from grading.panels import combine_options, combine_verdicts
from storage import models as m

_UNSEEN = object()


def code_matrix(verdicts, frame):
    table, positions = frame.lookup, frame.positions
    rows, cols, found_codes = [], [], []
    for (rid, cid), choice in verdicts.items():
        hit = table.get((cid, choice))
        row = positions.get(rid)
        if hit is not None and row is not None:
            rows.append(row)
            cols.append(hit[0])
            found_codes.append(hit[1])
    found = np.full((len(positions), len(frame.columns)), -1, dtype=np.int32)
    found[rows, cols] = found_codes
    return found


def within_samples(session, run_ids: list[int]
                   ) -> dict[int, tuple[int, dict[tuple[int, int], list]]]:
    counts = {}
    for run_id, settings in session.execute(
            select(m.RunRow.id, m.RunRow.settings).where(m.RunRow.id.in_(run_ids))):
        count = int(((settings or {}).get("extra") or {}).get("samples", 1))
        if count > 1:
            counts[run_id] = count
    found: dict[int, tuple[int, dict[tuple[int, int], list]]] = {
        run_id: (count, {}) for run_id, count in counts.items()}
    if not counts:
        return found
    rows = session.execute(
        select(m.GradeRow.run_id, m.GradeRow.response_id, m.GradeCriterionRow.criterion_id,
               cast(m.GradeCriterionRow.samples, Text))
        .join(m.GradeRow, m.GradeRow.id == m.GradeCriterionRow.grade_id)
        .where(m.GradeRow.run_id.in_(list(counts)))).all()
    parsed = json.loads("[" + ",".join(text or "null" for *_key, text in rows) + "]")
    for (run_id, rid, cid, _text), choices in zip(rows, parsed, strict=True):
        if choices:
            found[run_id][1][rid, cid] = choices
    return found


def stack_choices(frame, seen, count: int, stored: dict[tuple[int, int], list]):
    positions, columns, lookup = frame.positions, frame.columns, frame.lookup
    stacked = np.full((len(positions), len(columns), count), -1, dtype=np.int32)
    rows, cols, codes = [], [], []
    for (rid, cid), choices in stored.items():
        row, column = positions.get(rid), columns.get(cid)
        if row is None or column is None or (rid, cid) not in seen:
            continue
        found = [lookup.get((cid, choice), (0, -1))[1] for choice in choices[:count]]
        if len(found) == count:
            rows.append(row)
            cols.append(column)
            codes.append(found)
    if rows:
        stacked[rows, cols, :] = codes
    return stacked


def _member_samples(data, within, groups, run_id: int) -> list[dict]:
    seen = data.verdicts.get(f"run:{run_id}", {})
    if run_id in within:
        count, stored = within[run_id]
        return [{key: (choices[s] or None) if s < len(choices) else None
                 for key, choices in stored.items() if key in seen} for s in range(count)]
    live, _gone = groups.get(f"run:{run_id}", ((run_id,), ()))
    runs = [run_id, *(r for r in live if r != run_id)] if run_id in live else [run_id]
    return [data.verdicts.get(f"run:{r}", {}) for r in runs]


def panel_codes(data, frame, within, groups, key: str, panel):
    """(count, responses x criteria x samples codes or None below two samples)."""
    members = [_member_samples(data, within, groups, member.run.id)
               for member in panel.members]
    count = min(len(samples) for samples in members)
    if count < 2:
        return count, None
    criteria = {c.id: c for c in data.criteria}
    rubric = {c.id: c.to_criterion() for c in data.criteria if c.is_multi_choice}
    weights = ([member.weight for member in panel.members] if panel.rule == "weighted"
               else None)
    decided: dict[tuple, object] = {}

    def decide(cid: int, votes: tuple) -> object:
        found = decided.get((cid, votes), _UNSEEN)
        if found is _UNSEEN:
            if cid in rubric:
                found = combine_options(votes, rubric[cid]).choice
            else:
                found = combine_verdicts(
                    votes, panel.rule, criterion_weight=criteria[cid].weight,
                    weights=weights, tie_rule=panel.tie_rule).verdict
            decided[cid, votes] = found
        return found

    seen = data.verdicts.get(key, {})
    combined = {
        (rid, cid): [decide(cid, tuple(samples[s].get((rid, cid)) for samples in members))
                     for s in range(count)]
        for rid, cid in seen}
    return count, stack_choices(frame, seen, count, combined)
