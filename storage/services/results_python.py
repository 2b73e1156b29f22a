"""The Results page computed from Python objects: the path while a judge panel used in the
view has a member still grading, and the reference the SQL page
(storage.services.results_query) is tested against. Judge facts
over the whole dataset, effective scores of the reviewed responses by the one aggregation,
ids filtered and sorted in Python (storage.services.results_order)."""

from __future__ import annotations

from collections.abc import Sequence

from storage.convert import criterion_info
from storage.dto import CriterionInfo
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.id_chunks import id_chunks
from storage.repositories import datasets as dataset_repo
from storage.repositories import effective as effective_repo
from storage.repositories import results as repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories.results import Scores
from storage.services import blindness, effective_reads, panel_reads, reviews
from storage.services.blindness import Sight
from storage.services.results_order import histogram, score_range, sort_ids
from storage.services.results_types import (
    DEFAULT_SCORE_GAP,
    SNIPPET_CHARS,
    VERDICTS,
    GradeFacts,
    PanelColumn,
    ResultsFilter,
    ResultsPage,
    SortKey,
    VerdictFilter,
    results_row,
)


def _effective_overlay(
    sessions: SessionFactory, run_ids: list[int], reviewed_ids: list[int],
    sight: Sight = blindness.EVERYTHING,
) -> dict[tuple[int, int], tuple[float | None, str | None]]:
    """Effective scores of the reviewed responses, computed by the one aggregation path
    with the human verdicts ``sight`` may see (the judge's verdict where one is hidden)."""
    overlay: dict[tuple[int, int], tuple[float | None, str | None]] = {}
    if not reviewed_ids:
        return overlay
    for run_id in run_ids:
        for chunk in id_chunks(reviewed_ids):
            for grade in reviews.effective_grades_for_run(
                    sessions, run_id, chunk, sight=sight,
                    scores_only=True):
                overlay[(grade.response_id, run_id)] = (grade.score, grade.error)
    return overlay



def grade_facts(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], score_gap: float = DEFAULT_SCORE_GAP, with_scores: bool = True,
) -> GradeFacts:
    """Failures, disagreements and judge scores of these runs (the slow, cacheable part).
    ``with_scores=False``: without the judge scores (``judged`` None), which only the
    Python page reads (it reads them itself then): every grade of the runs, ~1 s at
    100,000 responses x 3 runs on SQLite, for pages that almost always read in SQL."""
    if not 0 <= score_gap <= 1e9:
        raise InvalidInputError("the score gap must be a number of 0 or more")
    with sessions() as session:
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        verdicts, scores = map(frozenset, repo.disagreement(session, runs, score_gap))
        return GradeFacts(
            run_ids=tuple(runs), failed=frozenset(repo.failed_ids(session, runs)),
            disagree=verdicts | scores,
            judged=repo.judge_scores(session, runs) if with_scores else None,
            verdicts_differ=verdicts, scores_differ=scores, score_gap=score_gap)



