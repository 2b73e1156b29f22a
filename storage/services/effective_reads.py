"""People's decisions read from ``effective_verdicts`` (kept by effective_upkeep), as a viewer
may see them: what ``blindness.visible_decisions(sight, consensus.decisions(...))`` gave,
without running the consensus rule on every reviewed response.

Two reads:

- :func:`decisions`: the whole decision, each reviewer's current verdict and the
  adjudication included (pages that show who said what: the Review detail, the adjudication
  queue, the gold set, the calibration reasons). The table says which criteria are decided
  and how; each stream's current verdict on those keys comes from one window query over the
  verdicts' (response, criterion, stream, seq) key, as plain columns.
- :func:`score_decisions`: what effective scores need (status, verdict, the verdict that
  stands, where it was carried from), no reviewer's verdicts. A blind viewer's criteria are
  those they answered themselves: a reviewer's stream is their own key (``append_verdict``,
  the CSV import, an adopted wording copies each stream as it was), so "the viewer has a
  current verdict on it" is "a row of the viewer's stream on it" (an indexed lookup).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import NamedTuple

from sqlalchemy import Select, String, and_, case, cast, func, select
from sqlalchemy.orm import Session, aliased

from grading.types import Verdict
from storage import models as m
from storage.dto import HumanDecision, HumanVerdictInfo
from storage.id_chunks import id_chunks
from storage.plain_rows import plain_rows
from storage.repositories import effective as effective_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import blindness
from storage.services.blindness import Sight

Decisions = dict[int, dict[int, HumanDecision]]


def current_streams_query(sources: dict[int, tuple[int, int]],
                          keys: Sequence[tuple[int, int]], within=None):
    """Each stream's current verdict on these (response, criterion of the version): per
    (response, criterion it applies to, stream) the row of the newest version, its highest
    ``seq`` (``consensus.gather``'s rule), as plain columns: (criterion of the version,
    then the verdict's columns, then the verdict and option it replaced). ``within``: a
    query of response ids instead of ``keys`` (every criterion of the version)."""
    hv, previous = m.HumanVerdictRow, aliased(m.HumanVerdictRow)
    ranked = _ranked(sources, keys, within)
    return (
        select(ranked.c.target, hv.id, hv.response_id, hv.rubric_version_id, hv.seq,
               hv.verdict, hv.reviewer, hv.note, hv.created_at, hv.replaces_id,
               hv.reviewer_key, hv.stream, hv.review_seconds, hv.option, previous.verdict,
               previous.option)
        .join(hv, hv.id == ranked.c.id)
        .outerjoin(previous, previous.id == hv.replaces_id)
        .where(ranked.c.newest == 1))


def review_rows_query(sources: dict[int, tuple[int, int]], within):
    """``current_streams_query``'s reviewers' rows (not adjudications) of the responses of
    ``within``, with only what ``ReviewRow`` holds: (criterion of the version, id, response,
    verdict, reviewer, reviewer key, seconds, option). No note, timestamp or replaced
    verdict to read and convert (82,000 rows at 100,000 responses)."""
    hv = m.HumanVerdictRow
    ranked = _ranked(sources, (), within)
    return (
        select(ranked.c.target, hv.id, hv.response_id, hv.verdict, hv.reviewer,
               hv.reviewer_key, hv.review_seconds, hv.option)
        .join(hv, hv.id == ranked.c.id)
        .where(ranked.c.newest == 1, hv.stream != m.ADJUDICATION_STREAM))


def _ranked(sources: dict[int, tuple[int, int]], keys: Sequence[tuple[int, int]], within):
    """Per (response, criterion of the version, stream) its verdicts ranked newest first
    (the newest version, then the highest ``seq``)."""
    hv = m.HumanVerdictRow
    target = case({source: to for source, (to, _n) in sources.items()}, value=hv.criterion_id)
    number = case({source: n for source, (_to, n) in sources.items()}, value=hv.criterion_id)
    wanted_criteria = {cid for _rid, cid in keys}
    source_ids = [s for s, (to, _n) in sources.items()
                  if within is not None or to in wanted_criteria]
    responses = (hv.response_id.in_(within) if within is not None
                 else hv.response_id.in_(sorted({rid for rid, _cid in keys})))
    return (
        select(target.label("target"), hv.id.label("id"),
               func.row_number().over(partition_by=(hv.response_id, target, hv.stream),
                                      order_by=(number.desc(), hv.seq.desc())).label("newest"))
        .where(responses, hv.criterion_id.in_(source_ids))
        .subquery("ranked"))


def _info(row) -> HumanVerdictInfo:
    return effective_repo.verdict_info(row[0], row[1:])


def table_rows_query(rubric_version_id: int, response_ids: Sequence[int],
                     criteria: Iterable[int] | None = None):
    """(response, criterion, status, verdict, human verdict id, carried from) of these
    responses under the version, through the table's (version, response, criterion) key."""
    ev = m.EffectiveVerdictRow
    query = (select(ev.response_id, ev.criterion_id, ev.status, ev.verdict,
                    ev.human_verdict_id, ev.carried_from)
             .where(ev.rubric_version_id == rubric_version_id,
                    ev.response_id.in_(list(response_ids))))
    if criteria is not None:
        query = query.where(ev.criterion_id.in_(sorted(set(criteria))))
    return query


def decisions(session: Session, rubric_version_id: int, response_ids: Iterable[int],
              criteria: Iterable[int] | None = None, *,
              sight: Sight = blindness.EVERYTHING) -> Decisions:
    """Every decision of these responses under the version (``criteria``: of these criteria
    of the version only) with each reviewer's current verdict, as ``sight`` may see them."""
    ids = sorted(set(response_ids))
    wanted = None if criteria is None else sorted(set(criteria))
    if not ids:
        return {}
    sources = verdict_repo.carry_sources(session, rubric_version_id)
    found: Decisions = defaultdict(dict)
    for chunk in id_chunks(ids):
        rows = session.execute(table_rows_query(
            rubric_version_id, chunk, wanted)).all()
        if not rows:
            continue
        streams: dict[tuple[int, int], list[HumanVerdictInfo]] = defaultdict(list)
        for row in session.execute(current_streams_query(
                sources, [(rid, cid) for rid, cid, *_rest in rows])):
            info = _info(row)
            streams[(info.response_id, info.criterion_id)].append(info)
        for rid, cid, status, verdict, applied_id, carried in rows:
            current = streams.get((rid, cid), [])
            reviews = tuple(sorted((h for h in current if not h.adjudication),
                                   key=lambda h: h.id))
            adjudication = next((h for h in current if h.adjudication), None)
            applied = next((h for h in current if h.id == applied_id), None)
            found[rid][cid] = HumanDecision(
                criterion_id=cid, status=status,
                verdict=None if verdict is None else Verdict(verdict), applied=applied,
                reviews=reviews, adjudication=adjudication, carried_from=carried)
    return blindness.visible_decisions(sight, found)


def current_reviews(session: Session, rubric_version_id: int,
                    dataset_id: int) -> list[HumanVerdictInfo]:
    """Every reviewer's current verdict (not adjudications) on the keys of the review set's
    ``effective_verdicts``, by response, criterion, then id: the ``reviews`` of every
    ``decisions`` of the set, in one window query over the reviewed responses instead of
    whole decisions built in chunks (the Agreement page's reviewers at 5,000 responses)."""
    keys, sources, within = _set_streams(session, rubric_version_id, dataset_id)
    if not keys:
        return []
    query = current_streams_query(sources, (), within)
    found = [info for info in map(_info, session.execute(query))
             if not info.adjudication and (info.response_id, info.criterion_id) in keys]
    return sorted(found, key=lambda h: (h.response_id, h.criterion_id, h.id))


def _set_streams(session: Session, rubric_version_id: int, dataset_id: int,
                 response_ids: Sequence[int] | None = None
                 ) -> tuple[set[tuple[int, int]], dict, Select | list[int] | None]:
    """The (response, criterion) keys of the set's ``effective_verdicts``, the version's
    carry sources and the query of its reviewed responses (None without keys);
    ``response_ids``: of these responses only (their reviewed ones' ids, not a query)."""
    ev = m.EffectiveVerdictRow
    query = (select(ev.response_id, ev.criterion_id)
             .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id))
    if response_ids is not None:
        query = query.where(ev.response_id.in_(list(response_ids)))
    keys = {(rid, cid) for rid, cid in plain_rows(session.connection(), query)}  # driver rows
    if not keys:
        return keys, {}, None
    sources = verdict_repo.carry_sources(session, rubric_version_id)
    within = (sorted({rid for rid, _cid in keys}) if response_ids is not None else
              effective_repo.reviewed_ids_query(rubric_version_id, dataset_id).order_by(None))
    return keys, sources, within


