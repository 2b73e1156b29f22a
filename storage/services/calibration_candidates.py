"""Which reviewed responses can be a calibration example, per criterion of a version.

The human decision in force (``storage.services.consensus``, read from
``effective_verdicts``: adjudicated, or agreed by every reviewer who answered; never
disputed, never CANNOT_ASSESS), with the reviewer's note as the reason. On a multi-choice
criterion the decision is the option people chose, by the same rule; see :func:`fit` for
the decisions that cannot be examples of a criterion.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from grading.options import CriterionOption, find_option
from grading.types import Verdict
from storage import models as m
from storage.convert import criterion_info
from storage.dto import HumanDecision
from storage.repositories import rubrics as rubric_repo
from storage.services import effective_reads


@dataclass(frozen=True)
class Candidate:
    response_id: int
    verdict: Verdict
    reason: str
    status: str
    carried_from: int | None
    human_verdict_id: int | None
    option: str | None = None

    @property
    def choice(self) -> Verdict | str:
        return self.option if self.option is not None else self.verdict


def _reason(decision: HumanDecision) -> str:
    """The note of the verdict in force; for agreed reviewers, the first who wrote one."""
    notes = [decision.applied.note if decision.applied else ""]
    if decision.status == "agreed":
        notes += [r.note for r in decision.reviews]
    return next((n.strip() for n in notes if n and n.strip()), "")


def candidates(session: Session, rubric_version_id: int
                ) -> tuple[list[m.CriterionRow], dict[int, list[Candidate]]]:
    """This version's criteria and, per criterion id, every response that can be an example."""
    version = rubric_repo.get_version(session, rubric_version_id)
    criteria = list(version.criteria)
    options = {c.id: options_of(c) for c in criteria}
    found: dict[int, list[Candidate]] = defaultdict(list)
    decided = effective_reads.decisions(session, rubric_version_id,
                                        decided_ids(session, rubric_version_id))
    for rid in sorted(decided):
        for cid, decision in decided[rid].items():
            if decision.disputed or decision.verdict not in (Verdict.MET, Verdict.UNMET):
                continue
            fits, option = fit(options.get(cid),
                               decision.applied.option if decision.applied else None)
            if not fits:
                continue
            found[cid].append(Candidate(
                response_id=rid, verdict=decision.verdict, reason=_reason(decision),
                status=decision.status, carried_from=decision.carried_from,
                human_verdict_id=decision.applied.id if decision.applied else None,
                option=option))
    return criteria, found


def decided_ids(session: Session, rubric_version_id: int) -> list[int]:
    """The responses of live datasets with a decided MET / UNMET under the version, from
    ``effective_verdicts`` (kept equal to the consensus rule), not every verdict."""
    return list(session.scalars(decided_ids_query(rubric_version_id)))


def decided_ids_query(rubric_version_id: int):
    ev = m.EffectiveVerdictRow
    return (select(ev.response_id)
            .join(m.DatasetRow, m.DatasetRow.id == ev.dataset_id)
            .where(ev.rubric_version_id == rubric_version_id, m.DatasetRow.archived.is_(False),
                   ev.verdict.in_([Verdict.MET.value, Verdict.UNMET.value]))
            .distinct().order_by(ev.response_id))


def options_of(criterion: m.CriterionRow) -> tuple[CriterionOption, ...] | None:
    return criterion_info(criterion).options


def scored(options: Sequence[CriterionOption]) -> tuple[str, ...]:
    return tuple(o.label for o in options if not o.na)


def fit(options: Sequence[CriterionOption] | None, chosen: str | None
        ) -> tuple[bool, str | None]:
    """(whether a decision with option ``chosen`` can be an example of a criterion with
    these options, the option label it shows). It cannot when it is an option on a binary
    criterion, a MET/UNMET on a multi-choice one, or a label the criterion has no scored
    option for (an NA option, or one a later version removed: verdicts carry by requirement
    text only). The label is the criterion's own spelling, as the judge's list shows it."""
    if options is None or chosen is None:
        return (options is None) == (chosen is None), None
    index = find_option(options, chosen)
    if index is None or options[index].na:
        return False, None
    return True, options[index].label