def page_in_python(
    sessions: SessionFactory, *, dataset_id: int, rubric_version_id: int,
    run_ids: Sequence[int], filters: ResultsFilter | None = None, sort: SortKey = "response",
    sort_run_id: int | None = None, descending: bool = False, offset: int = 0,
    limit: int = 50, score_gap: float = DEFAULT_SCORE_GAP, facts: GradeFacts | None = None,
    reviewed_scores: Scores | None = None, distribution_bins: int = 0,
    panels: Sequence[PanelColumn] = (), sort_panel_id: int | None = None,
    sight: Sight = blindness.EVERYTHING,
) -> ResultsPage:
    """One page of the responses x runs table of effective scores.

    ``sort``: ``response`` (dataset order), ``score`` (effective score of ``sort_run_id``,
    default the first run), ``spread`` (largest gap between runs first when descending),
    ``reviewed`` (number of reviewed criteria). Responses without a score sort last.
    ``facts`` and ``reviewed_scores`` (from ``grade_facts`` and ``reviewed_effective_scores``)
    may be passed in from a cache; they are computed here otherwise.
    ``distribution_bins``: also count the matching responses' effective scores per run in
    that many equal bins (``ResultsPage.distribution``).
    ``panels``: judge panels shown as columns after the runs: the score range (on a panel,
    or on any column), the verdict filter (``VerdictFilter.panel_id``), ``sort="score"``
    with ``sort_panel_id`` and the distribution cover them like runs. Failures,
    disagreements and the spread stay the runs' own (a panel is made of them).
    ``sight`` (storage/services/blindness.py): whose eyes the table is read with. Human
    verdicts it may not see yet count as not given, in the effective scores, the verdict
    filter and the disputed criteria; ``reviewed_scores`` and ``panels`` must have been
    read with the same sight. The review counts stay everyone's (they tell that someone
    answered, not what).
    """
    filters = filters or ResultsFilter()
    if limit < 1 or offset < 0:
        raise InvalidInputError("page size must be at least 1 and the offset not negative")
    with sessions() as session:
        dataset_repo.get_dataset(session, dataset_id)
        runs = repo.check_runs(session, dataset_id, rubric_version_id, run_ids)
        panels = [panel_reads.whole_column(session, p) for p in panels]
        criteria_count = repo.criteria_count(session, rubric_version_id)
        dataset_total = dataset_repo.response_count(session, dataset_id)
        candidates = repo.candidate_ids(session, dataset_id, filters.search, filters.metadata)
        review_counts = repo.review_counts(session, dataset_id, rubric_version_id)
        wanted = (verdict_matches(session, dataset_id, rubric_version_id, runs,
                                   filters.verdict, panels, sight)
                  if filters.verdict else None)
    if facts is None or facts.run_ids != tuple(runs) or facts.score_gap != score_gap:
        facts = grade_facts(sessions, dataset_id=dataset_id,
                            rubric_version_id=rubric_version_id, run_ids=runs,
                            score_gap=score_gap)
    failed, disagree, judged = facts.failed, facts.disagree, facts.judged
    if judged is None:
        with sessions() as session:
            judged = repo.judge_scores(session, runs)

    ids = candidates
    if wanted is not None:
        ids = [i for i in ids if i in wanted]
    if filters.failed_only:
        ids = [i for i in ids if i in failed]
    if filters.disagree_only:
        ids = [i for i in ids if i in disagree]
    if filters.reviewed == "reviewed":
        ids = [i for i in ids if review_counts.get(i, 0) > 0]
    elif filters.reviewed == "not_reviewed":
        ids = [i for i in ids if review_counts.get(i, 0) == 0]

    needs_scores = (sort in ("score", "spread") or filters.min_score is not None
                    or filters.max_score is not None)
    reviewed_here = [i for i in ids if review_counts.get(i, 0) > 0]
    effective = dict(judged)
    if reviewed_scores is not None:
        effective.update(reviewed_scores)
    elif needs_scores or distribution_bins:
        effective.update(_effective_overlay(sessions, runs, reviewed_here, sight))

    def scores_of(rid: int) -> list[float | None]:
        return [effective.get((rid, run), (None, None))[0] for run in runs]

    panel_ids = [p.panel_id for p in panels]

    def panel_scores_of(rid: int) -> list[float | None]:
        return [p.scores.get(rid, (None, None))[0] for p in panels]

    if filters.min_score is not None or filters.max_score is not None:
        ids = score_range(ids, filters, runs, panel_ids, scores_of, panel_scores_of)

    if sort == "score" and sort_panel_id is not None:
        if sort_panel_id not in panel_ids:
            raise InvalidInputError("the sort applies to a judge panel that is not shown")
        position = panel_ids.index(sort_panel_id)
        ids = sort_ids(ids, sort, None, [0], lambda i: [panel_scores_of(i)[position]],
                      review_counts, descending)
    else:
        ids = sort_ids(ids, sort, sort_run_id, runs, scores_of, review_counts, descending)
    page_ids = ids[offset:offset + limit]
    if not needs_scores and reviewed_scores is None:
        effective.update(_effective_overlay(
            sessions, runs, [i for i in page_ids if review_counts.get(i, 0) > 0], sight))
    with sessions() as session:
        texts = repo.snippets(session, page_ids, SNIPPET_CHARS)
        disputed = disputed_labels(session, [i for i in page_ids if review_counts.get(i, 0) > 0],
                             rubric_version_id, sight)
    rows = tuple(
        results_row(rid, texts[rid], runs, effective, judged, failed=rid in failed,
                    verdicts_differ=rid in facts.verdicts_differ,
                    scores_differ=rid in facts.scores_differ,
                    reviewed_count=review_counts.get(rid, 0), criteria_count=criteria_count,
                    disputed=disputed.get(rid, ()), panel_scores=tuple(panel_scores_of(rid)))
        for rid in page_ids)
    return ResultsPage(
        run_ids=tuple(runs), rows=rows, total=len(ids), dataset_total=dataset_total,
        failed_total=len(failed), disagree_total=len(disagree),
        reviewed_total=len(review_counts), offset=offset, limit=limit,
        distribution=(histogram(runs, ids, scores_of, distribution_bins)
                      + histogram(panel_ids, ids, panel_scores_of, distribution_bins,
                                   panels=True)),
        panel_ids=tuple(panel_ids),
    )



