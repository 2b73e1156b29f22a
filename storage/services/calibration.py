"""Few-shot calibration, persisted: the reviewed examples a run shows its judge.

A calibrated run (``RunSettings.calibration``) draws its examples when it is launched, from
the responses people reviewed under its rubric (verdicts carried from earlier versions with
the same requirement text count; any dataset that is not archived): per criterion, the human
verdict in force (adjudicated, or agreed by every reviewer who answered — disputed ones are
never examples; CANNOT_ASSESS neither) with the reviewer's note as the reason; on a
multi-choice criterion, the option people chose by the same rule (never an NA option:
``calibration_candidates``). The choice itself is ``grading.calibration.choose_examples``
(balanced per verdict or per option, seeded). What was drawn is
written to ``run_examples`` in the launch's transaction, so a requeued, resumed or helped
run shows exactly the same examples, and people can audit them. Agreement for a calibrated
run leaves out the responses it used as examples (``example_response_ids``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from grading.calibration import ExampleSet, ReviewedExample, RubricExamples, choose_examples
from grading.options import CriterionOption
from grading.types import Criterion, Verdict
from storage import models as m
from storage.engine import SessionFactory
from storage.errors import StorageError
from storage.export_names import response_key
from storage.id_chunks import id_chunks
from storage.repositories import rubrics as rubric_repo
from storage.run_settings import CalibrationSettings
from storage.services.calibration_candidates import (
    Candidate,
    candidates,
    fit,
    options_of,
    scored,
)

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
    # On a multi-choice criterion: (label, count) per scored option, in the rubric's order
    # (``met``/``unmet`` are then 0).
    options: tuple[tuple[str, int], ...] | None = None

    @property
    def total(self) -> int:
        if self.options is not None:
            return sum(n for _, n in self.options)
        return self.met + self.unmet

    @property
    def breakdown(self) -> str:
        """The counts per verdict or per option, as the messages give them."""
        if self.options is not None:
            return ", ".join(f"{n} {label!r}" for label, n in self.options)
        return f"{self.met} MET, {self.unmet} UNMET"


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
    option: str | None = None  # the option people chose, on a multi-choice criterion

    @property
    def choice(self) -> str:
        return self.option if self.option is not None else self.verdict


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


def _label(criterion: m.CriterionRow) -> str:
    return criterion.name or f"criterion {criterion.position + 1}"


def _count(criterion_id: int, position: int, label: str,
           options: Sequence[CriterionOption] | None,
           found: Sequence[Candidate]) -> ReviewedCount:
    if options is not None:
        return ReviewedCount(
            criterion_id=criterion_id, position=position, label=label, met=0, unmet=0,
            options=tuple((name, sum(x.option == name for x in found))
                          for name in scored(options)))
    return ReviewedCount(criterion_id=criterion_id, position=position, label=label,
                         met=sum(x.verdict is Verdict.MET for x in found),
                         unmet=sum(x.verdict is Verdict.UNMET for x in found))


def _counts(criteria: Sequence[m.CriterionRow], found: dict[int, list[Candidate]]
            ) -> tuple[ReviewedCount, ...]:
    return tuple(_count(c.id, c.position, _label(c), options_of(c), found.get(c.id, ()))
                 for c in criteria)


def reviewed_counts(sessions: SessionFactory, rubric_version_id: int
                    ) -> tuple[ReviewedCount, ...]:
    """Per criterion, in the rubric's order: the reviewed responses that can be examples."""
    with sessions() as session:
        return _counts(*candidates(session, rubric_version_id))


def counts_for_rubric_file(sessions: SessionFactory, rubric_name: str,
                           criteria: Sequence[Criterion]) -> tuple[ReviewedCount, ...]:
    """What ``reviewed_counts`` will say for these criteria once the command line has stored
    them as the next version of ``rubric_name`` (verdicts carry from its latest version
    where the requirement text is unchanged), read before anything is written."""
    with sessions() as session:
        rubric = rubric_repo.find_rubric_by_name(session, rubric_name)
        by_text: dict[str, list[Candidate]] = {}
        if rubric is not None:
            latest = rubric_repo.latest_version(session, rubric.id)
            kept, found = candidates(session, latest.id)
            for row in kept:
                by_text.setdefault(row.requirement, found.get(row.id, []))
    counts = []
    for i, c in enumerate(criteria):
        options = tuple(c.options) if c.options is not None else None
        # The file's criterion decides which carried decisions fit it, as at launch.
        fitting = []
        for x in by_text.get(c.requirement, ()):
            fits, label = fit(options, x.option)
            if fits:
                fitting.append(replace(x, option=label))
        counts.append(_count(0, i, c.name or f"criterion {i + 1}", options, fitting))
    return tuple(counts)