class ReviewRow(NamedTuple):
    """One reviewer's current verdict as the Agreement report reads it: the fields of
    ``HumanVerdictInfo`` it needs, without building one per verdict (120,000 at 100,000
    responses)."""

    response_id: int
    criterion_id: int
    id: int
    choice: Verdict | str
    reviewer_key: str
    reviewer: str
    review_seconds: float | None


def current_review_rows(session: Session, rubric_version_id: int, dataset_id: int,
                        response_ids: Sequence[int] | None = None) -> list[ReviewRow]:
    """``current_reviews`` as ``ReviewRow``s, in the same order (``response_ids``: of these
    responses only)."""
    keys, sources, within = _set_streams(session, rubric_version_id, dataset_id,
                                         response_ids)
    if not keys:
        return []
    verdict_of = {v.value: v for v in Verdict}
    found = [
        ReviewRow(rid, cid, vid, option if option is not None else verdict_of[verdict], key,
                  reviewer, seconds)
        for cid, vid, rid, verdict, reviewer, key, seconds, option
        in plain_rows(session.connection(), review_rows_query(sources, within))  # Core rows
        if (rid, cid) in keys]
    found.sort(key=itemgetter(0, 1, 2))
    return found


def decisions_of(session: Session, rubric_version_id: int,
                 keys: Iterable[tuple[int, int]]) -> Decisions:
    """The whole decisions of these (response, criterion of the version) only: per
    criterion, its responses, so a few disputed criteria do not read whole responses."""
    by_criterion: dict[int, list[int]] = defaultdict(list)
    for rid, cid in set(keys):
        by_criterion[cid].append(rid)
    found: Decisions = defaultdict(dict)
    for cid, rids in sorted(by_criterion.items()):
        for rid, per in decisions(session, rubric_version_id, rids, [cid]).items():
            found[rid].update(per)
    return dict(found)


