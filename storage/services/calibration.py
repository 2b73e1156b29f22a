"""Few-shot calibration, persisted: the reviewed examples a run shows its judge.

A calibrated run (``RunSettings.calibration``) draws its examples when it is launched, from
the responses people reviewed under its rubric (verdicts carried from earlier versions with
the same requirement text count; any dataset that is not archived): per criterion, the human
verdict in force (adjudicated, or agreed by every reviewer who answered — disputed ones are
never examples; CANNOT_ASSESS neither) with the reviewer's note as the reason. The choice
itself is ``grading.calibration.choose_examples`` (balanced, seeded). What was drawn is
written to ``run_examples`` in the launch's transaction, so a requeued, resumed or helped
run shows exactly the same examples, and people can audit them. Agreement for a calibrated
run leaves out the responses it used as examples (``example_response_ids``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from grading.calibration import ExampleSet, ReviewedExample, RubricExamples, choose_examples
from grading.types import Criterion, Verdict
from storage import models as m
from storage.dto import HumanDecision
from storage.engine import SessionFactory
from storage.errors import StorageError
from storage.export_names import response_key
from storage.repositories import rubrics as rubric_repo
from storage.repositories import verdicts as verdict_repo
from storage.run_settings import CalibrationSettings
from storage.services import consensus

HOLISTIC = "rubric_as_judge"


class CalibrationRefusedError(StorageError, ValueError):
    """A calibrated run cannot be launched as asked (too few reviewed examples, a holistic
    grader); the message says what to change. Nothing is written."""


@dataclass(frozen=True)
class ReviewedCount:
    """How many reviewed responses can be examples for one criterion."""

    criterion_id: int
    position: int
    label: str
    met: int
    unmet: int

    @property
    def total(self) -> int:
        return self.met + self.unmet


@dataclass(frozen=True)
class RunExampleInfo:
    """One recorded example (or reserve) of a calibrated run, for the page and exports."""

    criterion_id: int
    criterion_position: int
    criterion_label: str
    response_id: int
    response_label: str  # the user's id, or "#<id>"
    dataset_name: str
    role: str  # "example" | "reserve"
    order: int
    verdict: str
    reason: str
    status: str  # agreed | adjudicated
    carried_from: int | None


@dataclass(frozen=True)
class HeldOut:
    """What a calibrated run's agreement is measured on, in one dataset."""

    k: int
    reviewed: int  # responses of the dataset with a human verdict
    examples: int  # of those, shown by the run as examples (reserves included)

    @property
    def held_out(self) -> int:
        return self.reviewed - self.examples

    @classmethod
    def of(cls, k: int, reviewed: set[int], used: set[int]) -> HeldOut:
        return cls(k=k, reviewed=len(reviewed), examples=len(reviewed & used))


@dataclass(frozen=True)
class _Candidate:
    response_id: int
    verdict: Verdict
    reason: str
    status: str
    carried_from: int | None
    human_verdict_id: int | None


def _reason(decision: HumanDecision) -> str:
    """The note of the verdict in force; for agreed reviewers, the first who wrote one."""
    notes = [decision.applied.note if decision.applied else ""]
    if decision.status == "agreed":
        notes += [r.note for r in decision.reviews]
    return next((n.strip() for n in notes if n and n.strip()), "")


def _candidates(session: Session, rubric_version_id: int
                ) -> tuple[list[m.CriterionRow], dict[int, list[_Candidate]]]:
    """This version's criteria and, per criterion id, every response that can be an example."""
    version = rubric_repo.get_version(session, rubric_version_id)
    criteria = list(version.criteria)
    sources = verdict_repo.carry_sources(session, rubric_version_id)
    ids = list(session.scalars(
        select(m.HumanVerdictRow.response_id)
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .join(m.DatasetRow, m.DatasetRow.id == m.ResponseRow.dataset_id)
        .where(m.HumanVerdictRow.criterion_id.in_(list(sources)),
               m.DatasetRow.archived.is_(False))
        .distinct()))
    found: dict[int, list[_Candidate]] = defaultdict(list)
    decided = consensus.decisions(session, ids, rubric_version_id)
    for rid in sorted(decided):
        for cid, decision in decided[rid].items():
            if decision.disputed or decision.verdict not in (Verdict.MET, Verdict.UNMET):
                continue
            if decision.applied is not None and decision.applied.option is not None:
                continue  # a chosen option, stored beside MET: never a MET example
            found[cid].append(_Candidate(
                response_id=rid, verdict=decision.verdict, reason=_reason(decision),
                status=decision.status, carried_from=decision.carried_from,
                human_verdict_id=decision.applied.id if decision.applied else None))
    return criteria, found