def too_few(counts: Sequence[ReviewedCount], k: int) -> str | None:
    """Why ``k`` examples per criterion cannot be drawn, or None when they can."""
    short = [c for c in counts if c.total < k]
    if not short:
        return None
    listed = "; ".join(
        f"criterion {c.position + 1} ('{c.label}'): {c.total} ({c.breakdown})"
        for c in short[:5]) + (f"; and {len(short) - 5} more" if len(short) > 5 else "")
    fewest = min(c.total for c in counts)
    advice = (f"Choose k of at most {fewest}, or review more responses" if fewest else
              "Review responses on every criterion first (Review page)")
    what = ("MET/UNMET verdict" if all(c.options is None for c in short) else
            "option" if all(c.options is not None for c in short) else
            "MET/UNMET verdict or option")
    return (f"{k} examples per criterion were asked for, but fewer reviewed responses (with "
            f"an agreed or adjudicated {what}) exist for {listed}. {advice}.")


def draw_rows(session: Session, rubric_version_id: int, grader: str,
              settings: CalibrationSettings) -> list[dict]:
    """The run_examples rows (without run_id) a launch records; refuses before any write."""
    if grader == HOLISTIC:
        raise CalibrationRefusedError(
            "the rubric-as-judge grader gives one overall score, while people's verdicts are "
            "per criterion, so it cannot be calibrated with reviewed examples; use the "
            "per-criterion or one-shot grader, or turn calibration off")
    criteria, found = candidates(session, rubric_version_id)
    problem = too_few(_counts(criteria, found), settings.k)
    if problem:
        raise CalibrationRefusedError(problem)
    rows: list[dict] = []
    for criterion in criteria:
        by_id = {c.response_id: c for c in found.get(criterion.id, ())}
        options = options_of(criterion)
        chosen = choose_examples(
            [ReviewedExample(c.response_id, c.verdict, "", reason=c.reason, option=c.option)
             for c in by_id.values()], k=settings.k, seed=settings.seed,
            options=None if options is None else scored(options))
        for role, picked in (("example", chosen.examples), ("reserve", chosen.reserves)):
            for order, example in enumerate(picked):
                c = by_id[example.response_key]
                rows.append({
                    "criterion_id": criterion.id, "response_id": c.response_id, "role": role,
                    "position": order, "verdict": c.verdict.value, "reason": c.reason,
                    "status": c.status, "carried_from": c.carried_from,
                    "human_verdict_id": c.human_verdict_id, "option": c.option,
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


_Row = tuple[int, str, int, str, str, str | None]


def _build(criteria: Sequence[m.CriterionRow], rows: Iterable[_Row],
           texts: dict[int, tuple[str, str | None]], k: int) -> RubricExamples:
    """RubricExamples from (criterion id, role, response id, verdict, reason, option) in
    order."""
    by_criterion: dict[int, dict[str, list[ReviewedExample]]] = defaultdict(
        lambda: {"example": [], "reserve": []})
    for criterion_id, role, response_id, verdict, reason, option in rows:
        output, query = texts[response_id]
        by_criterion[criterion_id][role].append(ReviewedExample(
            response_id, Verdict(verdict), output, query=query, reason=reason, option=option))
    return RubricExamples(
        tuple(ExampleSet(tuple(by_criterion[c.id]["example"]),
                         tuple(by_criterion[c.id]["reserve"]), requested=k)
              for c in criteria),
        tuple(c.requirement for c in criteria))


def _texts(session: Session, response_ids: Iterable[int]) -> dict[int, tuple[str, str | None]]:
    ids = sorted(set(response_ids))
    found: dict[int, tuple[str, str | None]] = {}
    for chunk in id_chunks(ids):
        for rid, output, query in session.execute(
                select(m.ResponseRow.id, m.ResponseRow.output, m.ResponseRow.query)
                .where(m.ResponseRow.id.in_(chunk))):
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
        rows = [(r.criterion_id, r.role, r.response_id, r.verdict, r.reason, r.option)
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
    rows = [(r["criterion_id"], r["role"], r["response_id"], r["verdict"], r["reason"],
             r["option"]) for r in drawn]
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
            reason=row.reason, status=row.status, carried_from=row.carried_from,
            option=row.option)
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
