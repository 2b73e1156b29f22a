"""Few-shot calibration of a comparison's judge with pairs people decided, persisted.

A calibrated comparison draws its examples when it is created, from the pairs of every
comparison on the same rubric version (and the same holistic or per-criterion questions)
where people's decision is in force — adjudicated, or agreed by every reviewer who answered
(storage.services.pair_consensus); disputed and CANNOT_ASSESS ones never are — with the
applied preference's note as the reason. The choice is
``grading.pairwise.calibration.choose_pair_examples`` (balanced between A, B and TIE, seeded).
What was drawn is written into the comparison's ``settings["calibration"]`` in the creating
transaction (response ids and texts, side, reason), so a resumed comparison shows the same examples
and people can audit them. The new comparison's pairs with the same two texts as an example
are listed in ``left_out`` (by match key) and left out of its figures, as a calibrated
grading run leaves its examples out of agreement.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from grading.pairwise import aggregation
from grading.pairwise.calibration import (
    PairExample,
    PairExamples,
    PairExampleSet,
    choose_pair_examples,
)
from grading.pairwise.matching import Pair
from grading.types import Criterion
from storage import models as m
from storage.errors import InvalidInputError
from storage.run_settings import MAX_EXAMPLES
from storage.services import pair_consensus

KEY = "calibration"


@dataclass(frozen=True)
class PairCalibration:
    """Up to ``k`` decided pairs per criterion shown to the judge, drawn with ``seed``."""

    k: int
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or not 1 <= self.k <= MAX_EXAMPLES:
            raise InvalidInputError(
                f"calibration examples per criterion: a whole number from 1 to "
                f"{MAX_EXAMPLES}, not {self.k!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise InvalidInputError(f"the calibration seed is a whole number >= 0, not "
                                    f"{self.seed!r}")


@dataclass(frozen=True)
class _Candidate:
    example: PairExample
    a_id: int
    b_id: int


def _candidates(session: Session, rubric_version_id: int, holistic: bool
                ) -> dict[int, list[_Candidate]]:
    """Per position, every pair people decided on it (one per ordered pair of responses)."""
    rows = session.execute(
        select(m.ComparisonPairRow.id, m.ComparisonPairRow.response_a_id,
               m.ComparisonPairRow.response_b_id)
        .join(m.ComparisonRow, m.ComparisonRow.id == m.ComparisonPairRow.comparison_id)
        .where(m.ComparisonRow.rubric_version_id == rubric_version_id,
               m.ComparisonRow.holistic == holistic, m.ComparisonPairRow.kind == "pair")
        .order_by(m.ComparisonPairRow.id)).all()
    decided = pair_consensus.decisions(session, [pid for pid, _a, _b in rows])
    ids = {i for pid, a, b in rows if pid in decided for i in (a, b)}
    texts = _responses(session, ids)
    found: dict[int, list[_Candidate]] = defaultdict(list)
    seen: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for pid, a_id, b_id in rows:
        for position, decision in decided.get(pid, {}).items():
            if decision.status == "disputed" or decision.side not in ("A", "B", "TIE"):
                continue
            if (a_id, b_id) in seen[position]:  # the same pair in another comparison
                continue
            seen[position].add((a_id, b_id))
            (a_text, query), (b_text, _q) = texts[a_id], texts[b_id]
            # agreed: the latest reviewer who gave a reason speaks for them all
            notes = [p.note.strip() for p in (decision.applied, *reversed(decision.reviews))
                     if p is not None and p.note.strip()]
            note = notes[0] if notes else ""
            found[position].append(_Candidate(
                PairExample(f"{a_id}:{b_id}", a_text, b_text, decision.side, query, note),
                a_id, b_id))
    return found


def _responses(session: Session, ids: set[int]) -> dict[int, tuple[str, str | None]]:
    if not ids:
        return {}
    return {rid: (output, query) for rid, output, query in session.execute(
        select(m.ResponseRow.id, m.ResponseRow.output, m.ResponseRow.query)
        .where(m.ResponseRow.id.in_(ids)))}


def draw(session: Session, *, rubric_version_id: int, holistic: bool,
         positions: Sequence[int], calibration: PairCalibration,
         new_pairs: Sequence[Pair]) -> dict[str, Any]:
    """The examples of a new comparison, as stored in its settings; InvalidInputError
    (nothing written) when people have decided no pair of this rubric version yet."""
    found = _candidates(session, rubric_version_id, holistic)
    if not any(found.get(p) for p in positions):
        raise InvalidInputError(
            "no pair compared on this rubric version has a preference people decided (agreed "
            "or adjudicated) yet: review pairs on the Review pairs page first, or start the "
            "comparison without calibration examples")
    examples, notes = [], []
    for position in positions:
        by_key = {c.example.key: c for c in found.get(position, [])}
        chosen = (choose_pair_examples([c.example for c in by_key.values()],
                                       k=calibration.k, seed=calibration.seed)
                  if by_key else PairExampleSet((), calibration.k, "no decided pair"))
        if chosen.note:
            notes.append(f"criterion {position + 1}: {chosen.note}")
        # The texts are kept with the draw: the examples' own comparison (and its datasets)
        # may be deleted later, and a resumed comparison must still show the same examples.
        examples += [{"position": position, "a_id": by_key[e.key].a_id,
                      "b_id": by_key[e.key].b_id, "side": e.preference, "reason": e.reason,
                      "a_text": e.first, "b_text": e.second, "query": e.query}
                     for e in chosen.examples]
    shown = [c.example for p in positions for c in found.get(p, [])
             if any(x["a_id"] == c.a_id and x["b_id"] == c.b_id and x["position"] == p
                    for x in examples)]
    left_out = sorted({pair.key for pair in new_pairs for e in shown
                       if e.same_texts(pair.a.text["output"], pair.b.text["output"])})
    return {"k": calibration.k, "seed": calibration.seed, "examples": examples,
            "left_out": left_out, "note": "; ".join(notes)}


def left_out_keys(settings: dict[str, Any] | None) -> frozenset[str]:
    """The match keys of a comparison's pairs that are calibration examples."""
    return frozenset((settings or {}).get(KEY, {}).get("left_out", ()))


def examples_for(session: Session, settings: dict[str, Any] | None,
                 criteria: Sequence[Criterion], holistic: bool) -> PairExamples | None:
    """The recorded examples, ready for PairwiseGrader; None for an uncalibrated one."""
    recorded = (settings or {}).get(KEY)
    if not recorded:
        return None
    # Draws stored before the texts were kept with them read the responses (those deleted
    # since are left out rather than failing the comparison).
    stored = recorded["examples"]
    texts = _responses(session, {i for x in stored if "a_text" not in x
                                 for i in (x["a_id"], x["b_id"])})
    rows = [x if "a_text" in x else
            {**x, "a_text": texts[x["a_id"]][0], "b_text": texts[x["b_id"]][0],
             "query": texts[x["a_id"]][1]}
            for x in stored if "a_text" in x or (x["a_id"] in texts and x["b_id"] in texts)]
    questions = [aggregation.HOLISTIC_CRITERION] if holistic else list(criteria)
    sets = []
    for position in range(len(questions)):
        shown = tuple(
            PairExample(f"{x['a_id']}:{x['b_id']}", x["a_text"], x["b_text"], x["side"],
                        x.get("query"), x.get("reason", ""))
            for x in rows if x["position"] == position)
        sets.append(PairExampleSet(shown, recorded["k"]))
    return PairExamples(tuple(sets), tuple(q.requirement for q in questions))