def _label(criterion: m.CriterionRow) -> str:
    return criterion.name or f"criterion {criterion.position + 1}"


def _counts(criteria: Sequence[m.CriterionRow], found: dict[int, list[_Candidate]]
            ) -> tuple[ReviewedCount, ...]:
    return tuple(
        ReviewedCount(criterion_id=c.id, position=c.position, label=_label(c),
                      met=sum(x.verdict is Verdict.MET for x in found.get(c.id, ())),
                      unmet=sum(x.verdict is Verdict.UNMET for x in found.get(c.id, ())))
        for c in criteria)


def reviewed_counts(sessions: SessionFactory, rubric_version_id: int
                    ) -> tuple[ReviewedCount, ...]:
    """Per criterion, in the rubric's order: the reviewed responses that can be examples."""
    with sessions() as session:
        return _counts(*_candidates(session, rubric_version_id))


def counts_for_rubric_file(sessions: SessionFactory, rubric_name: str,
                           criteria: Sequence[Criterion]) -> tuple[ReviewedCount, ...]:
    """What ``reviewed_counts`` will say for these criteria once the command line has stored
    them as the next version of ``rubric_name`` (verdicts carry from its latest version
    where the requirement text is unchanged), read before anything is written."""
    with sessions() as session:
        rubric = rubric_repo.find_rubric_by_name(session, rubric_name)
        by_text: dict[str, ReviewedCount] = {}
        if rubric is not None:
            latest = rubric_repo.latest_version(session, rubric.id)
            for count in _counts(*_candidates(session, latest.id)):
                text = next(c.requirement for c in latest.criteria if c.id == count.criterion_id)
                by_text.setdefault(text, count)
    return tuple(
        ReviewedCount(criterion_id=0, position=i, label=c.name or f"criterion {i + 1}",
                      met=by_text[c.requirement].met if c.requirement in by_text else 0,
                      unmet=by_text[c.requirement].unmet if c.requirement in by_text else 0)
        for i, c in enumerate(criteria))


def too_few(counts: Sequence[ReviewedCount], k: int) -> str | None:
    """Why ``k`` examples per criterion cannot be drawn, or None when they can."""
    short = [c for c in counts if c.total < k]
    if not short:
        return None
    listed = "; ".join(
        f"criterion {c.position + 1} ('{c.label}'): {c.total} ({c.met} MET, {c.unmet} UNMET)"
        for c in short[:5]) + (f"; and {len(short) - 5} more" if len(short) > 5 else "")
    fewest = min(c.total for c in counts)
    advice = (f"Choose k of at most {fewest}, or review more responses" if fewest else
              "Review responses on every criterion first (Review page)")
    return (f"{k} examples per criterion were asked for, but fewer reviewed responses (with "
            f"an agreed or adjudicated MET/UNMET verdict) exist for {listed}. {advice}.")


def draw_rows(session: Session, rubric_version_id: int, grader: str,
              settings: CalibrationSettings) -> list[dict]:
    """The run_examples rows (without run_id) a launch records; refuses before any write."""
    if grader == HOLISTIC:
        raise CalibrationRefusedError(
            "the rubric-as-judge grader gives one overall score, while people's verdicts are "
            "per criterion, so it cannot be calibrated with reviewed examples; use the "
            "per-criterion or one-shot grader, or turn calibration off")
    criteria, found = _candidates(session, rubric_version_id)
    problem = too_few(_counts(criteria, found), settings.k)
    if problem:
        raise CalibrationRefusedError(problem)
    rows: list[dict] = []
    for criterion in criteria:
        by_id = {c.response_id: c for c in found.get(criterion.id, ())}
        chosen = choose_examples(
            [ReviewedExample(c.response_id, c.verdict, "", reason=c.reason)
             for c in by_id.values()], k=settings.k, seed=settings.seed)
        for role, picked in (("example", chosen.examples), ("reserve", chosen.reserves)):
            for order, example in enumerate(picked):
                c = by_id[example.response_key]
                rows.append({
                    "criterion_id": criterion.id, "response_id": c.response_id, "role": role,
                    "position": order, "verdict": c.verdict.value, "reason": c.reason,
                    "status": c.status, "carried_from": c.carried_from,
                    "human_verdict_id": c.human_verdict_id,
                })
    return rows


def record_examples(session: Session, run_id: int, rows: Sequence[dict]) -> None:
    if rows:
        session.execute(insert(m.RunExampleRow.__table__),
                        [{**row, "run_id": run_id} for row in rows])