def viewers_keys_query(sources: dict[int, tuple[int, int]], viewer: str,
                       response_ids: Sequence[int]):
    """(response, criterion of the version) the viewer has answered among these responses
    (carried verdicts on the criterion they apply to), through the verdicts' (response,
    criterion, stream, seq) key."""
    hv = m.HumanVerdictRow
    target = case({source: to for source, (to, _n) in sources.items()}, value=hv.criterion_id)
    return (select(hv.response_id, target)
            .where(hv.response_id.in_(list(response_ids)),
                   hv.criterion_id.in_(list(sources)),
                   and_(hv.stream == viewer, hv.stream != m.ADJUDICATION_STREAM))
            .distinct())


def answered_keys(session: Session, rubric_version_id: int, sight: Sight,
                  response_ids: Sequence[int]) -> set[tuple[int, int]]:
    """(response, criterion of the version) among these responses that the blind viewer
    answered themselves: the only decisions they may see."""
    if sight.viewer is None or not response_ids:
        return set()
    sources = verdict_repo.carry_sources(session, rubric_version_id)
    ids = sorted(response_ids)
    answered: set[tuple[int, int]] = set()
    for chunk in id_chunks(ids):
        answered.update((rid, cid) for rid, cid in session.execute(viewers_keys_query(
            sources, sight.viewer, chunk)))
    return answered


def decided_keys(session: Session, rubric_version_id: int, dataset_id: int,
                 response_ids: Sequence[int] | None = None) -> dict[int, set[int]]:
    """Response -> the criteria ``effective_repo.score_decisions`` holds a decision of (a
    standing verdict, or disputed) in the set (among ``response_ids``), without building
    the decisions: one row per response, its criteria joined in a string (a row per key,
    40,000 at 100,000 responses, and a set built from them was most of 0.3 s)."""
    ev = m.EffectiveVerdictRow
    query = (_decided_query(rubric_version_id, dataset_id)
             .with_only_columns(ev.response_id,
                                func.aggregate_strings(cast(ev.criterion_id, String), ","))
             .group_by(ev.response_id))
    rows = _rows_of(session, query, ev.response_id, response_ids)
    return {rid: set(map(int, cids.split(","))) for rid, cids in rows}


