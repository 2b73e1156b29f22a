"""The reads as they were before they were switched onto ``effective_verdicts`` and the
stored panel decisions (issue 41): the consensus rule run over every verdict of the
responses read, the disputes found by grouping the verdicts, a panel's grades recomputed
from its members' grades and its members' alpha from those. ``recomputed()`` makes the
services read that way for the duration of a ``with`` block, so a test (or
benchmarks/scale.py) can compare, or time, the very same service both ways on the same
data."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

from sqlalchemy import select

from storage import export_records, exports
from storage import models as m
from storage.repositories import effective as effective_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import (
    agreement_people,
    agreement_sources,
    blindness,
    calibration_candidates,
    consensus,
    effective_reads,
    panel_agreement,
    panel_results,
    panels,
)


def decisions(session, version_id, ids, criteria=None, *, sight=blindness.EVERYTHING):
    return blindness.visible_decisions(
        sight, consensus.decisions(session, list(ids), version_id, criteria))


def score_decisions(session, version_id, ids, *, dataset_id=None,
                    sight=blindness.EVERYTHING):
    return decisions(session, version_id, ids, sight=sight)


def decisions_of(session, version_id, keys):
    return consensus.decisions_of(session, keys, version_id)


def dispute_page(session, version_id, dataset_id, limit, keys=()):
    return verdict_repo.dispute_page(session, dataset_id, version_id, limit, keys)


def dispute_keys(session, version_id, dataset_id, statuses=()):
    return verdict_repo.disputed_candidates(session, dataset_id, version_id)


def reviewed_response_ids(session, version_id, dataset_id):
    return sorted(verdict_repo.response_ids_reviewed_in(session, dataset_id, version_id))


def decided_rows(session, version_id, criterion_id):
    row = session.get(m.CriterionRow, criterion_id)
    found = consensus.decisions(session, verdict_repo.response_ids_reviewed_on(session, row),
                                version_id)
    return sorted((rid, d.applied.verdict.value, d.applied.option)
                  for rid, per in found.items() if (d := per.get(criterion_id)) is not None
                  and d.applied is not None)


def decided_ids(session, version_id):
    """Every reviewed response of a live dataset (the calibration candidates' old ids)."""
    sources = verdict_repo.carry_sources(session, version_id)
    return list(session.scalars(
        select(m.HumanVerdictRow.response_id)
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .join(m.DatasetRow, m.DatasetRow.id == m.ResponseRow.dataset_id)
        .where(m.HumanVerdictRow.criterion_id.in_(list(sources)),
               m.DatasetRow.archived.is_(False)).distinct()))


def reviewer_verdicts(session, version_id, dataset_id):
    """Agreement's reviewers' own verdicts, from ``consensus.gather`` (ORM rows)."""
    ids = verdict_repo.response_ids_reviewed_in(session, dataset_id, version_id)
    reviews, _adj, _numbers, _v = consensus.gather(session, ids, version_id)
    return [h for rid in sorted(reviews) for cid in sorted(reviews[rid])
            for h in reviews[rid][cid]]


def panel_sources(sessions, version_id, dataset_id, within=None, stored=None, key=None):
    """Agreement's panel sources from every PanelGrade (``panel_results.recomputed_sources``),
    kept to the verdicts of the responses ``within`` selects, as the page's kept report reads
    them (``stored``, the panels' grades kept by the judges' stamp, is not used: every
    grade is recomputed; nor ``key``, the shared key tuples, a matter of memory only)."""
    found = panel_results.recomputed_sources(sessions, version_id, dataset_id)
    if within is None:
        return found
    with sessions() as session:
        ids = set(session.scalars(within))
    return [dataclasses.replace(
        source, verdicts={k: v for k, v in source.verdicts.items() if k[0] in ids},
        reasons={k: v for k, v in source.reasons.items() if k[0] in ids}) for source in found]


def reviewer_rows(session, version_id, dataset_id, response_ids=None):
    """Agreement's reviewers' rows (``agreement_people.reviewer_rows``) from
    ``consensus.gather``, as the light rows the kept report stores (``response_ids``: of
    these responses, as the stored rows advanced over appended verdicts read them)."""
    wanted = None if response_ids is None else set(response_ids)
    return [effective_reads.ReviewRow(h.response_id, h.criterion_id, h.id, h.choice,
                                      h.reviewer_key, h.reviewer, h.review_seconds)
            for h in reviewer_verdicts(session, version_id, dataset_id)
            if wanted is None or h.response_id in wanted]


SWAPS = [
    (effective_reads, "decisions", decisions),
    (effective_reads, "score_decisions", score_decisions),
    (effective_reads, "decisions_of", decisions_of),
    (effective_repo, "dispute_page", dispute_page),
    (effective_repo, "dispute_keys", dispute_keys),
    (effective_repo, "reviewed_response_ids", reviewed_response_ids),
    (effective_repo, "decided_rows", decided_rows),
    (calibration_candidates, "decided_ids", decided_ids),
    # panels' grades from every member's grade, alpha from every panel grade (issue 41)
    (panels, "panel_grades", panels.recomputed_grades),
    (panel_agreement, "member_agreement", panel_agreement.recounted_agreement),
    (panel_results, "panel_columns", panel_results.recomputed_columns),
    (panel_results, "page_columns", panel_results.recomputed_columns),
    # Agreement's panel sources from every PanelGrade (issue 41, step 4)
    (agreement_sources, "panel_sources", panel_sources),
    (agreement_sources, "reviewer_verdicts", reviewer_verdicts),
    # HumanVerdictInfos read alike (people's rows of the report: agreement_people)
    (agreement_people, "reviewer_rows", reviewer_rows),
    # the exports' records built per grade, not read as rows (issue 41, the export)
    (exports, "records", export_records.records),
]


@contextlib.contextmanager
def recomputed() -> Iterator[None]:
    """Inside the block the services read as before the switch (not thread-safe: one
    process, one reader at a time)."""
    saved = [(module, name, getattr(module, name)) for module, name, _old in SWAPS]
    try:
        for module, name, old in SWAPS:
            setattr(module, name, old)
        yield
    finally:
        for module, name, new in saved:
            setattr(module, name, new)
