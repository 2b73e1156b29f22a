"""Human verdicts: append-only rows in streams (one per reviewer, one for adjudications);
the highest ``seq`` per (response, criterion, stream) is that stream's current verdict."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import Session, aliased

from grading.options import fits_choices, label_key
from storage import models as m
from storage.id_chunks import id_chunks

Pair = tuple[m.HumanVerdictRow, m.HumanVerdictRow | None]  # a verdict and the one it replaced


def latest(session: Session, response_id: int, criterion_id: int,
           stream: str) -> m.HumanVerdictRow | None:
    return session.scalars(
        select(m.HumanVerdictRow)
        .where(m.HumanVerdictRow.response_id == response_id,
               m.HumanVerdictRow.criterion_id == criterion_id,
               m.HumanVerdictRow.stream == stream)
        .order_by(m.HumanVerdictRow.seq.desc())
        .limit(1)
    ).one_or_none()


def latest_of(session: Session, response_id: int, criterion_ids: Sequence[int],
              stream: str) -> dict[int, m.HumanVerdictRow]:
    """``latest`` of several criteria in one query (criteria never answered left out)."""
    newest = (select(m.HumanVerdictRow.criterion_id, func.max(m.HumanVerdictRow.seq).label("seq"))
              .where(m.HumanVerdictRow.response_id == response_id,
                     m.HumanVerdictRow.criterion_id.in_(list(criterion_ids)),
                     m.HumanVerdictRow.stream == stream)
              .group_by(m.HumanVerdictRow.criterion_id).subquery())
    return {row.criterion_id: row for row in session.scalars(
        select(m.HumanVerdictRow).join(newest, and_(
            m.HumanVerdictRow.criterion_id == newest.c.criterion_id,
            m.HumanVerdictRow.seq == newest.c.seq))
        .where(m.HumanVerdictRow.response_id == response_id,
               m.HumanVerdictRow.stream == stream))}


def append(
    session: Session, *, response_id: int, rubric_version_id: int, criterion_id: int,
    stream: str, verdict: str, reviewer_key: str, reviewer: str, note: str,
    previous: m.HumanVerdictRow | None, review_seconds: float | None = None,
    option: str | None = None, answered_at: datetime | None = None,
) -> m.HumanVerdictRow:
    """A verdict, appended; ``answered_at``: when the person gave it, for a verdict carried
    from an earlier version (the time shown as its answer time), else now."""
    row = m.HumanVerdictRow(
        response_id=response_id, rubric_version_id=rubric_version_id,
        criterion_id=criterion_id, stream=stream, seq=(previous.seq + 1) if previous else 1,
        verdict=verdict, reviewer_key=reviewer_key, reviewer=reviewer, note=note,
        replaces_id=previous.id if previous else None, review_seconds=review_seconds,
        option=option,
    )
    if answered_at is not None:
        row.created_at = answered_at
    session.add(row)
    session.flush()  # the unique (response, criterion, stream, seq) key is checked here
    return row


def carry_sources(session: Session, rubric_version_id: int) -> dict[int, tuple[int, int]]:
    """Which criteria's verdicts apply to this version: source criterion id -> (criterion id
    in this version, number of the version the source belongs to).

    A criterion carries back through earlier versions of the same rubric for as long as each
    has a criterion with the very same requirement text; the first version without it ends
    the carry. Every criterion is its own source.
    """
    version = session.get(m.RubricVersionRow, rubric_version_id)
    if version is None:
        return {}
    rows = session.execute(
        select(m.CriterionRow.id, m.CriterionRow.requirement, m.CriterionRow.position,
               m.RubricVersionRow.number, m.RubricVersionRow.id)
        .join(m.RubricVersionRow, m.RubricVersionRow.id == m.CriterionRow.version_id)
        .where(m.RubricVersionRow.rubric_id == version.rubric_id,
               m.RubricVersionRow.number <= version.number)
        .order_by(m.RubricVersionRow.number.desc(), m.CriterionRow.position)).all()
    by_version: dict[int, dict[str, int]] = {}
    for cid, requirement, _pos, number, _vid in rows:
        by_version.setdefault(number, {}).setdefault(requirement, cid)
    sources: dict[int, tuple[int, int]] = {}
    for cid, requirement, _pos, number, vid in rows:
        if vid != rubric_version_id:
            continue
        sources[cid] = (cid, number)
        earlier = number - 1
        while earlier in by_version and requirement in by_version[earlier]:
            sources[by_version[earlier][requirement]] = (cid, earlier)
            earlier -= 1
    return sources


def current_rows(session: Session, response_ids: Iterable[int],
                 criterion_ids: Iterable[int]) -> list[Pair]:
    """The current verdict of every stream (and the one it replaced) on these responses and
    criteria, in a few queries whatever the number of responses."""
    ids = list(response_ids)
    criteria = list(criterion_ids)
    if not ids or not criteria:
        return []
    hv, previous = m.HumanVerdictRow, aliased(m.HumanVerdictRow)
    found: list[Pair] = []
    for chunk in id_chunks(ids):
        newest = (
            select(hv.response_id, hv.criterion_id, hv.stream, func.max(hv.seq).label("seq"))
            .where(hv.criterion_id.in_(criteria), hv.response_id.in_(chunk))
            .group_by(hv.response_id, hv.criterion_id, hv.stream)
            .subquery()
        )
        found.extend((row, prev) for row, prev in session.execute(
            select(hv, previous)
            .join(newest, and_(newest.c.response_id == hv.response_id,
                               newest.c.criterion_id == hv.criterion_id,
                               newest.c.stream == hv.stream, newest.c.seq == hv.seq))
            .outerjoin(previous, previous.id == hv.replaces_id)
        ))
    return found


def history(
    session: Session, response_id: int, *, criterion_ids: Sequence[int] | None = None,
    stream: str | None = None,
) -> list[Pair]:
    """Every verdict with the one it replaced, in the order they were saved."""
    previous = aliased(m.HumanVerdictRow)
    query = (
        select(m.HumanVerdictRow, previous)
        .outerjoin(previous, previous.id == m.HumanVerdictRow.replaces_id)
        .where(m.HumanVerdictRow.response_id == response_id)
        .order_by(m.HumanVerdictRow.criterion_id, m.HumanVerdictRow.id)
    )
    if criterion_ids is not None:
        query = query.where(m.HumanVerdictRow.criterion_id.in_(list(criterion_ids)))
    if stream is not None:
        query = query.where(m.HumanVerdictRow.stream == stream)
    return [(row, prev) for row, prev in session.execute(query)]


def reviewed_criteria(session: Session, dataset_id: int, criterion_ids: Sequence[int]
                      ) -> list[tuple[int, int, str]]:
    """(response, criterion, stream) of every stream with a verdict on these criteria."""
    if not criterion_ids:
        return []
    return [tuple(r) for r in session.execute(
        select(m.HumanVerdictRow.response_id, m.HumanVerdictRow.criterion_id,
               m.HumanVerdictRow.stream)
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .where(m.ResponseRow.dataset_id == dataset_id,
               m.HumanVerdictRow.criterion_id.in_(list(criterion_ids)))
        .distinct())]


def response_ids_reviewed_on(session: Session, criterion: m.CriterionRow) -> list[int]:
    """Responses with a verdict on this criterion, or on an earlier one that carries into it."""
    sources = carry_sources(session, criterion.version_id)
    carried = [c for c, (target, _number) in sources.items() if target == criterion.id]
    return list(session.scalars(
        select(m.HumanVerdictRow.response_id)
        .where(m.HumanVerdictRow.criterion_id.in_(carried))
        .distinct()))


def response_ids_reviewed_in(session: Session, dataset_id: int,
                              rubric_version_id: int) -> list[int]:
    """Responses of the dataset with a verdict on this version, carried ones included."""
    sources = list(carry_sources(session, rubric_version_id))
    if not sources:
        return []
    return list(session.scalars(
        select(m.HumanVerdictRow.response_id)
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .where(m.ResponseRow.dataset_id == dataset_id,
               m.HumanVerdictRow.criterion_id.in_(sources))
        .distinct()))


def answered_counts_query(dataset_id: int, sources: dict[int, tuple[int, int]]):
    """(response, reviewer stream, number of the version's criteria answered) of the
    dataset, carried verdicts counted on the criterion they apply to; adjudications left out.
    One GROUP BY through the verdicts' response index."""
    hv = m.HumanVerdictRow
    target = case({source: to for source, (to, _n) in sources.items()}, value=hv.criterion_id)
    in_dataset = select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
    return (
        select(hv.response_id, hv.stream, func.count(func.distinct(target)))
        .where(hv.response_id.in_(in_dataset), hv.criterion_id.in_(list(sources)),
               hv.stream != m.ADJUDICATION_STREAM)
        .group_by(hv.response_id, hv.stream))


def choice_keys(session: Session, criterion_ids: set[int]) -> dict[int, frozenset[str] | None]:
    """Per criterion, the label keys of its options (None: a binary criterion)."""
    if not criterion_ids:
        return {}
    return {cid: None if options is None else frozenset(label_key(o["label"]) for o in options)
            for cid, options in session.execute(
                select(m.CriterionRow.id, m.CriterionRow.options)
                .where(m.CriterionRow.id.in_(sorted(criterion_ids))))}


Unfit = Sequence[tuple[int, str | None, str]]


def unfit_carried(session: Session, sources: dict[int, tuple[int, int]]) -> list:
    """(source criterion, option, verdict) given on an earlier version that do not fit the
    criterion they would carry onto (``grading.options.fits_choices``, the consensus rule):
    the verdicts the dispute queries leave out."""
    carried = {source: to for source, (to, _n) in sources.items() if source != to}
    if not carried:
        return []
    hv = m.HumanVerdictRow
    choices = choice_keys(session, set(carried.values()))
    return sorted(
        ((cid, option, verdict) for cid, option, verdict in session.execute(
            select(hv.criterion_id, hv.option, hv.verdict)
            .where(hv.criterion_id.in_(sorted(carried))).distinct())
         if not fits_choices(choices[carried[cid]], option, verdict)),
        key=lambda row: (row[0], row[1] or "", row[2]))


def _fitting(unfit: Unfit):
    """A WHERE clause leaving out the verdicts of ``unfit``, None when there are none."""
    if not unfit:
        return None
    hv = m.HumanVerdictRow
    return ~or_(*[and_(hv.criterion_id == cid, hv.option.is_not_distinct_from(option),
                       hv.verdict == verdict) for cid, option, verdict in unfit])


def disputed_candidates_query(dataset_id: int, sources: dict[int, tuple[int, int]],
                              response_ids: Sequence[int] | None = None, unfit: Unfit = ()):
    """(response, criterion of the version) of the dataset where reviewers (adjudications
    left out) gave more than one choice (the option label if set, else the verdict), carried
    verdicts mapped onto the criterion they apply to. Every row of every stream counts, not
    only the current ones: a superset of the disputed criteria (and of the adjudicated
    disagreements). The dataset's responses are looked up in the verdicts' response index;
    ``response_ids``: of these responses only; ``unfit`` (``unfit_carried``): carried
    verdicts left out."""
    hv = m.HumanVerdictRow
    target = case({source: to for source, (to, _n) in sources.items()}, value=hv.criterion_id)
    in_dataset = select(m.ResponseRow.id).where(m.ResponseRow.dataset_id == dataset_id)
    if response_ids is not None:
        in_dataset = in_dataset.where(m.ResponseRow.id.in_(list(response_ids)))
    query = (
        select(hv.response_id, target.label("criterion_id"))
        .where(hv.response_id.in_(in_dataset), hv.criterion_id.in_(list(sources)),
               hv.stream != m.ADJUDICATION_STREAM)
        .group_by(hv.response_id, target)
        .having(func.count(func.distinct(func.coalesce(hv.option, hv.verdict))) > 1))
    fitting = _fitting(unfit)
    return query if fitting is None else query.where(fitting)


def disputed_candidates(session: Session, dataset_id: int, rubric_version_id: int
                        ) -> list[tuple[int, int]]:
    """See ``disputed_candidates_query``: the only criteria the adjudication queue reads."""
    sources = carry_sources(session, rubric_version_id)
    if not sources:
        return []
    return sorted((rid, cid) for rid, cid in session.execute(
        disputed_candidates_query(dataset_id, sources, None,
                                  unfit_carried(session, sources))))


def disputes_query(dataset_id: int, sources: dict[int, tuple[int, int]],
                   response_ids: Sequence[int] | None = None, unfit: Unfit = ()):
    """(response, criterion of the version, adjudicated: 0 or 1) of the dataset where the
    reviewers' current verdicts give more than one choice: the consensus rule in SQL. Per
    (response, criterion, stream) the current verdict is the newest version's (carried
    verdicts mapped onto the criterion they apply to), its highest ``seq``; a dispute has no
    current adjudication, a resolved one has. ``response_ids``: of these responses only.

    Only the candidates (``disputed_candidates_query``, a superset) are ranked: the window
    then sorts the few rows of the criteria where reviewers ever differed, not every
    verdict of the dataset."""
    hv = m.HumanVerdictRow
    target = case({source: to for source, (to, _n) in sources.items()}, value=hv.criterion_id)
    number = case({source: n for source, (_to, n) in sources.items()}, value=hv.criterion_id)
    candidates = disputed_candidates_query(dataset_id, sources, response_ids,
                                           unfit).subquery("candidates")
    fitting = _fitting(unfit)
    current = (
        select(hv.response_id, target.label("criterion_id"), hv.stream,
               func.coalesce(hv.option, hv.verdict).label("choice"),
               func.row_number().over(partition_by=(hv.response_id, target, hv.stream),
                                      order_by=(number.desc(), hv.seq.desc())).label("newest"))
        .join(candidates, and_(candidates.c.response_id == hv.response_id,
                               candidates.c.criterion_id == target))
        .where(hv.criterion_id.in_(list(sources)),
               *([] if fitting is None else [fitting]))
        .subquery("current"))
    adjudicated = func.max(case((current.c.stream == m.ADJUDICATION_STREAM, 1), else_=0))
    choices = func.count(func.distinct(case(
        (current.c.stream != m.ADJUDICATION_STREAM, current.c.choice))))
    return (
        select(current.c.response_id, current.c.criterion_id,
               adjudicated.label("adjudicated"))
        .where(current.c.newest == 1)
        .group_by(current.c.response_id, current.c.criterion_id)
        .having(choices > 1))


def dispute_page_query(dataset_id: int, sources: dict[int, tuple[int, int]], limit: int,
                       unfit: Unfit = ()):
    """The first ``limit`` disputes in queue order (response, then the criterion's position),
    each row with the number of disputes in all: (response, criterion, total)."""
    found = disputes_query(dataset_id, sources, None, unfit).subquery("found")
    return (
        select(found.c.response_id, found.c.criterion_id, func.count().over().label("total"))
        .join(m.CriterionRow, m.CriterionRow.id == found.c.criterion_id)
        .where(found.c.adjudicated == 0)
        .order_by(found.c.response_id, m.CriterionRow.position)
        .limit(limit))


def dispute_page(session: Session, dataset_id: int, rubric_version_id: int, limit: int,
                 keys: Sequence[tuple[int, int]] = ()
                 ) -> tuple[int, list[tuple[int, int]], list[tuple[int, int]]]:
    """(number of disputes, the first ``limit`` in queue order, which of ``keys`` are
    disputed or adjudicated disagreements) of the dataset under the version."""
    sources = carry_sources(session, rubric_version_id)
    if not sources:
        return 0, [], []
    unfit = unfit_carried(session, sources)
    rows = session.execute(dispute_page_query(dataset_id, sources, max(limit, 1),
                                              unfit)).all()
    total = rows[0].total if rows else 0
    first = [(rid, cid) for rid, cid, _total in rows][:limit]
    kept: list[tuple[int, int]] = []
    if keys:
        wanted = set(keys)
        kept = [(rid, cid) for rid, cid, _adjudicated in session.execute(disputes_query(
            dataset_id, sources, sorted({rid for rid, _cid in wanted}), unfit))
            if (rid, cid) in wanted]
    return int(total), first, kept


def count_for_versions(session: Session, version_ids: Sequence[int]) -> int:
    if not version_ids:
        return 0
    return session.scalar(
        select(func.count()).select_from(m.HumanVerdictRow)
        .where(m.HumanVerdictRow.rubric_version_id.in_(list(version_ids)))
    ) or 0


def count_for_dataset(session: Session, dataset_id: int) -> int:
    return session.scalar(
        select(func.count()).select_from(m.HumanVerdictRow)
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .where(m.ResponseRow.dataset_id == dataset_id)
    ) or 0


def get_review_set(session: Session, dataset_id: int,
                   rubric_version_id: int) -> m.ReviewSetRow | None:
    return session.scalars(select(m.ReviewSetRow).where(
        m.ReviewSetRow.dataset_id == dataset_id,
        m.ReviewSetRow.rubric_version_id == rubric_version_id)).one_or_none()


def reviewer_names(session: Session, dataset_id: int,
                   criterion_ids: Sequence[int]) -> dict[str, str]:
    """The newest name each reviewer saved with, by key."""
    if not criterion_ids:
        return {}
    names: dict[str, str] = {}
    for key, name, _newest in session.execute(
        select(m.HumanVerdictRow.reviewer_key, m.HumanVerdictRow.reviewer,
               func.max(m.HumanVerdictRow.id).label("newest"))
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .where(m.ResponseRow.dataset_id == dataset_id,
               m.HumanVerdictRow.criterion_id.in_(list(criterion_ids)))
        .group_by(m.HumanVerdictRow.reviewer_key, m.HumanVerdictRow.reviewer)
        .order_by("newest")
    ):
        names[key] = name
    return names


def response_stamp(session: Session, response_id: int) -> tuple[int, int]:
    count, newest = session.execute(
        select(func.count(), func.max(m.HumanVerdictRow.id))
        .where(m.HumanVerdictRow.response_id == response_id)).one()
    return int(count or 0), int(newest or 0)
