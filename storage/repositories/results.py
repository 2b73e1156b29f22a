"""Queries behind the results table and the review queue: ids, flags and counts, no texts.

Repository functions take a Session and never commit; storage.services.results and
storage.services.review_queue own the sessions.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import (
    ColumnElement,
    String,
    and_,
    bindparam,
    case,
    cast,
    distinct,
    func,
    literal_column,
    or_,
    select,
    union,
)
from sqlalchemy.orm import Session

from storage import models as m
from storage.errors import InvalidInputError, NotFoundError
from storage.repositories import rubrics as rubric_repo
from storage.search_index import PG_LOWERED

# grades.verdict_key of a grade with a criterion lacking a verdict / with none at all
# (storage/services/verdict_keys.py, which writes them)
PARTIAL_KEY, UNLABELLED_KEY = "?", "-"

Scores = dict[tuple[int, int], tuple[float | None, str | None]]  # (response, run) -> (score, error)


def check_runs(session: Session, dataset_id: int, rubric_version_id: int,
                run_ids: Sequence[int]) -> list[int]:
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return ids
    rows = session.execute(
        select(m.RunRow.id, m.RunRow.dataset_id, m.RunRow.rubric_version_id)
        .where(m.RunRow.id.in_(ids))
    ).all()
    found = {r.id: r for r in rows}
    for run_id in ids:
        run = found.get(run_id)
        if run is None:
            raise NotFoundError(f"grading run {run_id} does not exist")
        if run.dataset_id != dataset_id or run.rubric_version_id != rubric_version_id:
            raise InvalidInputError(
                f"run {run_id} graded another dataset or rubric version; compare runs of "
                "one dataset under one rubric version")
    return ids


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_clause(search: str, dialect: str) -> ColumnElement[bool] | None:
    """Responses whose id, query or output contains ``search`` (case-insensitive), or None
    for an empty search. Shared by the Results table and the Responses page.

    The index behind it is storage/search_index.py's. PostgreSQL: LIKE on the stored
    lower()ed columns, what ILIKE does there (lower() both sides, then LIKE), served by
    pg_trgm's GIN index where the needle is selective. SQLite: LIKE (case-insensitive for
    ASCII there, as ILIKE) over every row."""
    needle = search.strip()
    if not needle:
        return None
    pattern = f"%{_escape_like(needle)}%"
    if dialect == "postgresql":
        # ILIKE lower()s both sides on every row (0.7 s at 100,000 for a needle that
        # matches most); the same test on the stored lower()ed copies is a plain LIKE.
        # The pattern is written into the statement: a prepared statement's generic plan
        # would not know it, and so could not choose between the index and a scan.
        lowered = func.lower(bindparam(None, pattern, type_=String, literal_execute=True))
        return or_(*[literal_column(f"responses.{name}").like(lowered, escape="\\")
                     for name in PG_LOWERED])
    # SQLite's LIKE ignores ASCII case itself, as its lower() folds ASCII letters only:
    # ILIKE's lower() of both sides gave the same rows and was 70 of a 100 ms scan at
    # 100,000 (a needle matching nearly every response)
    return or_(
        m.ResponseRow.external_id.like(pattern, escape="\\"),
        m.ResponseRow.query.like(pattern, escape="\\"),
        m.ResponseRow.output.like(pattern, escape="\\"),
    )


def metadata_value(key: str) -> ColumnElement[str]:
    """A metadata column's value as text, the same expression on SQLite (json_extract) and
    PostgreSQL (->>), so the values offered and the values filtered on always match."""
    return cast(m.ResponseRow.meta[key].as_string(), String)


def candidate_ids(session: Session, dataset_id: int, search: str,
                  metadata: Sequence[tuple[str, str]] = ()) -> list[int]:
    query = select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
    clause = search_clause(search, session.get_bind().dialect.name)
    if clause is not None:
        query = query.where(clause)
    for key, value in metadata:
        query = query.where(metadata_value(key) == value)
    return list(session.scalars(query.order_by(m.ResponseRow.id)))


def metadata_keys(session: Session, dataset_id: int, sample: int | None) -> list[str]:
    """The metadata columns of a dataset's first ``sample`` responses (uploads keep every
    unmapped column, so the first rows name them all); ``None``: of every response."""
    keys: dict[str, None] = {}
    for meta in session.scalars(
            select(m.ResponseRow.meta).where(m.ResponseRow.dataset_id == dataset_id)
            .order_by(m.ResponseRow.id).limit(sample)):
        keys.update(dict.fromkeys(str(k) for k in (meta or {})))
    return list(keys)


def metadata_values(session: Session, dataset_id: int, key: str, limit: int) -> list[str]:
    """Distinct values of one metadata column, at most ``limit``."""
    value = metadata_value(key)
    return list(session.scalars(
        select(value).where(m.ResponseRow.dataset_id == dataset_id, value.is_not(None))
        .group_by(value).order_by(value).limit(limit)))


def judge_verdict_ids(session: Session, run_id: int, criterion_id: int,
                      verdict: str, *, by_option: bool = False) -> set[int]:
    """Responses on which a run's judge gave ``verdict`` on one criterion. ``by_option``
    (a multi-choice criterion): ``verdict`` is the chosen option's label, or CANNOT_ASSESS
    for an abstention that chose no option (an NA option is stored under CANNOT_ASSESS too,
    with its label, and is found by its label)."""
    row = m.GradeCriterionRow
    if not by_option:
        matches = row.verdict == verdict
    elif verdict == "CANNOT_ASSESS":
        matches = and_(row.option.is_(None), row.verdict == verdict)
    else:
        matches = row.option == verdict
    return set(session.scalars(
        select(m.GradeRow.response_id)
        .join(row, row.grade_id == m.GradeRow.id)
        .where(m.GradeRow.run_id == run_id, row.criterion_id == criterion_id, matches)))


def failed_ids(session: Session, run_ids: list[int]) -> set[int]:
    """Responses on which a selected run failed, or fell back on a criterion."""
    if not run_ids:
        return set()
    whole, partial = failed_queries(run_ids)
    return set(session.scalars(whole)) | set(session.scalars(partial))


def failed_queries(run_ids: list[int]):
    """(grades that failed, grades with a failed criterion) of these runs, as response ids:
    each through its partial index (``ix_grades_failed``, ``ix_grade_criteria_failed``:
    the failures only), never every grade x criterion of the runs."""
    whole = select(m.GradeRow.response_id).where(
        m.GradeRow.run_id.in_(run_ids),
        or_(m.GradeRow.score.is_(None), m.GradeRow.error.is_not(None)))
    partial = select(m.GradeRow.response_id).where(
        m.GradeRow.run_id.in_(run_ids),
        m.GradeRow.id.in_(select(m.GradeCriterionRow.grade_id)
                          .where(m.GradeCriterionRow.error.is_not(None)))).distinct()
    return whole, partial


HOLISTIC_GRADERS = frozenset({"rubric_as_judge"})  # one overall score, no verdicts


def comparable_groups(session: Session, run_ids: list[int]) -> tuple[list[int], list[list[int]]]:
    """(runs that give per-criterion verdicts, groups of runs whose scores are comparable).

    A holistic judge's 0-100 score is not the same measure as a score aggregated from
    verdicts, and a raw weighted sum is not on the 0-1 scale: scores are compared only
    within a group of the same kind (holistic or aggregated) and the same scale.
    """
    if not run_ids:
        return [], []
    rows = session.execute(select(m.RunRow.id, m.RunRow.grader, m.RunRow.settings)
                           .where(m.RunRow.id.in_(run_ids))).all()
    by_id = {row.id: row for row in rows}
    with_verdicts = [rid for rid in run_ids
                     if rid in by_id and by_id[rid].grader not in HOLISTIC_GRADERS]
    groups: dict[tuple[bool, bool], list[int]] = {}
    for rid in run_ids:
        if rid not in by_id:
            continue
        row = by_id[rid]
        normalize = bool((row.settings or {}).get("normalize", True))
        groups.setdefault((row.grader in HOLISTIC_GRADERS, normalize), []).append(rid)
    return with_verdicts, [group for group in groups.values() if len(group) >= 2]


def verdicts_differ_query(with_verdicts: Sequence[int]):
    """Responses on which two of these runs differ on some criterion, both with a verdict
    (on a multi-choice criterion: the option chosen), as a query of response ids.

    By the grades' verdict keys (storage/services/verdict_keys.py): two keys of fully
    judged grades differ exactly when some criterion's choice does, so those responses are
    found over one row per grade. Responses with a grade not fully keyed (a criterion
    without a verdict, or no key yet: ``ix_grades_unkeyed``) are compared criterion by
    criterion, as all were before (``criterion_differ_query``)."""
    g = m.GradeRow
    runs = list(with_verdicts)
    keyed = (select(g.response_id)
             .where(g.run_id.in_(runs), g.verdict_key.not_in([PARTIAL_KEY, UNLABELLED_KEY]))
             .group_by(g.response_id)
             # more than one distinct key (cheaper than counting them)
             .having(func.min(g.verdict_key) != func.max(g.verdict_key)))
    unkeyed = select(g.response_id).where(
        g.run_id.in_(runs), or_(g.verdict_key.is_(None), g.verdict_key == PARTIAL_KEY))
    # one plain SELECT (SQLite does not take a parenthesised UNION inside another UNION)
    found = union(keyed, criterion_differ_query(runs, among=unkeyed)).subquery()
    return select(found.c.response_id)


def criterion_differ_query(with_verdicts: Sequence[int], among=None):
    """``verdicts_differ_query`` criterion by criterion, over every grade x criterion row
    of the runs (``among``: of these responses only)."""
    g, gc = m.GradeRow, m.GradeCriterionRow
    query = (select(g.response_id)
             .join(gc, gc.grade_id == g.id)
             .where(g.run_id.in_(list(with_verdicts)), gc.verdict.is_not(None)))
    if among is not None:
        query = query.where(g.response_id.in_(among))
    # an option label when one was chosen, else the verdict (models.GradeCriterionRow)
    return (query.group_by(g.response_id, gc.criterion_id)
            .having(func.count(distinct(func.coalesce(gc.option, gc.verdict))) > 1))


def verdict_disagree_ids(session: Session, run_ids: list[int]) -> set[int]:
    """Responses on which two runs that give verdicts differ on some criterion."""
    with_verdicts, _ = comparable_groups(session, run_ids)
    if len(with_verdicts) < 2:
        return set()
    return set(session.scalars(verdicts_differ_query(with_verdicts)))


def score_disagree_ids(session: Session, run_ids: list[int], score_gap: float) -> set[int]:
    """Responses on which two runs with comparable scores are more than ``score_gap`` apart."""
    _, groups = comparable_groups(session, run_ids)
    found: set[int] = set()
    for group in groups:
        found |= set(session.scalars(
            select(m.GradeRow.response_id)
            .where(m.GradeRow.run_id.in_(group), m.GradeRow.score.is_not(None))
            .group_by(m.GradeRow.response_id)
            .having(func.max(m.GradeRow.score) - func.min(m.GradeRow.score) > score_gap)))
    return found


def disagree_ids(session: Session, run_ids: list[int], score_gap: float) -> set[int]:
    """Responses on which the judges disagree: different verdicts on a criterion, or
    comparable scores further apart than ``score_gap``."""
    verdicts, scores = disagreement(session, run_ids, score_gap)
    return verdicts | scores


def disagreement(session: Session, run_ids: list[int], score_gap: float
                 ) -> tuple[set[int], set[int]]:
    """(``verdict_disagree_ids``, ``score_disagree_ids``). When every run gives verdicts
    and their scores are comparable (the usual case), both from one GROUP BY over the
    grades (``ix_grades_compared``) instead of one each."""
    with_verdicts, groups = comparable_groups(session, run_ids)
    if len(with_verdicts) < 2 or groups != [with_verdicts]:
        return (verdict_disagree_ids(session, run_ids),
                score_disagree_ids(session, run_ids, score_gap))
    g = m.GradeRow
    keyed = case((g.verdict_key.not_in([PARTIAL_KEY, UNLABELLED_KEY]), g.verdict_key))
    verdicts_differ = func.min(keyed) != func.max(keyed)
    scores_differ = func.max(g.score) - func.min(g.score) > score_gap  # NULLs left out
    verdicts: set[int] = set()
    scores: set[int] = set()
    for rid, by_key, by_score in session.execute(
            select(g.response_id, verdicts_differ, scores_differ)
            .where(g.run_id.in_(with_verdicts))
            .group_by(g.response_id).having(or_(verdicts_differ, scores_differ))):
        if by_key:
            verdicts.add(rid)
        if by_score:
            scores.add(rid)
    unkeyed = select(g.response_id).where(
        g.run_id.in_(with_verdicts), or_(g.verdict_key.is_(None), g.verdict_key == PARTIAL_KEY))
    verdicts.update(session.scalars(criterion_differ_query(with_verdicts, among=unkeyed)))
    return verdicts, scores


def review_counts(session: Session, dataset_id: int, rubric_version_id: int) -> dict[int, int]:
    """Per response, the criteria of this version anyone has answered (verdicts carried over
    from earlier versions with the same requirement text included)."""
    from storage.repositories import verdicts as verdict_repo

    sources = verdict_repo.carry_sources(session, rubric_version_id)
    answered: dict[int, set[int]] = {}
    for rid, cid, _stream in verdict_repo.reviewed_criteria(session, dataset_id, list(sources)):
        answered.setdefault(rid, set()).add(sources[cid][0])
    return {rid: len(cids) for rid, cids in answered.items()}


def criteria_count(session: Session, rubric_version_id: int) -> int:
    rubric_repo.get_version(session, rubric_version_id)
    return session.scalar(
        select(func.count()).select_from(m.CriterionRow)
        .where(m.CriterionRow.version_id == rubric_version_id)) or 0


def judge_scores(session: Session, run_ids: list[int]) -> Scores:
    if not run_ids:
        return {}
    return {
        (response_id, run_id): (score, error)
        for response_id, run_id, score, error in session.execute(
            select(m.GradeRow.response_id, m.GradeRow.run_id, m.GradeRow.score,
                   m.GradeRow.error)
            .where(m.GradeRow.run_id.in_(run_ids)))
    }


def snippets(session: Session, ids: list[int], chars: int
             ) -> dict[int, tuple[str | None, str, str]]:
    """(external id, start of query, start of output) of these responses."""
    if not ids:
        return {}
    return {
        rid: (external_id, query or "", output or "")
        for rid, external_id, query, output in session.execute(
            select(m.ResponseRow.id, m.ResponseRow.external_id,
                   func.substr(m.ResponseRow.query, 1, chars),
                   func.substr(m.ResponseRow.output, 1, chars))
            .where(m.ResponseRow.id.in_(ids)))
    }


def result_set_rows(session: Session) -> list[tuple[int, str, int, str, int, int]]:
    """(dataset id, dataset name, version id, rubric name, version number, run id) per run."""
    return [tuple(row) for row in session.execute(
        select(m.RunRow.dataset_id, m.DatasetRow.name, m.RunRow.rubric_version_id,
               m.RubricRow.name, m.RubricVersionRow.number, m.RunRow.id)
        .join(m.DatasetRow, m.DatasetRow.id == m.RunRow.dataset_id)
        .join(m.RubricVersionRow, m.RubricVersionRow.id == m.RunRow.rubric_version_id)
        .join(m.RubricRow, m.RubricRow.id == m.RubricVersionRow.rubric_id)
        .order_by(m.RunRow.id))]


def run_response_ids(session: Session, run_ids: list[int]) -> list[int]:
    """Every response any of these runs covers."""
    return list(session.scalars(
        select(m.RunResponseRow.response_id)
        .where(m.RunResponseRow.run_id.in_(run_ids)).distinct()))


def external_ids(session: Session, dataset_id: int) -> dict[int, str | None]:
    return dict(session.execute(
        select(m.ResponseRow.id, m.ResponseRow.external_id)
        .where(m.ResponseRow.dataset_id == dataset_id)).all())


def response_label_rows(session: Session, dataset_id: int, limit: int
                        ) -> list[tuple[int, str | None, str | None, str | None]]:
    """(id, external id, start of query, start of output) of a dataset's first responses."""
    return [tuple(row) for row in session.execute(
        select(m.ResponseRow.id, m.ResponseRow.external_id,
               func.substr(m.ResponseRow.query, 1, 60),
               func.substr(m.ResponseRow.output, 1, 60))
        .where(m.ResponseRow.dataset_id == dataset_id)
        .order_by(m.ResponseRow.id).limit(limit))]


