"""The trust report's reads beyond the agreement report: in one session the judges' ones
(``read_judges``: the responses' lengths, ``length()`` in the database; the runs that
replayed every answer from the cache, the option and criterion shuffles the runs recorded
(trust_positions) and the runs' own samples (trust_samples)); apart, which responses the
review set drew at random (``read_sample``, read again after every verdict); and which runs
are samples of one judge."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

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
    # the responses the review set's sample is drawn from (review_queue), ascending
    population: tuple[int, ...] = ()


def read(sessions: SessionFactory, report: AgreementReport) -> Reads:
    found = read_judges(sessions, report)
    sample, size = read_sample(sessions, report.data, found.population)
    return replace(found, sample=sample, sample_size=size)


def read_judges(sessions: SessionFactory, report: AgreementReport) -> Reads:
    """The reads that change only with the judges (a grade landing, a run added): every
    one but the review set's sample (empty here, ``read_sample``)."""
    data = report.data
    run_ids = [s.run_id for s in data.sources if s.run_id is not None]
    options = {c.id: [o.label for o in c.options] for c in data.criteria if c.options}
    with sessions() as session:
        lengths = dict(session.execute(
            select(m.ResponseRow.id, func.length(m.ResponseRow.output))
            .where(m.ResponseRow.dataset_id == data.dataset_id)).all())
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
    return Reads(lengths=lengths, sample=frozenset(), sample_size=0, replayed=replayed,
                 shuffles=shuffles, within=within, listings=listings, pairwise=pairwise,
                 population=tuple(sorted(ids)))


def read_sample(sessions: SessionFactory, data, population: tuple[int, ...]
                ) -> tuple[frozenset[int], int]:
    """Which of ``population`` the review set drew at random, and its size setting."""
    with sessions() as session:
        settings = review_sets.settings_of(session, data.dataset_id, data.rubric_version_id)
    sample = review_sets.sample_ids(data.dataset_id, data.rubric_version_id,
                                    list(population), settings.sample_size)
    return frozenset(sample), settings.sample_size


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