def disputed_labels(session, response_ids: list[int], rubric_version_id: int,
              sight: Sight = blindness.EVERYTHING) -> dict[int, tuple[str, ...]]:
    """The disputed criteria's labels per response (only the page's reviewed responses)
    that ``sight`` may see."""
    if not response_ids:
        return {}
    criteria = [criterion_info(c) for c in rubric_repo.get_version(session, rubric_version_id)
                .criteria]
    order = {c.id: (c.position, c.label) for c in criteria}
    found = effective_reads.score_decisions(session, rubric_version_id, response_ids,
                                            sight=sight)
    return {rid: tuple(order[cid][1] for cid in sorted(
        (cid for cid, d in per.items() if d.disputed and cid in order),
        key=lambda cid: order[cid][0])) for rid, per in found.items()}


def check_verdict_filter(session, rubric_version_id: int, runs: list[int],
                         wanted: VerdictFilter, panels: Sequence[PanelColumn] = ()
                         ) -> tuple[CriterionInfo, PanelColumn | None]:
    """(the criterion, the panel it applies to) of a valid verdict filter."""
    criterion = next((criterion_info(c) for c in rubric_repo.criteria_of(
        session, rubric_version_id) if c.id == wanted.criterion_id), None)
    if criterion is None:
        raise InvalidInputError(f"criterion {wanted.criterion_id} is not in the rubric version "
                                "shown; pick the criterion again")
    allowed = filter_choices(criterion)
    if wanted.verdict not in allowed:
        raise InvalidInputError(
            f"unknown verdict {wanted.verdict!r} for criterion {criterion.label!r}; use "
            + ", ".join(allowed))
    panel = next((p for p in panels if p.panel_id == wanted.panel_id), None)
    if wanted.panel_id is not None and panel is None:
        raise InvalidInputError("the verdict filter applies to a judge panel that is not "
                                "shown")
    if panel is None and wanted.run_id not in runs:
        raise InvalidInputError("the verdict filter applies to a run that is not selected")
    return criterion, panel


def verdict_matches(session, dataset_id: int, rubric_version_id: int, runs: list[int],
                     wanted: VerdictFilter, panels: Sequence[PanelColumn] = (),
                     sight: Sight = blindness.EVERYTHING) -> set[int]:
    criterion, panel = check_verdict_filter(session, rubric_version_id, runs, wanted, panels)
    # The decided human verdict (storage.services.consensus): a disputed criterion keeps
    # the judge's.
    humans = effective_repo.decided_choices(session, rubric_version_id, dataset_id,
                                            wanted.criterion_id)
    if not sight.sees_all and humans:
        seen = effective_reads.score_decisions(session, rubric_version_id, list(humans),
                                               dataset_id=dataset_id, sight=sight)
        humans = {rid: v for rid, v in humans.items()
                  if wanted.criterion_id in seen.get(rid, {})}
    if panel is not None:
        judged = {rid for (rid, cid), verdict in panel.verdicts.items()
                  if cid == wanted.criterion_id and verdict == wanted.verdict}
    else:
        judged = repo.judge_verdict_ids(session, wanted.run_id, wanted.criterion_id,
                                        wanted.verdict, by_option=criterion.is_multi_choice)
    return ({rid for rid, choice in humans.items() if choice == wanted.verdict}
            | (judged - humans.keys()))



def filter_choices(criterion: CriterionInfo) -> tuple[str, ...]:
    """What the verdict filter offers on a criterion: MET / UNMET / CANNOT_ASSESS, or a
    multi-choice criterion's option labels and CANNOT_ASSESS (an abstention naming no
    option), each compared with the stored choice."""
    if criterion.options is None:
        return VERDICTS
    return (*(o.label for o in criterion.options), "CANNOT_ASSESS")

