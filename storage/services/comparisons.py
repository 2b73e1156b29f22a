"""Comparison runs: two sources' responses paired and compared on a rubric by one judge in
both orders (grading.pairwise). Creating one matches the sources and stores every pair (and
every row that cannot be judged, with why) in one transaction; judging is
``storage.jobs.comparison_runner``; results are read back from the database and summarised
by ``grading.pairwise.summary`` (the pair's result by ``grading.pairwise.aggregation``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import update

from grading.errors import ConfigurationError
from grading.pairwise import aggregation
from grading.pairwise.matching import MATCH_BY, Item, Matching, MatchingError, match
from grading.pairwise.report import CriterionPreference, PairReport
from grading.pairwise.summary import ComparisonSummary, summarize
from storage import limits
from storage import models as m
from storage.convert import criterion_info
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, InvalidStateError
from storage.repositories import comparisons as repo
from storage.repositories import datasets as dataset_repo
from storage.repositories import rubrics as rubric_repo
from storage.services import pair_calibration
from storage.services.pair_calibration import PairCalibration
from storage.services.people import record
from storage.services.reviewers import Actor, Role, require

ACTIVE = ("queued", "running")
_SETTINGS = ("api_base", "timeout", "call_deadline", "concurrency", "structured_output")


@dataclass(frozen=True)
class Source:
    """One side of a comparison: a dataset, or the rows of a dataset whose metadata column
    ``column`` holds ``value`` (the ``model`` column of one upload, say)."""

    dataset_id: int
    column: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class ComparisonInfo:
    id: int
    name: str
    rubric_version_id: int
    a_label: str
    b_label: str
    match_by: str
    holistic: bool
    model: str
    settings: dict[str, Any]
    status: str
    error: str | None
    pair_count: int
    done_count: int
    failed_count: int
    identical_count: int
    unmatched_count: int
    cost: float
    unknown_cost_count: int
    created_by: str
    created_at: datetime
    source_a: Source
    source_b: Source
    heartbeat_at: datetime | None = None  # the judging process's last sign of life

    @property
    def finished(self) -> bool:
        return self.status not in ACTIVE


@dataclass(frozen=True)
class NotJudged:
    """A row of either source that was not compared, and why."""

    kind: str  # only_a | only_b | identical | failed
    key: str
    a_id: str | None
    b_id: str | None
    reason: str


@dataclass(frozen=True)
class ComparisonResults:
    comparison: ComparisonInfo
    summary: ComparisonSummary | None  # None until a pair is judged
    not_judged: list[NotJudged]
    # judged pairs that are calibration examples of this comparison: not in the summary
    examples_left_out: int = 0


def _info(session, row: m.ComparisonRow) -> ComparisonInfo:
    counts = repo.kind_counts(session, row.id)
    return ComparisonInfo(
        id=row.id, name=row.name, rubric_version_id=row.rubric_version_id,
        a_label=row.a_label, b_label=row.b_label, match_by=row.match_by,
        holistic=row.holistic, model=row.model, settings=dict(row.settings or {}),
        status=row.status, error=row.error, pair_count=row.pair_count,
        done_count=row.done_count, failed_count=row.failed_count,
        identical_count=counts.get("identical", 0),
        unmatched_count=counts.get("only_a", 0) + counts.get("only_b", 0),
        cost=row.cost, unknown_cost_count=row.unknown_cost_count, created_by=row.created_by,
        created_at=row.created_at,
        source_a=Source(row.a_dataset_id, row.split_column, row.a_value),
        source_b=Source(row.b_dataset_id, row.split_column, row.b_value),
        heartbeat_at=row.heartbeat_at)


def comparison_info(session, row: m.ComparisonRow) -> ComparisonInfo:
    """A stored comparison as the pages see it (inside the caller's session)."""
    return _info(session, row)


def _label(session, source: Source) -> str:
    dataset = dataset_repo.get_dataset(session, source.dataset_id)
    if source.column is None:
        return dataset.name
    return f"{dataset.name}: {source.column} = {source.value}"


def _check_sources(a: Source, b: Source) -> None:
    for side, source in (("A", a), ("B", b)):
        if (source.column is None) != (source.value is None) or (
                source.column is not None and not (source.column.strip()
                                                   and str(source.value).strip())):
            raise InvalidInputError(
                f"source {side}: give both a column and one of its values, or neither")
    if a.column != b.column:
        raise InvalidInputError(
            "split both sources by the same column, or neither (two whole datasets)")
    if a == b:
        raise InvalidInputError(
            "sources A and B are the same responses; choose two datasets, or two values of "
            "one dataset's column (e.g. model)")


def _items(session, source: Source, side: str) -> tuple[list[Item], dict[str, int]]:
    rows = repo.source_responses(session, source.dataset_id, source.column, source.value)
    if not rows:
        where = (f" whose {source.column!r} is {source.value!r}" if source.column else "")
        raise InvalidInputError(
            f"source {side} has no responses{where}; choose a dataset (or value) that has some")
    items, ids = [], {}
    for row in rows:
        location = f"response {row.external_id}" if row.external_id else f"response #{row.id}"
        if location in ids:  # cannot collide within a dataset; kept unique regardless
            location = f"{location} (#{row.id})"
        ids[location] = row.id
        items.append(Item(location=location, id=row.external_id, query=row.query,
                          text={"thinking": row.thinking or "", "output": row.output}))
    return items, ids


def _matching(session, a: Source, b: Source, by: str, names: tuple[str, str]
              ) -> tuple[Matching, dict[str, int], dict[str, int]]:
    items_a, ids_a = _items(session, a, "A")
    items_b, ids_b = _items(session, b, "B")
    try:
        found = match(items_a, items_b, by=by, a_name=f"A ({names[0]})",  # type: ignore[arg-type]
                      b_name=f"B ({names[1]})")
    except MatchingError as exc:
        raise InvalidInputError(str(exc)) from None
    if not found.pairs:
        raise InvalidInputError(
            f"every matched pair ({len(found.identical)}) has the same text in A and B: "
            "nothing to compare; choose two sources whose answers differ")
    return found, ids_a, ids_b


def create_comparison(
    sessions: SessionFactory, *, rubric_version_id: int, a: Source, b: Source, model: str,
    match_by: str = "id", holistic: bool = False, name: str = "",
    settings: Mapping[str, Any] | None = None, actor: Actor,
    calibration: PairCalibration | None = None,
) -> ComparisonInfo:
    """Match the two sources and queue the comparison of their pairs (B compared with A);
    ``calibration``: show the judge pairs people decided (storage.services.pair_calibration).

    Bad input (no key in common, a key used twice in one source, nothing left to judge, no
    decided pair to calibrate with) raises InvalidInputError naming the source and row;
    nothing is written then."""
    require(actor, Role.ADMIN, "start a comparison")
    if match_by not in MATCH_BY:
        raise InvalidInputError(f"match by 'id' or 'query', not {match_by!r}")
    if not model.strip():
        raise ConfigurationError("a comparison needs a judge model (e.g. 'openai/gpt-4o-mini')")
    limits.check([("the model name", model, limits.MODEL_MAX),
                  ("the comparison name", name, limits.NAME_MAX)])
    unknown = sorted(set(settings or {}) - set(_SETTINGS))
    if unknown:
        raise ConfigurationError(f"unknown comparison settings: {', '.join(unknown)}")
    _check_sources(a, b)
    with sessions.begin() as session:
        version = rubric_repo.get_version(session, rubric_version_id, for_update=True)
        if not version.criteria:
            raise InvalidInputError("the rubric version has no criteria; add one first")
        names = (_label(session, a), _label(session, b))
        found, ids_a, ids_b = _matching(session, a, b, match_by, names)
        stored = {k: v for k, v in (settings or {}).items() if v is not None}
        if calibration is not None:
            stored[pair_calibration.KEY] = pair_calibration.draw(
                session, rubric_version_id=version.id, holistic=holistic,
                positions=[0] if holistic else list(range(len(version.criteria))),
                calibration=calibration, new_pairs=found.pairs)
        row = m.ComparisonRow(
            name=name.strip(), rubric_version_id=version.id, a_dataset_id=a.dataset_id,
            b_dataset_id=b.dataset_id, split_column=a.column,
            a_value=a.value, b_value=b.value, a_label=names[0], b_label=names[1],
            match_by=match_by, holistic=holistic, model=model.strip(),
            settings=stored,
            status="queued", pair_count=len(found.pairs), done_count=0, failed_count=0,
            cost=0.0, unknown_cost_count=0, created_by=actor.key, created_at=m.utcnow())
        session.add(row)
        session.flush()
        rows: list[dict[str, Any]] = []

        def add(kind: str, key: str, a_id: int | None, b_id: int | None, note: str = "",
                state: str | None = None) -> None:
            rows.append({"comparison_id": row.id, "position": len(rows), "kind": kind,
                         "match_key": key, "response_a_id": a_id, "response_b_id": b_id,
                         "note": note, "state": state, "inconsistent_count": 0, "calls": 0})

        for pair in found.pairs:
            add("pair", pair.key, ids_a[pair.a.location], ids_b[pair.b.location],
                state="pending")
        for pair in found.identical:
            add("identical", pair.key, ids_a[pair.a.location], ids_b[pair.b.location],
                "the same text in A and B: nothing to compare")
        for item in found.only_a:
            add("only_a", item.id if match_by == "id" else (item.query or ""),
                ids_a[item.location], None, f"no response in B with this {match_by}")
        for item in found.only_b:
            add("only_b", item.id if match_by == "id" else (item.query or ""), None,
                ids_b[item.location], f"no response in A with this {match_by}")
        repo.insert_pairs(session, rows)
        rubric_repo.freeze(session, version.id)
        record(session, actor, "start comparison", "comparison", row.id,
               f"{names[1]} vs {names[0]}", f"{len(found.pairs)} pairs, judge {model}")
        return _info(session, row)


def get_comparison(sessions: SessionFactory, comparison_id: int) -> ComparisonInfo:
    with sessions() as session:
        return _info(session, repo.get(session, comparison_id))


def list_comparisons(sessions: SessionFactory) -> list[ComparisonInfo]:
    with sessions() as session:
        return [_info(session, row) for row in repo.list_all(session)]


def cancel_comparison(sessions: SessionFactory, comparison_id: int, *,
                      actor: Actor) -> ComparisonInfo:
    """Stop a queued or running comparison; the pairs judged so far are kept."""
    require(actor, Role.ADMIN, "cancel a comparison")
    with sessions.begin() as session:
        row = repo.get(session, comparison_id, for_update=True)
        if row.status not in ACTIVE:
            raise InvalidStateError(
                f"comparison {comparison_id} is {row.status}; only a queued or running one can "
                "be cancelled")
        session.execute(update(m.ComparisonRow).where(m.ComparisonRow.id == comparison_id)
                        .values(status="cancelled", finished_at=m.utcnow(), claimed_by=None))
        record(session, actor, "cancel comparison", "comparison", comparison_id, row.name)
        session.refresh(row)
        return _info(session, row)


def _report(pair: m.ComparisonPairRow, criteria: dict[int | None, Any]) -> PairReport:
    """The pair's report rebuilt from its stored preferences; its result is aggregated
    again by the one aggregation function, so what is read always follows the rule."""
    preferences = [CriterionPreference(
        criterion=criteria[p.criterion_id], first=p.first, second=p.second,
        first_reason=p.first_reason, second_reason=p.second_reason, preference=p.preference,
        consistent=p.consistent, error=p.error) for p in pair.preferences]
    result = aggregation.aggregate_preferences(preferences)
    return PairReport(preferences=preferences, score=result.score,
                      winner=aggregation.winner(result.score),
                      scored_count=result.scored_count,
                      inconsistent_count=sum(p.consistent is False for p in preferences))


def comparison_results(sessions: SessionFactory, comparison_id: int, *,
                       resamples: int = 1000, seed: int = 0) -> ComparisonResults:
    """Per criterion and overall: B's wins / ties / losses over A with bootstrap intervals and
    the position-consistency rate (the pairs that are calibration examples left out); and
    every row that was not compared, with why."""
    with sessions() as session:
        row = repo.get(session, comparison_id)
        info = _info(session, row)
        criteria: dict[int | None, Any] = {
            c.id: criterion_info(c).to_criterion()
            for c in rubric_repo.criteria_of(session, row.rubric_version_id)}
        criteria[None] = aggregation.HOLISTIC_CRITERION
        left_out = pair_calibration.left_out_keys(row.settings)
        judged = repo.judged_pairs(session, comparison_id)
        reports = [_report(p, criteria) for p in judged if p.match_key not in left_out]
        listed = repo.not_judged(session, comparison_id)
        ids = repo.external_ids(session, [i for p in listed
                                          for i in (p.response_a_id, p.response_b_id) if i])
    not_judged = [NotJudged(
        kind="failed" if p.kind == "pair" else p.kind, key=p.match_key,
        a_id=_shown_id(ids, p.response_a_id), b_id=_shown_id(ids, p.response_b_id),
        reason=p.error or p.note) for p in listed]
    summary = summarize(reports, resamples=resamples, seed=seed) if reports else None
    return ComparisonResults(comparison=info, summary=summary, not_judged=not_judged,
                             examples_left_out=len(judged) - len(reports))


def _shown_id(ids: dict[int, str | None], response_id: int | None) -> str | None:
    if response_id is None:
        return None
    return ids.get(response_id) or f"#{response_id}"
