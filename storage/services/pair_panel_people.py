"""People's preferences against a panel of pairwise judges: the panel's summary with people's
decisions in place of its preferences, and judge-vs-people agreement with the panel as the
judge — as storage.services.pair_results and pair_agreement do for one comparison.

People review pairs of a comparison; a panel's members are comparisons of the same two
responses, so a panel pair's reviews are those given on that pair in any member. Per
reviewer the latest answer counts (and the latest adjudication), then
``pair_consensus.decide`` makes the people's decision by the one consensus rule. Blind
review as everywhere: a reviewer sees people's decisions only on the pairs they answered
whole (in any member); adjudicators and admins on every pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grading.pairwise.agreement import judge_vs_people, people_agreement
from grading.pairwise.grader import pair_report
from grading.pairwise.parsing import Side
from grading.pairwise.summary import ComparisonSummary, summarize
from storage.engine import SessionFactory
from storage.repositories import comparisons as comparison_repo
from storage.services import pair_consensus
from storage.services.blindness import sight_of
from storage.services.pair_agreement import CriterionPreferenceAgreement
from storage.services.pair_consensus import PairDecision, PairPreferenceInfo
from storage.services.pair_panel_results import PanelPair, panel_pairs
from storage.services.pair_panels import load_panel
from storage.services.pair_reviews import PairCriterion, comparison_criteria, may_see_pair
from storage.services.reviewers import Actor, Role, require

Reviews = dict[int, list[PairPreferenceInfo]]  # position -> each reviewer's current answer


@dataclass(frozen=True)
class _Pooled:
    pair: PanelPair
    reviews: Reviews
    decisions: dict[int, PairDecision]


def _latest(answers: Sequence[PairPreferenceInfo]) -> PairPreferenceInfo:
    return max(answers, key=lambda p: p.id)


def _pool(pair: PanelPair, reviews, adjudications) -> _Pooled:
    """The pair's reviews over every member pair of it: each reviewer's latest answer and
    the latest adjudication per position, decided by the one consensus rule."""
    ids = [i for i in pair.member_pair_ids if i is not None]
    pooled: Reviews = {}
    decided: dict[int, PairDecision] = {}
    positions = {n for i in ids for n in (*reviews.get(i, {}), *adjudications.get(i, {}))}
    for n in sorted(positions):
        by_reviewer: dict[str, list[PairPreferenceInfo]] = {}
        for i in ids:
            for p in reviews.get(i, {}).get(n, ()):
                by_reviewer.setdefault(p.reviewer_key, []).append(p)
        pooled[n] = [_latest(answers) for answers in by_reviewer.values()]
        adjudged = [a for i in ids if (a := adjudications.get(i, {}).get(n)) is not None]
        decision = pair_consensus.decide(n, pooled[n], _latest(adjudged) if adjudged else None)
        if decision is not None:
            decided[n] = decision
    return _Pooled(pair, pooled, decided)


def _read(sessions: SessionFactory, panel_id: int
          ) -> tuple[list[PairCriterion], list[_Pooled]]:
    with sessions() as session:
        row = load_panel(session, panel_id)
        criteria = comparison_criteria(
            session, comparison_repo.get(session, row.members[0].comparison_id))
        pairs = panel_pairs(session, row)
        ids = [i for p in pairs for i in p.member_pair_ids if i is not None]
        reviews, adjudications = pair_consensus.current(session, ids)
    return criteria, [_pool(p, reviews, adjudications) for p in pairs]


def _applied(decisions: Mapping[int, PairDecision]) -> dict[int, Side | None]:
    return {n: d.side for n, d in decisions.items() if d.status != "disputed"}


def panel_people_results(sessions: SessionFactory, *, actor: Actor, panel_id: int,
                         resamples: int = 1000, seed: int = 0) -> ComparisonSummary | None:
    """The panel's summary with the people's decisions in place of its preferences (through
    the same aggregation), over the pairs the panel judged or people decided; None when
    there is nothing to summarise."""
    require(actor, Role.REVIEWER, "read a panel's results with people's preferences")
    sight = sight_of(actor)
    criteria, pooled = _read(sessions, panel_id)
    positions = [c.position for c in criteria]
    reports = []
    for one in pooled:
        seen = may_see_pair(sight, one.reviews, positions)
        applied = _applied(one.decisions) if seen else {}
        if not (one.pair.judged or any(side is not None for side in applied.values())):
            continue
        panel = one.pair.report
        preferences = [
            p.model_copy(update={"preference": applied[c.position], "error": None})
            if applied.get(c.position) is not None else p
            for c, p in zip(criteria, panel.preferences, strict=True)]
        reports.append(pair_report(preferences, panel.holistic))
    return summarize(reports, resamples=resamples, seed=seed) if reports else None


def panel_preference_agreement(sessions: SessionFactory, *, actor: Actor, panel_id: int,
                               resamples: int = 1000, seed: int = 0
                               ) -> list[CriterionPreferenceAgreement]:
    """Per criterion: the panel's preference against the people's decision (agreed or
    adjudicated), and the people among themselves, on the pairs the viewer may see."""
    require(actor, Role.REVIEWER, "read agreement figures")
    sight = sight_of(actor)
    criteria, pooled = _read(sessions, panel_id)
    positions = [c.position for c in criteria]
    seen = [one for one in pooled if may_see_pair(sight, one.reviews, positions)]
    found = []
    for index, c in enumerate(criteria):
        judge = {n: one.pair.report.preferences[index].preference
                 for n, one in enumerate(seen)}
        people = {n: d.side for n, one in enumerate(seen)
                  if (d := one.decisions.get(c.position)) is not None
                  and d.status != "disputed"}
        answers = {n: {p.reviewer_key: p.side for p in one.reviews.get(c.position, ())}
                   for n, one in enumerate(seen)}
        found.append(CriterionPreferenceAgreement(
            position=c.position, criterion_id=c.criterion_id, criterion=c.criterion.name,
            judge_vs_people=judge_vs_people(judge, people, criterion=c.criterion.name,
                                            resamples=resamples, seed=seed),
            people=people_agreement(answers, criterion=c.criterion.name,
                                    resamples=resamples, seed=seed)))
    return found