def _rows_of(session: Session, query: Select, response_id, response_ids: Sequence[int] | None
             ) -> list:
    """``query``'s rows as plain tuples: all of them, or those of ``response_ids`` (read
    in chunks of ids)."""
    connection = session.connection()
    if response_ids is None:
        return connection.execute(query).all()
    ids = sorted(set(response_ids))
    return [row for chunk in id_chunks(ids) for row in connection.execute(
        query.where(response_id.in_(chunk)))]


def _decided_query(rubric_version_id: int, dataset_id: int) -> Select:
    """(response, criterion) of the set's decided or disputed keys."""
    ev = m.EffectiveVerdictRow
    return (select(ev.response_id, ev.criterion_id)
            .where(ev.rubric_version_id == rubric_version_id, ev.dataset_id == dataset_id,
                   ev.human_verdict_id.is_not(None) | (ev.status == "disputed")))


def unanswered_query(sources: dict[int, tuple[int, int]], rubric_version_id: int,
                     dataset_id: int, viewer: str | None) -> Select:
    """``_decided_query`` less the keys the viewer answered themselves (``answered_keys``'
    rule: a row of their stream, carried ones on the criterion they apply to), as one
    NOT EXISTS probe of the verdicts' (response, criterion, stream, seq) key per decided
    key: only the hidden keys come back, not every decided and every answered key."""
    query = _decided_query(rubric_version_id, dataset_id)
    if viewer is None:
        return query
    ev, hv = m.EffectiveVerdictRow, m.HumanVerdictRow
    if all(source == to for source, (to, _n) in sources.items()):
        same = hv.criterion_id == ev.criterion_id  # no carried criteria: the key's own
    else:
        target = case({source: to for source, (to, _n) in sources.items()},
                      value=hv.criterion_id)
        same = and_(hv.criterion_id.in_(list(sources)), target == ev.criterion_id)
    answered = select(hv.id).where(hv.response_id == ev.response_id, same,
                                   hv.stream == viewer, hv.stream != m.ADJUDICATION_STREAM)
    return query.where(~answered.exists())


def hidden_decisions(session: Session, rubric_version_id: int, dataset_id: int,
                     sight: Sight, response_ids: Sequence[int] | None = None
                     ) -> tuple[dict[int, set[int]], dict[int, frozenset[int]]]:
    """(``decided_keys``, response -> the decided criteria ``sight`` may not see, for the
    responses with one)."""
    decided = decided_keys(session, rubric_version_id, dataset_id, response_ids)
    if sight.sees_all or not decided:
        return decided, {}
    return decided, unanswered_keys(session, rubric_version_id, dataset_id, sight,
                                    response_ids)


def unanswered_keys(session: Session, rubric_version_id: int, dataset_id: int,
                    sight: Sight, response_ids: Sequence[int] | None = None
                    ) -> dict[int, frozenset[int]]:
    """Response -> the decided criteria of the set (among ``response_ids``) that the blind
    viewer has not answered, for the responses with one (``unanswered_query``)."""
    sources = verdict_repo.carry_sources(session, rubric_version_id)
    query = unanswered_query(sources, rubric_version_id, dataset_id, sight.viewer)
    rows = _rows_of(session, query, m.EffectiveVerdictRow.response_id, response_ids)
    hidden: dict[int, set[int]] = {}
    for rid, cid in rows:
        hidden.setdefault(rid, set()).add(cid)
    return {rid: frozenset(cids) for rid, cids in hidden.items()}


def hidden_responses(session: Session, rubric_version_id: int, dataset_id: int,
                     sight: Sight) -> set[int]:
    """The set's reviewed responses with a decision ``sight`` may not see (none for a
    viewer who sees every verdict): only theirs differ from the kept effective scores."""
    if sight.sees_all:
        return set()
    return set(unanswered_keys(session, rubric_version_id, dataset_id, sight))


def score_decisions(session: Session, rubric_version_id: int, response_ids: Sequence[int],
                    *, dataset_id: int | None = None,
                    sight: Sight = blindness.EVERYTHING) -> Decisions:
    """The decisions effective scores need (``effective_repo.score_decisions``: no
    reviewer's verdicts), those a blind viewer has not answered left out (their response
    kept, empty, as ``blindness.visible_decisions`` leaves it)."""
    found = effective_repo.score_decisions(session, rubric_version_id, dataset_id,
                                           response_ids)
    if sight.sees_all or not found:
        return found
    answered = answered_keys(session, rubric_version_id, sight, sorted(found))
    return {rid: {cid: d for cid, d in per.items() if (rid, cid) in answered}
            for rid, per in found.items()}