def _rows(session: Session, run_id: int) -> list[m.RunExampleRow]:
    return list(session.scalars(
        select(m.RunExampleRow).where(m.RunExampleRow.run_id == run_id)
        .order_by(m.RunExampleRow.criterion_id, m.RunExampleRow.role,
                  m.RunExampleRow.position)))


def _build(criteria: Sequence[m.CriterionRow], rows: Iterable[tuple[int, str, int, str, str]],
           texts: dict[int, tuple[str, str | None]], k: int) -> RubricExamples:
    """RubricExamples from (criterion id, role, response id, verdict, reason) in order."""
    by_criterion: dict[int, dict[str, list[ReviewedExample]]] = defaultdict(
        lambda: {"example": [], "reserve": []})
    for criterion_id, role, response_id, verdict, reason in rows:
        output, query = texts[response_id]
        by_criterion[criterion_id][role].append(ReviewedExample(
            response_id, Verdict(verdict), output, query=query, reason=reason))
    return RubricExamples(
        tuple(ExampleSet(tuple(by_criterion[c.id]["example"]),
                         tuple(by_criterion[c.id]["reserve"]), requested=k)
              for c in criteria),
        tuple(c.requirement for c in criteria))


def _texts(session: Session, response_ids: Iterable[int]) -> dict[int, tuple[str, str | None]]:
    ids = sorted(set(response_ids))
    found: dict[int, tuple[str, str | None]] = {}
    for start in range(0, len(ids), 500):
        for rid, output, query in session.execute(
                select(m.ResponseRow.id, m.ResponseRow.output, m.ResponseRow.query)
                .where(m.ResponseRow.id.in_(ids[start:start + 500]))):
            found[rid] = (output, query)
    return found


def load_examples(sessions: SessionFactory, run_id: int) -> RubricExamples | None:
    """The examples run ``run_id`` recorded at launch, with their texts; None when the run
    is not calibrated."""
    with sessions() as session:
        run = session.get(m.RunRow, run_id)
        if run is None or not (run.settings or {}).get("calibration"):
            return None
        k = int(run.settings["calibration"]["k"])
        criteria = rubric_repo.criteria_of(session, run.rubric_version_id)
        rows = [(r.criterion_id, r.role, r.response_id, r.verdict, r.reason)
                for r in _rows(session, run_id)]
        texts = _texts(session, (r[2] for r in rows))
    return _build(criteria, rows, texts, k)


def preview_examples(sessions: SessionFactory, rubric_version_id: int, grader: str,
                     settings: CalibrationSettings) -> RubricExamples:
    """The examples a launch now would draw (for the estimate); nothing is written."""
    with sessions() as session:
        drawn = draw_rows(session, rubric_version_id, grader, settings)
        criteria = rubric_repo.criteria_of(session, rubric_version_id)
        texts = _texts(session, (r["response_id"] for r in drawn))
    rows = [(r["criterion_id"], r["role"], r["response_id"], r["verdict"], r["reason"])
            for r in drawn]
    return _build(criteria, rows, texts, settings.k)


def list_run_examples(sessions: SessionFactory, run_id: int) -> list[RunExampleInfo]:
    """What run ``run_id`` showed its judge, per criterion in the rubric's order."""
    with sessions() as session:
        found = session.execute(
            select(m.RunExampleRow, m.CriterionRow, m.ResponseRow.external_id,
                   m.DatasetRow.name)
            .join(m.CriterionRow, m.CriterionRow.id == m.RunExampleRow.criterion_id)
            .join(m.ResponseRow, m.ResponseRow.id == m.RunExampleRow.response_id)
            .join(m.DatasetRow, m.DatasetRow.id == m.ResponseRow.dataset_id)
            .where(m.RunExampleRow.run_id == run_id)
            .order_by(m.CriterionRow.position, m.RunExampleRow.role, m.RunExampleRow.position)
        ).all()
        return [RunExampleInfo(
            criterion_id=c.id, criterion_position=c.position, criterion_label=_label(c),
            response_id=row.response_id, response_label=response_key(row.response_id, ext),
            dataset_name=dataset, role=row.role, order=row.position, verdict=row.verdict,
            reason=row.reason, status=row.status, carried_from=row.carried_from)
            for row, c, ext, dataset in found]


def example_response_ids(session: Session, run_ids: Iterable[int]) -> dict[int, set[int]]:
    """Per calibrated run, every response it showed as an example (reserves included): the
    responses its agreement must leave out."""
    ids = list(run_ids)
    found: dict[int, set[int]] = {}
    if not ids:
        return found
    for run_id, response_id in session.execute(
            select(m.RunExampleRow.run_id, m.RunExampleRow.response_id)
            .where(m.RunExampleRow.run_id.in_(ids))):
        found.setdefault(run_id, set()).add(response_id)
    return found