def stamp_rows(session: Session, run_ids: Sequence[int]) -> tuple:
    """``run_marks`` per run, the newest human verdict id, and the number and newest id of
    the runs' datasets' responses (a response added to the dataset is listed, ungraded:
    the table moves with it, not only when a grade or a verdict lands)."""
    runs = run_mark_rows(session, run_ids)
    responses = tuple(session.execute(
        select(func.count(), func.max(m.ResponseRow.id))
        .where(m.ResponseRow.dataset_id.in_(
            select(m.RunRow.dataset_id).where(m.RunRow.id.in_(list(run_ids)))))).one())
    return runs, session.scalar(select(func.max(m.HumanVerdictRow.id))), responses


def run_mark_rows(session: Session, run_ids: Sequence[int]) -> tuple:
    """``run_marks`` of these runs, by id, as plain tuples."""
    return tuple(tuple(row) for row in session.execute(
        run_marks().where(m.RunRow.id.in_(list(run_ids))).order_by(m.RunRow.id)).all())


def run_marks():
    """What moves when a run's grades change, per run: (id, done, failed, status). The done
    and failed counts apart: a transient failure replaced by its grade (the only grade ever
    replaced, ``grade_records``) moves one up and the other down; their sum, the stamp
    before, stayed, and a cached page kept showing the failure."""
    return select(m.RunRow.id, m.RunRow.done_count, m.RunRow.failed_count, m.RunRow.status)
