"""Labels out and in: the gold set, the training export, and human verdicts imported from CSV.

Gold set (JSONL, one line per human-reviewed response, HealthBench-like)::

    {"response_id": "r1", "workbench_response_id": 12, "dataset": "Answers",
     "rubric": "Dosing", "rubric_version": 2,
     "prompt": [{"role": "user", "content": "the query"}],   # [] when the response has none
     "completion": "the response text", "thinking": null, "reference": null,
     "rubrics": [{"criterion": "States the dose correctly", "name": "accurate",
                  "points": 10.0, "tags": ["section:Accuracy"],
                  "verdict": "MET", "criteria_met": true,        # null: CANNOT_ASSESS/unreviewed
                  "option_value": null,          # a rating: verdict is the option's label
                  "explanation": "the reviewer's note", "reviewer": "ana"}],
     "criteria_met": [true, ...],                               # the same, in rubric order
     "reviewed_count": 4, "criteria_count": 4,
     "human_score": 0.85, "human_raw_score": 12.5}

``response_id`` is the user's id of the response (``#<number>`` when it has none), as in
every export; ``workbench_response_id`` is the database's id. ``prompt`` is a list of chat
messages, as in HealthBench, so a multi-turn conversation can be exported the same way
later; a response without a query gets ``[]``. ``human_score`` comes from
``storage.services.reviews.human_scores`` (grading's aggregation) and is null until every
criterion is reviewed.

Training (JSONL, one line per response x run with an effective score): the response text with
the effective score (normalized when the run normalizes) and raw score, and the judge's own.

Human verdicts in and out as CSV: storage/services/verdict_import.py (re-exported here).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from grading.types import ScoringSettings, Verdict
from storage.convert import criterion_info, response_info
from storage.dto import CriterionInfo, HumanDecision
from storage.effective import compute_human_score
from storage.engine import SessionFactory
from storage.errors import NotFoundError
from storage.export_names import download_name, response_key
from storage.repositories import datasets as dataset_repo
from storage.repositories import effective as effective_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.services import effective_reads, reviews
from storage.services.blindness import EVERYTHING, Sight
from storage.services.verdict_import import (  # noqa: F401 - the labels API in one place
    VerdictImportSummary,
    export_verdict_sheet_csv,
    import_human_verdicts,
)

_BATCH = 200


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False)


def _criteria_met(verdict: Verdict | None) -> bool | None:
    return {Verdict.MET: True, Verdict.UNMET: False}.get(verdict) if verdict else None


def _option_value(criterion: CriterionInfo, label: str | None) -> float | None:
    """The chosen option's value (None: no option, or an NA one)."""
    return next((o.value for o in criterion.options or () if o.label == label and not o.na),
                None)


def _rubric_item(criterion: CriterionInfo, decision: HumanDecision | None) -> dict[str, Any]:
    human = decision.applied if decision else None
    verdict = human.verdict if human else None
    option = human.option if human else None
    return {
        "criterion": criterion.requirement,
        "name": criterion.name,
        "points": criterion.weight,
        "tags": [f"section:{criterion.section}"] if criterion.section else [],
        # a rating's chosen option label (its value in option_value; criteria_met null)
        "verdict": option if option is not None else verdict.value if verdict else None,
        "criteria_met": None if criterion.is_multi_choice else _criteria_met(verdict),
        "option_value": _option_value(criterion, option),
        "explanation": human.note if human else "",
        "reviewer": human.reviewer if human else None,
        # Several reviewers: how the final verdict above was reached and each one's verdict.
        "status": decision.status if decision else "not_reviewed",
        "adjudicator": (decision.adjudication.reviewer
                        if decision and decision.adjudication else None),
        "carried_from_version": decision.carried_from if decision else None,
        "reviewers": [
            {"reviewer": h.reviewer_key, "name": h.reviewer, "verdict": str(h.choice),
             "note": h.note}
            for h in (decision.reviews if decision else ())],
    }


