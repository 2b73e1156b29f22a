"""Labels out and in: the gold set, the training export, and human verdicts imported from CSV.

Gold set (JSONL, one line per human-reviewed response, HealthBench-like)::

    {"response_id": 12, "external_id": "r1", "dataset": "Answers",
     "rubric": "Dosing", "rubric_version": 2,
     "prompt": [{"role": "user", "content": "the query"}],   # [] when the response has none
     "completion": "the response text", "thinking": null,
     "rubrics": [{"criterion": "States the dose correctly", "name": "accurate",
                  "points": 10.0, "tags": ["section:Accuracy"],
                  "verdict": "MET", "criteria_met": true,        # null: CANNOT_ASSESS/unreviewed
                  "explanation": "the reviewer's note", "reviewer": "ana"}],
     "criteria_met": [true, ...],                               # the same, in rubric order
     "reviewed_count": 4, "criteria_count": 4,
     "human_score": 0.85, "human_raw_score": 12.5}

``prompt`` is a list of chat messages, as in HealthBench, so a multi-turn conversation can be
exported the same way later; a response without a query gets ``[]``. ``human_score`` comes from
``storage.services.reviews.human_scores`` (grading's aggregation) and is null until every
criterion is reviewed.

Training (JSONL, one line per response x run with an effective score): the response text with
the effective score (normalized when the run normalizes) and raw score, and the judge's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from grading.types import ScoringSettings, Verdict
from storage import models as m
from storage.convert import criterion_info, human_verdict_info, response_info
from storage.dto import CriterionInfo, HumanVerdictInfo
from storage.engine import SessionFactory
from storage.errors import ImportProblemsError, NotFoundError, Problem
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories import verdicts as verdict_repo
from storage.response_files import parse_file
from storage.services import reviews

RESPONSE_COLUMNS = ("response_id", "external_id", "id", "response")
CRITERION_COLUMNS = ("criterion", "criterion_name", "name")
VERDICT_COLUMNS = ("verdict",)
REVIEWER_COLUMNS = ("reviewer", "reviewer_name")
NOTE_COLUMNS = ("note", "explanation", "comment")
_BATCH = 200
_MAX_ATTEMPTS = 5


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False)


def _criteria_met(verdict: Verdict | None) -> bool | None:
    return {Verdict.MET: True, Verdict.UNMET: False}.get(verdict) if verdict else None


def _rubric_item(criterion: CriterionInfo, human: HumanVerdictInfo | None) -> dict[str, Any]:
    verdict = human.verdict if human else None
    return {
        "criterion": criterion.requirement,
        "name": criterion.name,
        "points": criterion.weight,
        "tags": [f"section:{criterion.section}"] if criterion.section else [],
        "verdict": verdict.value if verdict else None,
        "criteria_met": _criteria_met(verdict),
        "explanation": human.note if human else "",
        "reviewer": human.reviewer if human else None,
    }


def iter_gold_records(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int, *,
    complete_only: bool = False, settings: ScoringSettings | None = None,
) -> Iterator[dict[str, Any]]:
    """The human-reviewed responses, read in batches; ``complete_only`` keeps fully reviewed."""
    with sessions() as session:
        version = rubric_repo.get_version(session, rubric_version_id)
        criteria = [criterion_info(c) for c in version.criteria]
        rubric_name, number = version.rubric.name, version.number
        dataset_name = dataset_repo.get_dataset(session, dataset_id).name
        reviewed = sorted(set(session.scalars(
            select(m.HumanVerdictRow.response_id)
            .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
            .where(m.ResponseRow.dataset_id == dataset_id,
                   m.HumanVerdictRow.rubric_version_id == rubric_version_id))))
    for start in range(0, len(reviewed), _BATCH):
        ids = reviewed[start:start + _BATCH]
        with sessions() as session:
            responses = [response_info(r) for r in dataset_repo.get_responses(session, ids)]
            humans: dict[int, dict[int, HumanVerdictInfo]] = {rid: {} for rid in ids}
            for row, prev in verdict_repo.current_for_responses(session, ids, rubric_version_id):
                humans[row.response_id][row.criterion_id] = human_verdict_info(row, prev)
        scores = {s.response_id: s for s in
                  reviews.human_scores(sessions, rubric_version_id, ids, settings)}
        for response in responses:
            score = scores[response.id]
            if complete_only and not score.complete:
                continue
            items = [_rubric_item(c, humans[response.id].get(c.id)) for c in criteria]
            yield {
                "response_id": response.id,
                "external_id": response.external_id,
                "dataset": dataset_name,
                "rubric": rubric_name,
                "rubric_version": number,
                "prompt": [{"role": "user", "content": response.query}]
                if response.query is not None else [],
                "completion": response.output,
                "thinking": response.thinking,
                "rubrics": items,
                "criteria_met": [item["criteria_met"] for item in items],
                "reviewed_count": score.reviewed_count,
                "criteria_count": score.criteria_count,
                "human_score": score.score,
                "human_raw_score": score.raw_score,
            }


def export_gold_jsonl(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int, *,
    complete_only: bool = False, settings: ScoringSettings | None = None,
) -> str:
    """The gold set as JSONL text (empty when nothing is reviewed)."""
    return "".join(dumps(r) + "\n" for r in iter_gold_records(
        sessions, rubric_version_id, dataset_id, complete_only=complete_only, settings=settings))


def iter_training_records(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    run_ids: Sequence[int] | None = None,
) -> Iterator[dict[str, Any]]:
    """One record per response x run that has an effective score; failed grades are left out."""
    with sessions() as session:
        version = rubric_repo.get_version(session, rubric_version_id)
        rubric_name, number = version.rubric.name, version.number
        runs = [r for r in run_repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=dataset_id)
            if run_ids is None or r.id in set(run_ids)]
        run_fields = [(r.id, r.grader, r.model, bool(r.settings.get("normalize", True)))
                      for r in runs]
    for run_id, grader, model, normalize in run_fields:
        grades = [g for g in reviews.effective_grades_for_run(sessions, run_id)
                  if g.score is not None]
        for start in range(0, len(grades), _BATCH):
            batch = grades[start:start + _BATCH]
            with sessions() as session:
                responses = {r.id: response_info(r) for r in dataset_repo.get_responses(
                    session, [g.response_id for g in batch])}
            for grade in batch:
                response = responses[grade.response_id]
                yield {
                    "response_id": response.id,
                    "external_id": response.external_id,
                    "prompt": response.query,
                    "completion": response.output,
                    "thinking": response.thinking,
                    "rubric": rubric_name,
                    "rubric_version": number,
                    "run_id": run_id,
                    "grader": grader,
                    "model": model,
                    "normalized": normalize,
                    "score": grade.score,
                    "raw_score": grade.raw_score,
                    "judge_score": grade.judge_score,
                    "judge_raw_score": grade.judge_raw_score,
                    "reviewed_count": grade.reviewed_count,
                    "criteria_count": grade.criteria_count,
                }


def export_training_jsonl(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    run_ids: Sequence[int] | None = None,
) -> str:
    """The training export as JSONL text."""
    return "".join(dumps(r) + "\n" for r in iter_training_records(
        sessions, rubric_version_id, dataset_id, run_ids))


@dataclass(frozen=True)
class VerdictImportSummary:
    verdicts: int
    responses: int
    reviewers: tuple[str, ...]


@dataclass(frozen=True)
class _Row:
    location: str
    response_id: int
    criterion_id: int
    verdict: Verdict
    reviewer: str
    note: str


def _column(columns: Sequence[str], candidates: Sequence[str]) -> str | None:
    lowered = {c.lower().replace(" ", "_"): c for c in columns}
    return next((lowered[c] for c in candidates if c in lowered), None)


def import_human_verdicts(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int, data: bytes | str,
    filename: str | None = None,
) -> VerdictImportSummary:
    """Append the verdicts of a CSV (response id, criterion, verdict, reviewer, note).

    ``response id`` is the response's external id in the dataset; ``criterion`` its name in the
    rubric version. All or nothing: on any problem ImportProblemsError lists every one with its
    row and column, and nothing is written. Each verdict is appended to the history through the
    same path as a verdict saved in the Review page, all in one transaction.
    """
    parsed = parse_file(data, filename, fmt="csv")
    columns = {
        "response id": _column(parsed.columns, RESPONSE_COLUMNS),
        "criterion": _column(parsed.columns, CRITERION_COLUMNS),
        "verdict": _column(parsed.columns, VERDICT_COLUMNS),
        "reviewer": _column(parsed.columns, REVIEWER_COLUMNS),
    }
    missing = [name for name, column in columns.items() if column is None]
    if missing:
        raise ImportProblemsError([
            Problem("header", f"no {name!r} column (expected one of "
                              f"{', '.join(_CANDIDATES[name])}); the file has: "
                              f"{', '.join(parsed.columns)}")
            for name in missing], source=filename)
    note_column = _column(parsed.columns, NOTE_COLUMNS)
    rows = _validate(sessions, rubric_version_id, dataset_id, parsed.rows, parsed.locations,
                     columns, note_column, filename)
    for _attempt in range(_MAX_ATTEMPTS):
        try:
            with sessions.begin() as session:
                for row in rows:
                    # The Review page's append path: freezes the version, chains the history.
                    reviews._append(session, row.response_id, row.criterion_id, row.verdict,
                                    row.reviewer, row.note, reviews.UNCHECKED)
            break
        except IntegrityError:
            # A reviewer saved one of these verdicts at the same moment; nothing of this
            # import was kept, so run it again after theirs.
            continue
    else:
        raise ImportProblemsError([Problem("", "reviewers kept changing these verdicts while "
                                               "importing; nothing was imported, try again")],
                                  source=filename)
    return VerdictImportSummary(
        verdicts=len(rows), responses=len({r.response_id for r in rows}),
        reviewers=tuple(sorted({r.reviewer for r in rows})),
    )


_CANDIDATES = {
    "response id": RESPONSE_COLUMNS, "criterion": CRITERION_COLUMNS,
    "verdict": VERDICT_COLUMNS, "reviewer": REVIEWER_COLUMNS,
}


def _validate(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    records: Sequence[dict[str, Any]], locations: Sequence[str], columns: dict[str, str | None],
    note_column: str | None, filename: str | None,
) -> list[_Row]:
    with sessions() as session:
        criteria = [criterion_info(c) for c in
                    rubric_repo.get_version(session, rubric_version_id).criteria]
        dataset_repo.get_dataset(session, dataset_id)
        external_ids = {
            external: rid for rid, external in session.execute(
                select(m.ResponseRow.id, m.ResponseRow.external_id)
                .where(m.ResponseRow.dataset_id == dataset_id,
                       m.ResponseRow.external_id.is_not(None)))
        }
    by_name = {c.label: c.id for c in criteria}
    problems: list[Problem] = []
    rows: list[_Row] = []
    first_seen: dict[tuple[int, int], str] = {}
    response_col, criterion_col = columns["response id"], columns["criterion"]
    verdict_col, reviewer_col = columns["verdict"], columns["reviewer"]
    for record, where in zip(records, locations, strict=True):
        found: list[Problem] = []
        external = str(record.get(response_col) or "").strip()
        response_id = external_ids.get(external)
        if not external:
            found.append(Problem(f"{where}, column {response_col!r}", "the response id is empty"))
        elif response_id is None:
            found.append(Problem(f"{where}, column {response_col!r}",
                                 f"no response with id {external!r} in this dataset"))
        name = str(record.get(criterion_col) or "").strip()
        criterion_id = by_name.get(name)
        if criterion_id is None:
            found.append(Problem(
                f"{where}, column {criterion_col!r}",
                f"no criterion named {name!r} in this rubric version (it has: "
                f"{', '.join(by_name)})" if name else "the criterion name is empty"))
        verdict = None
        try:
            verdict = Verdict.parse(record.get(verdict_col) or "")
        except ValueError as exc:
            found.append(Problem(f"{where}, column {verdict_col!r}", str(exc)))
        reviewer = str(record.get(reviewer_col) or "").strip()
        if not reviewer:
            found.append(Problem(f"{where}, column {reviewer_col!r}",
                                 "the reviewer is empty; every verdict needs a reviewer name"))
        if response_id is not None and criterion_id is not None:
            pair = (response_id, criterion_id)
            if pair in first_seen:
                found.append(Problem(where, f"response {external!r}, criterion {name!r} is "
                                            f"already set by {first_seen[pair]}; keep one row"))
            first_seen.setdefault(pair, where)
        problems.extend(found)
        if not found and verdict is not None and response_id is not None \
                and criterion_id is not None:
            note = str(record.get(note_column) or "").strip() if note_column else ""
            rows.append(_Row(where, response_id, criterion_id, verdict, reviewer, note))
    if problems:
        raise ImportProblemsError(problems, source=filename)
    return rows


def resolve_scope(
    sessions: SessionFactory, *, rubric: str, dataset: str, version: int | None = None
) -> tuple[int, int]:
    """(rubric version id, dataset id) from names, for the command line; latest version
    unless ``version`` (its number) is given."""
    with sessions() as session:
        rubric_row = rubric_repo.find_rubric_by_name(session, rubric)
        if rubric_row is None:
            raise NotFoundError(f"no rubric named {rubric!r}; check the name on the Rubrics page")
        versions = {v.number: v.id for v in rubric_repo.list_versions(session, rubric_row.id)}
        if version is None:
            version_id = versions[max(versions)]
        elif version in versions:
            version_id = versions[version]
        else:
            raise NotFoundError(f"rubric {rubric!r} has no version {version}; it has "
                                f"{', '.join(map(str, sorted(versions)))}")
        dataset_row = dataset_repo.find_dataset_by_name(session, dataset)
        if dataset_row is None:
            raise NotFoundError(f"no dataset named {dataset!r}; check the name on the "
                                "Responses page")
        return version_id, dataset_row.id
