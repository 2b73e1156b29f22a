"""The judges' share of the trust report, kept while only people's verdicts change (issue 41:
caches invalidated by what changed).

At 100,000 responses almost all of the trust report's work depends on the judges alone:
their verdicts over every response (read from the database as arrays), the responses'
lengths, the option and criterion shuffles, the stability figures over their samples and
the length slopes over every response they decided, with the bootstrap draws over every
response those share. A saved human verdict changes none of it: only the corrected
estimates, the length slopes within the human verdict (over the reviewed responses, their
own small draws) and the sentences. So ``judges_part`` makes the share once; the caller
keeps it by the judges' part of the data stamp (``agreement_judge_counts.judge_stamp``: a
grade landing, a run added or a panel filled moves it), and ``trust_report.build_trust``
adds people's part to it.

The share holds numbers only (per judge its values matrix and finished judges-only figures;
the frame's positions, codes and lengths); the judges' code matrices and the draws it was
computed with are let go.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from grading.trust.figures import SharedDraws
from storage.engine import SessionFactory
from storage.services import panels, trust_panels, trust_samples
from storage.services.agreement import AgreementReport
from storage.services.trust_frame import Frame, make_frame
from storage.services.trust_judge import JudgeShare, prepare_share, prepare_stability
from storage.services.trust_reads import Reads, read_judges, sample_groups
from storage.services.trust_stored import StoredVerdicts


@dataclass(frozen=True)
class TrustJudges:
    """The judges' share of one rubric version x dataset's trust report."""

    rubric_version_id: int
    dataset_id: int
    frame: Frame  # rows and columns, codes and lengths (no verdict matrix kept)
    reads: Reads  # the judges' reads (no sample: people's part reads it)
    shares: dict[str, JudgeShare]  # by source key, in the report's order

    def fits(self, report: AgreementReport) -> bool:
        """Made for this report's set, judges, criteria and responses (else made again: a
        response added to the dataset moves no stamp)."""
        data = report.data
        return ((self.rubric_version_id, self.dataset_id)
                == (data.rubric_version_id, data.dataset_id)
                and tuple(self.shares) == trust_judge_keys(report)
                and tuple(self.frame.columns) == tuple(c.id for c in data.criteria)
                and self.frame.positions.same_ids(sorted(data.response_labels)))


def trust_judge_keys(report: AgreementReport) -> tuple[str, ...]:
    """The judges the trust report measures: per-criterion sources with verdicts."""
    data = report.data
    return tuple(j.source.key for j in report.judges
                 if j.source.per_criterion and data.count_of(j.source.key))


def judges_part(sessions: SessionFactory, report: AgreementReport) -> TrustJudges:
    """Every judge's judges-only figures from an agreement report (any viewer's: the judges'
    verdicts are the same in each)."""
    data = report.data
    reads = read_judges(sessions, report)
    frame = make_frame(data.criteria, reads.lengths)
    # the lengths by id are the frame's array now: let go before the making (~11 MB of
    # ints in a dict at 100,000 responses, held through the trust tab's peak)
    reads = replace(reads, lengths={})
    if not data.complete:  # the judges' verdicts over every response, as arrays
        frame.stored = StoredVerdicts(sessions, data)
    # Figures over every response share one set of draws.
    frame.draws = SharedDraws(len(frame.positions))
    groups = sample_groups(report, reads.replayed)
    stabilities: dict[tuple[int, ...], list] = {}
    keys = set(trust_judge_keys(report))
    pending = []
    for judge in report.judges:
        source = judge.source
        if source.key not in keys:
            continue
        within = reads.within.get(source.run_id) if source.run_id is not None else None
        if within is not None:  # the run's own samples measure it; other runs are not needed
            pending.append(prepare_share(
                data, source, reads, frame, {source.key: ((source.run_id,), ())},
                trust_samples.prepare_within(data, frame, source.key, within), within.count))
            continue
        if source.is_panel:
            found = trust_panels.panel_samples(data, frame, reads, groups, source.key,
                                               panels.get_panel(sessions, source.panel_id))
            pending.append(prepare_share(data, source, reads, frame, groups,
                                         found.stability, found.count, found.basis))
            continue
        samples, _gone = groups.get(source.key, ((), ()))
        if len(samples) >= 2 and samples not in stabilities:
            stabilities[samples] = prepare_stability(data, frame, samples)
        pending.append(prepare_share(data, source, reads, frame, groups,
                                     stabilities.get(samples)))
    # the verdict matrices and the stored reads are let go before the figures are finished
    # (the bootstrap's product, the peak of the trust tab): each share holds its codes; a
    # judge's codes asked for after this fail (trust_frame.codes_of), never made from the
    # report's partial verdicts
    frame.matrices, frame.seen, frame.stored = {}, {}, None
    shares = {share.source_key: share for share in (finish() for finish in pending)}
    # What else the figures were made from is let go: the draws, the lengths by id, the
    # runs' shuffles, listings and own samples (people's part reads the population and the
    # comparisons' order only; trust_share_store keeps the rest in the database).
    frame.draws = None
    return TrustJudges(rubric_version_id=data.rubric_version_id, dataset_id=data.dataset_id,
                       frame=frame, reads=replace(reads, shuffles={}, within={},
                                                  listings={}), shares=shares)