def iter_gold_records(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int, *,
    complete_only: bool = False, settings: ScoringSettings | None = None,
    sight: Sight = EVERYTHING,
) -> Iterator[dict[str, Any]]:
    """The human-reviewed responses as ``sight`` may see them (storage/services/blindness.py:
    a criterion the viewer has not answered reads as not reviewed), read in batches;
    ``complete_only`` keeps fully reviewed."""
    with sessions() as session:
        version = rubric_repo.get_version(session, rubric_version_id)
        criteria = [criterion_info(c) for c in version.criteria]
        rubric_name, number = version.rubric.name, version.number
        dataset_name = dataset_repo.get_dataset(session, dataset_id).name
        reviewed = effective_repo.reviewed_response_ids(session, rubric_version_id,
                                                        dataset_id)
    scoring = settings or ScoringSettings()
    for start in range(0, len(reviewed), _BATCH):
        ids = reviewed[start:start + _BATCH]
        with sessions() as session:
            responses = [response_info(r) for r in dataset_repo.get_responses(session, ids)]
            found = effective_reads.decisions(session, rubric_version_id, ids, sight=sight)
            humans = {rid: found.get(rid, {}) for rid in ids}
            texts = (dataset_repo.response_texts(session, ids)
                     if scoring.length_penalty is not None else {})
        # Scored from the decisions just read (what reviews.human_scores reads again with
        # the same sight), through the one aggregation.
        scores = {rid: compute_human_score(
            response_id=rid, rubric_version_id=rubric_version_id, criteria=criteria,
            humans=humans[rid], settings=scoring, to_grade=texts.get(rid)) for rid in ids}
        for response in responses:
            score = scores[response.id]
            if complete_only and not score.complete:
                continue
            if not sight.sees_all and not humans[response.id]:  # nothing the viewer may see
                continue
            items = [_rubric_item(c, humans[response.id].get(c.id)) for c in criteria]
            yield {
                "response_id": response_key(response.id, response.external_id),
                "workbench_response_id": response.id,
                "dataset": dataset_name,
                "rubric": rubric_name,
                "rubric_version": number,
                "prompt": [{"role": "user", "content": response.query}]
                if response.query is not None else [],
                "completion": response.output,
                "thinking": response.thinking,
                "reference": response.reference,
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
    sight: Sight = EVERYTHING,
) -> str:
    """The gold set as JSONL text (empty when nothing is reviewed), as ``sight`` sees it."""
    return "".join(dumps(r) + "\n" for r in iter_gold_records(
        sessions, rubric_version_id, dataset_id, complete_only=complete_only, settings=settings,
        sight=sight))


def iter_training_records(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    run_ids: Sequence[int] | None = None, *, sight: Sight = EVERYTHING,
) -> Iterator[dict[str, Any]]:
    """One record per response x run that has an effective score (the human verdicts
    ``sight`` may see in place); failed grades are left out."""
    with sessions() as session:
        version = rubric_repo.get_version(session, rubric_version_id)
        rubric_name, number = version.rubric.name, version.number
        runs = [r for r in run_repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=dataset_id)
            if run_ids is None or r.id in set(run_ids)]
        run_fields = [(r.id, r.grader, r.model, bool(r.settings.get("normalize", True)))
                      for r in runs]
    for run_id, grader, model, normalize in run_fields:
        grades = [g for g in reviews.effective_grades_for_run(sessions, run_id, sight=sight)
                  if g.score is not None]
        for start in range(0, len(grades), _BATCH):
            batch = grades[start:start + _BATCH]
            with sessions() as session:
                responses = {r.id: response_info(r) for r in dataset_repo.get_responses(
                    session, [g.response_id for g in batch])}
            for grade in batch:
                response = responses[grade.response_id]
                yield {
                    "response_id": response_key(response.id, response.external_id),
                    "workbench_response_id": response.id,
                    "prompt": response.query,
                    "completion": response.output,
                    "thinking": response.thinking,
                    "reference": response.reference,
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
    run_ids: Sequence[int] | None = None, *, sight: Sight = EVERYTHING,
) -> str:
    """The training export as JSONL text."""
    return "".join(dumps(r) + "\n" for r in iter_training_records(
        sessions, rubric_version_id, dataset_id, run_ids, sight=sight))


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


def export_file_name(sessions: SessionFactory, kind: str, rubric_version_id: int,
                     dataset_id: int, ext: str) -> str:
    """``gold-UX_50_replies-Dosing-v1.jsonl``: the names and version number the user sees."""
    with sessions() as session:
        version = rubric_repo.get_version(session, rubric_version_id)
        dataset = dataset_repo.get_dataset(session, dataset_id)
        return download_name(kind, dataset.name, version.rubric.name, version=version.number,
                             ext=ext)
