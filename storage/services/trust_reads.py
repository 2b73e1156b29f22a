"""The trust report's reads beyond the agreement report, in one session: the responses'
lengths (``length()`` in the database), which responses the review set drew at random, the
runs that replayed every answer from the cache, the option and criterion shuffles the runs
recorded (trust_positions) and the runs' own samples (trust_samples); and which runs are
samples of one judge."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import func, select

from storage import models as m
from storage.engine import SessionFactory
from storage.repositories import results as results_repo
from storage.services import review_sets, trust_pairwise, trust_positions, trust_samples
from storage.services.agreement import AgreementReport
from storage.services.agreement_sources import AgreementSource


@dataclass(frozen=True)
class Reads:
    lengths: dict[int, int]
    sample: frozenset[int]
    sample_size: int
    replayed: frozenset[int]
    shuffles: trust_positions.Shuffles
    # run asking several samples -> its stored samples
    within: dict[int, trust_samples.StoredSamples] = field(default_factory=dict)
    listings: trust_positions.Listings = field(default_factory=dict)  # criterion order
    pairwise: tuple[trust_pairwise.PairwiseJudgeOrder, ...] = ()  # comparisons' judges


def read(sessions: SessionFactory, report: AgreementReport) -> Reads:
    data = report.data
    run_ids = [s.run_id for s in data.sources if s.run_id is not None]
    options = {c.id: [o.label for o in c.options] for c in data.criteria if c.options}
    with sessions() as session:
        lengths = dict(session.execute(
            select(m.ResponseRow.id, func.length(m.ResponseRow.output))
            .where(m.ResponseRow.dataset_id == data.dataset_id)).all())
        settings = review_sets.settings_of(session, data.dataset_id, data.rubric_version_id)
        # the population the Review page draws its sample from (review_queue)
        ids = (results_repo.run_response_ids(session, run_ids) if run_ids
               else list(lengths))
        replayed = frozenset(session.scalars(
            select(m.RunJobStatsRow.run_id).where(
                m.RunJobStatsRow.run_id.in_(run_ids), m.RunJobStatsRow.provider_calls == 0,
                m.RunJobStatsRow.cache_hits > 0))) if run_ids else frozenset()
        shuffles, listings = trust_positions.read_positions(session, run_ids, options)
        within = trust_samples.within_samples(session, run_ids) if run_ids else {}
        pairwise = trust_pairwise.read_pairwise_orders(session, data.rubric_version_id,
                                                       data.dataset_id)
    sample = review_sets.sample_ids(data.dataset_id, data.rubric_version_id, sorted(ids),
                                    settings.sample_size)
    return Reads(lengths=lengths, sample=frozenset(sample),
                 sample_size=settings.sample_size, replayed=replayed, shuffles=shuffles,
                 within=within, listings=listings, pairwise=pairwise)


def sample_groups(report: AgreementReport, replayed: frozenset[int]
                  ) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Per run key: (runs that are samples of the same judge, same judge but replayed)."""
    groups: dict[tuple, list[AgreementSource]] = defaultdict(list)
    for s in report.data.sources:
        if s.run_id is not None and s.per_criterion:
            groups[s.grader, s.model].append(s)
    found = {}
    for members in groups.values():
        live = tuple(s.run_id for s in members if s.run_id not in replayed)
        gone = tuple(s.run_id for s in members if s.run_id in replayed)
        for s in members:
            found[s.key] = (live if s.run_id not in replayed else (s.run_id,), gone)
    return found
