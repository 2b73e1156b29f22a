"""Shared builders: rubrics, datasets, and EvaluationReports made by grading's own functions."""

from __future__ import annotations

from collections.abc import Sequence

from grading.aggregation import final_penalty, holistic_to_scores, score_verdicts
from grading.length_penalty import apply_length_penalty
from grading.types import (
    Criterion,
    CriterionReport,
    EvaluationReport,
    ScoringSettings,
    ToGradeInput,
    TokenUsage,
    Verdict,
)
from storage.dto import RubricVersionInfo
from storage.services import datasets, rubrics, runs
from tests.actors import ADMIN

CRITERIA = [
    Criterion(name="accurate", requirement="States the dose correctly", weight=10,
              section="Accuracy"),
    Criterion(name="cites", requirement="Cites a source", weight=5, section="Accuracy"),
    Criterion(name="concise", requirement="Is concise", weight=2.5, section="Style"),
    Criterion(name="harmful", requirement="Recommends a harmful action", weight=-8,
              section="Safety"),
]


def judge_report(
    criteria: Sequence[Criterion], verdicts: Sequence[Verdict | None],
    settings: ScoringSettings, to_grade: ToGradeInput, *, cost: float | None = 0.002,
) -> EvaluationReport:
    """What a per-criterion grader returns, with the score made by grading.aggregation."""
    score = raw = penalty = None
    error = None
    cannot_assess = sum(1 for v in verdicts if v is Verdict.CANNOT_ASSESS)
    if all(v is not None for v in verdicts):
        aggregate, penalty, score = score_verdicts(criteria, verdicts, settings, to_grade)
        raw = aggregate.raw_score
    else:
        error = "the judge failed on some criteria"
    return EvaluationReport(
        score=score, raw_score=raw, error=error, cannot_assess_count=cannot_assess,
        length_penalty=penalty,
        report=[
            CriterionReport(**c.model_dump(), verdict=v, reason=f"reason {i}",
                            error=None if v is not None else "no answer")
            for i, (c, v) in enumerate(zip(criteria, verdicts, strict=True))
        ],
        token_usage=TokenUsage(prompt_tokens=100, completion_tokens=20, total_tokens=120),
        completion_cost=cost,
    )


def holistic_report(
    criteria: Sequence[Criterion], llm_score: float, settings: ScoringSettings,
    to_grade: ToGradeInput,
) -> EvaluationReport:
    """What RubricAsJudge returns: a holistic 0-100 score and no per-criterion verdicts."""
    aggregate = holistic_to_scores(criteria, llm_score, normalize=settings.normalize)
    penalty = final_penalty(settings, to_grade)
    score = apply_length_penalty(aggregate.score, penalty or 0.0, normalize=settings.normalize)
    return EvaluationReport(score=score, raw_score=aggregate.raw_score,
                            llm_raw_score=llm_score, length_penalty=penalty)


def make_rubric(sessions, name: str = "Dosing", criteria=CRITERIA) -> RubricVersionInfo:
    return rubrics.create_rubric(sessions, name, criteria, actor=ADMIN)


def make_dataset(sessions, name: str = "Answers", count: int = 3, **fields):
    rows = [{"id": f"r{i}", "query": f"question {i}", "text": f"answer {i}", **fields}
            for i in range(count)]
    dataset = datasets.create_dataset(sessions, name, responses=rows, actor=ADMIN)
    return dataset, datasets.list_responses(sessions, dataset.id, limit=None)


def make_run(sessions, version_id: int, dataset_id: int, grader="per_criterion", **settings):
    return runs.create_run(
        sessions, rubric_version_id=version_id, dataset_id=dataset_id, grader=grader,
        model="openai/test-judge", settings=settings, actor=ADMIN,
    )


class Calls:
    """Counts the calls of the real ``owner.name`` (wrapped, not replaced) for a test."""

    def __init__(self, monkeypatch, owner, name: str) -> None:
        self.calls = 0
        real = getattr(owner, name)

        def wrapped(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapped)


def another_process(db_url: str):
    """A session factory on its own engine: what another app process opens."""
    from storage.engine import create_db_engine, make_session_factory

    return make_session_factory(create_db_engine(db_url))


def delete_oldest_verdict(sessions) -> None:
    """What deleting a rubric's or dataset's verdicts does, for one verdict: the oldest one
    no other replaces (not the newest: SQLite would give its id to the next verdict, the
    same stamp), with its effective rows, and the effective verdicts rebuilt."""
    from sqlalchemy import delete, func, select

    from storage import models as m
    from storage.services import effective_upkeep

    with sessions.begin() as session:
        hv = m.HumanVerdictRow
        gone = session.scalar(select(func.min(hv.id)).where(
            hv.id.not_in(select(hv.replaces_id).where(hv.replaces_id.is_not(None)))))
        session.execute(delete(m.EffectiveVerdictRow).where(
            m.EffectiveVerdictRow.human_verdict_id == gone))
        session.execute(delete(hv).where(hv.id == gone))
        effective_upkeep.rebuild(session)
