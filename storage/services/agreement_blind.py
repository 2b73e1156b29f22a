"""The Agreement page's inputs as one viewer may see them (blind review).

A reviewer sees other people's verdicts on a criterion of a response only once they have
answered it (storage/services/blindness.py). The Agreement page shows people's verdicts per
response — the disagreement list (the human verdict and note next to each judge's), the
score chart (a human score per response) — and figures computed from them. Rather than
filter each of those, the data they are all computed from is filtered once: for a blind
viewer every human verdict, note and human score they may not see yet is left out, exactly
as if nobody had answered there, and the report is built from that. A reviewer therefore
measures the judges (and the other reviewers) on the criteria they answered themselves;
adjudicators and admins see the figures over everyone's verdicts.

``seen_report`` makes a blind viewer's report from the kept counted one (issue 41: not from
every judge verdict read again): a key whose people's verdict the viewer may not see counts
as the judges' alone there, so the count's rows of the reviewed responses lose that key's
share, and the rest of the count is the kept one's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from storage.services.agreement import AgreementReport
from storage.services.agreement_kept import KeptReport, counted_report
from storage.services.agreement_sources import HUMAN, AgreementData, Key
from storage.services.blindness import Sight


def answered_by(data: AgreementData, sight: Sight) -> frozenset[Key]:
    """The (response, criterion) pairs the viewer answered themselves: the only ones where
    a blind viewer may see other people's verdicts."""
    if sight.viewer is None:
        return frozenset()
    return frozenset(data.reviewer_verdicts.get(sight.viewer, {}))


def as_seen(data: AgreementData, sight: Sight) -> AgreementData:
    """``data`` without the people's verdicts, notes and human scores ``sight`` may not see
    yet (unchanged for an adjudicator or admin)."""
    if sight.sees_all:
        return data
    seen = answered_by(data, sight)
    human = {k: v for k, v in data.verdicts.get(HUMAN, {}).items() if k in seen}
    verdicts = {**data.verdicts, HUMAN: human}
    reasons = {**data.reasons,
               HUMAN: {k: v for k, v in data.reasons.get(HUMAN, {}).items() if k in seen}}
    criteria = [c.id for c in data.criteria]
    whole = {rid for rid in {k[0] for k in human}
             if all((rid, cid) in human for cid in criteria)}
    sources = tuple(
        replace(s, verdict_count=len(human)) if s.is_human else s
        for s in data.sources if not s.is_human or human)
    return replace(
        data, sources=sources, verdicts=verdicts, reasons=reasons,
        human_scores={key: {rid: v for rid, v in per.items() if rid in whole}
                      for key, per in data.human_scores.items()},
        reviewed_responses=len({k[0] for k in human}), fully_reviewed_responses=len(whole),
        reviewer_verdicts={key: kept for key, per in data.reviewer_verdicts.items()
                           if (kept := {k: v for k, v in per.items() if k in seen})},
        reviewer_seconds={key: {rid: s for rid, s in per.items()
                                if any((rid, cid) in seen for cid in criteria)}
                          for key, per in data.reviewer_seconds.items()},
    )


def seen_report(kept: KeptReport, sight: Sight) -> AgreementReport | None:
    """``build_report(as_seen(data, sight))``'s figures from the kept counted report (its
    data holds the judges' verdicts of the reviewed responses only, as the kept one's).
    None when it cannot be made so (the viewer sees no people's verdict: the count's
    sources are not the same; or the count does not describe the verdicts seen)."""
    data = as_seen(kept.report.data, sight)
    if not any(s.is_human for s in data.sources) or kept.keys[:1] != (HUMAN,):
        return None
    seen = answered_by(kept.report.data, sight)
    change: Counter = Counter()
    for rid, share in kept.units.items():
        for row, n in share.items():
            if (rid, row[0]) not in seen:  # people's verdict hidden: the judges' alone
                change[row] -= n
    folded = kept.folded.patched(change)
    return counted_report(data, list(kept.keys), folded)
