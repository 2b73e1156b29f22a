"""Reads switched from recomputing the consensus onto ``effective_verdicts`` (issue 41):
each gives what the recomputation gave, field for field, for every viewer, on a mixed
history (agreed, disputed, adjudicated, carried verdicts, criteria replaced, a dataset
deleted), on SQLite and PostgreSQL; and reads the verdicts through indexes."""

from __future__ import annotations

import dataclasses
import json

import pytest
from sqlalchemy import select

from grading.types import Verdict
from storage import models as m
from storage.convert import criterion_info
from storage.dto import HumanDecision
from storage.repositories import effective as effective_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import verdicts as verdict_repo
from storage.services import (
    blindness,
    calibration_candidates,
    consensus,
    datasets,
    effective_reads,
    labels,
    panel_results,
    panels,
    results,
    review_queue,
    reviews,
    rubrics,
    runs,
    trials,
    verdict_sheet,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import judge_report
from tests.storage.helpers import make_run
from tests.storage.recomputed import decisions as recomputed_decisions
from tests.storage.recomputed import recomputed
from tests.storage.test_agreement_counts import _full_scans, _plan
from tests.storage.test_effective_verdicts import CHOICES, REVIEWERS, _World

SIGHTS = [blindness.EVERYTHING, blindness.NOBODY,
          *(blindness.as_reviewer(who) for who in REVIEWERS)]


def busy_world(sessions, seed: int) -> _World:
    """Three reviewers, adjudications, an import, new versions and replaced criteria
    (carried verdicts and criteria whose carry ended), then a dataset deleted."""
    world = _World(sessions, seed=seed)
    steps = ([world.save] * 6 + [world.adjudicate] * 2 + [world.import_sheet]
             + [world.new_version, world.adopt_wording])
    for _ in range(30):
        world.rng.choice(steps)()
    datasets.delete_dataset(sessions, world.gone.id, confirm=True, delete_human_verdicts=True,
                            actor=ADMIN)
    return world


def _busy(copied_world, seed: int) -> _World:
    """``busy_world`` of ``seed``, which several tests here read: built once per backend,
    then copied."""
    return copied_world(("busy_world", seed), lambda sessions: busy_world(sessions, seed))


def old_decisions(session, version_id, ids, sight, criteria=None):
    """What the reads computed before: the consensus rule over every verdict, then blindness."""
    return recomputed_decisions(session, version_id, ids, criteria, sight=sight)


def _light(found):
    return {rid: {cid: (d.status, d.verdict, d.applied, d.carried_from)
                  for cid, d in per.items()} for rid, per in found.items()}


def test_decisions_from_the_table_equal_the_consensus_for_every_viewer(sessions, copied_world):
    world = _busy(copied_world, 41)
    ids = [r.id for r in world.kept_rows]
    statuses, carried, hidden = set(), 0, 0
    with sessions() as session:
        for version in world.versions:
            criteria = [c.id for c in version.criteria]
            for sight in SIGHTS:
                before = old_decisions(session, version.id, ids, sight)
                assert effective_reads.decisions(session, version.id, ids,
                                                 sight=sight) == before
                some = criteria[:2]
                assert effective_reads.decisions(
                    session, version.id, ids, some, sight=sight) == old_decisions(
                    session, version.id, ids, sight, some)
                light = effective_reads.score_decisions(session, version.id, ids,
                                                        dataset_id=world.kept.id, sight=sight)
                assert _light(light) == _light(before)
                assert _light(effective_reads.score_decisions(
                    session, version.id, ids, sight=sight)) == _light(before)
                statuses |= {d.status for per in before.values() for d in per.values()}
                carried += sum(1 for per in before.values() for d in per.values()
                               if d.carried_from is not None)
            everything = old_decisions(session, version.id, ids, blindness.EVERYTHING)
            seen = old_decisions(session, version.id, ids, blindness.as_reviewer("ana"))
            hidden += sum(len(everything[rid]) - len(seen.get(rid, {})) for rid in everything)
    # The history exercised what the reads must get right (else this would prove little).
    assert statuses == {"agreed", "adjudicated", "disputed"}
    assert carried > 0 and hidden > 0 and len(world.versions) >= 3


def test_a_blind_viewers_hidden_keys_in_one_query_are_the_decided_keys_they_did_not_answer(
        sessions, copied_world):
    """``unanswered_keys`` (one NOT EXISTS query, what the Results page and the panel column
    read for a blind viewer) gives, for the whole set and for a few responses, the decided
    keys less those ``answered_keys`` finds (the rule it replaced), carried criteria
    included; and ``hidden_decisions`` with it."""
    world = _busy(copied_world, 43)
    hidden_total, carried = 0, 0
    with sessions() as session:
        for version in world.versions:
            sources = verdict_repo.carry_sources(session, version.id)
            carried += sum(1 for source, (to, _n) in sources.items() if source != to)
            decided = effective_reads.decided_keys(session, version.id, world.kept.id)
            some = sorted(decided)[::3]
            for sight in SIGHTS[1:]:
                for among in (None, some):
                    keys = decided if among is None else {
                        rid: cids for rid, cids in decided.items() if rid in set(among)}
                    answered = effective_reads.answered_keys(session, version.id, sight,
                                                             sorted(keys))
                    expected = {rid: missing for rid, cids in keys.items() if (missing := (
                        frozenset(c for c in cids if (rid, c) not in answered)))}
                    assert effective_reads.unanswered_keys(
                        session, version.id, world.kept.id, sight, among) == expected
                    assert effective_reads.hidden_decisions(
                        session, version.id, world.kept.id, sight, among) == (keys, expected)
                    hidden_total += sum(map(len, expected.values()))
                assert effective_reads.hidden_responses(
                    session, version.id, world.kept.id, sight) == set(
                    effective_reads.unanswered_keys(session, version.id, world.kept.id,
                                                    sight))
    assert hidden_total > 0 and carried > 0


# --- each switched service, new read against the recomputation it replaced --------------

def _old_candidates(session, version_id):
    """calibration_candidates.candidates as it was: every reviewed response decided."""
    criteria = list(rubric_repo.get_version(session, version_id).criteria)
    sources = verdict_repo.carry_sources(session, version_id)
    ids = list(session.scalars(
        select(m.HumanVerdictRow.response_id)
        .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
        .join(m.DatasetRow, m.DatasetRow.id == m.ResponseRow.dataset_id)
        .where(m.HumanVerdictRow.criterion_id.in_(list(sources)),
               m.DatasetRow.archived.is_(False)).distinct()))
    options = {c.id: calibration_candidates.options_of(c) for c in criteria}
    found: dict[int, list] = {}
    decided = consensus.decisions(session, ids, version_id)
    for rid in sorted(decided):
        for cid, d in decided[rid].items():
            if d.disputed or d.verdict not in (Verdict.MET, Verdict.UNMET):
                continue
            fits, option = calibration_candidates.fit(
                options.get(cid), d.applied.option if d.applied else None)
            if fits:
                found.setdefault(cid, []).append(calibration_candidates.Candidate(
                    response_id=rid, verdict=d.verdict, reason=calibration_candidates._reason(d),
                    status=d.status, carried_from=d.carried_from,
                    human_verdict_id=d.applied.id if d.applied else None, option=option))
    return [c.id for c in criteria], found


def _light_everywhere(value):
    """``value`` with every decision's reviewer verdicts dropped (scores-only reads carry
    none; everything else must be equal)."""
    if isinstance(value, HumanDecision):
        return dataclasses.replace(value, reviews=(), adjudication=None)
    if isinstance(value, dict):
        return {k: _light_everywhere(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_light_everywhere(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{
            f.name: _light_everywhere(getattr(value, f.name))
            for f in dataclasses.fields(value) if f.init})
    return value


def _graded(sessions, world: _World) -> list:
    """Two runs on the first and on the newest version, every kept response graded, and a
    panel of each pair."""
    made = []
    for version in (world.versions[0], world.versions[-1]):
        criteria = version.to_criteria()
        pair = [make_run(sessions, version.id, world.kept.id) for _ in range(2)]
        for index, run in enumerate(pair):
            for row in world.kept_rows:
                choices = [CHOICES.get(c.name, ("MET", "UNMET"))[(row.id + index) % 2]
                           for c in version.criteria]
                runs.record_grade(sessions, run.id, row.id, judge_report(choices, criteria))
        panel = panels.create_panel(sessions, run_ids=[r.id for r in pair], rule="majority",
                                    actor=ADMIN)
        made.append((version, pair, panel))
    return made


def _reads(sessions, world: _World, graded) -> dict:
    """What every switched service answers, per version and viewer."""
    ids = [r.id for r in world.kept_rows]
    out: dict = {}
    for version in world.versions:
        v = version.id
        out[v, "queue"] = review_queue.adjudication_queue(
            sessions, dataset_id=world.kept.id, rubric_version_id=v)
        out[v, "queue+resolved"] = review_queue.adjudication_queue(
            sessions, dataset_id=world.kept.id, rubric_version_id=v, include_resolved=True)
        keys = [(d.response_id, d.criterion_id) for d in out[v, "queue+resolved"]][-2:]
        out[v, "page"] = review_queue.adjudication_page(
            sessions, dataset_id=world.kept.id, rubric_version_id=v, limit=2, keys=keys)
        with sessions() as session:
            out[v, "calibration"] = calibration_candidates.candidates(session, v)[1]
            for criterion in version.criteria:
                out[v, "trial humans", criterion.id] = trials._current_humans(
                    session, criterion_info(criterion))
        for rid in ids:
            out[v, "current", rid] = reviews.current_verdicts(sessions, rid, v)
        for sight in SIGHTS:
            s = sight.viewer, sight.sees_all
            for rid in ids:
                out[v, "detail", rid, s] = review_queue.response_detail(
                    sessions, rid, v, sight=sight)
            out[v, "gold", s] = list(labels.iter_gold_records(
                sessions, v, world.kept.id, sight=sight))
            out[v, "human scores", s] = _light_everywhere(
                reviews.human_scores(sessions, v, ids, sight=sight))
            out[v, "verdict sheet", s] = verdict_sheet.export_verdict_sheet_csv(
                sessions, v, world.kept.id, sight=sight)
    for version, pair, panel in graded:
        for rid in ids:
            out["by response", rid] = reviews.effective_grades_for_response(sessions, rid)
        for sight in SIGHTS:
            s = sight.viewer, sight.sees_all
            for run in pair:
                out[run.id, s] = reviews.effective_grades_for_run(sessions, run.id,
                                                                  sight=sight)
                out[run.id, s, "scores"] = _light_everywhere(reviews.effective_grades_for_run(
                    sessions, run.id, sight=sight, scores_only=True))
            out[panel.id, s] = panel_results.panel_results(sessions, panel.id, sight=sight)
            [column] = panel_results.panel_columns(
                sessions, dataset_id=world.kept.id, rubric_version_id=version.id,
                panel_ids=[panel.id], sight=sight)
            out[panel.id, s, "column"] = column
            page = results.results_page(sessions, dataset_id=world.kept.id,
                                        rubric_version_id=version.id,
                                        run_ids=[r.id for r in pair], sight=sight,
                                        panels=[column])
            out[version.id, "results", s] = [(r.response_id, r.scores, r.disputed)
                                             for r in page.rows]
            for criterion in version.criteria[:2]:
                for choice in CHOICES.get(criterion.name, ("MET", "UNMET"))[:2]:
                    wanted = results.VerdictFilter(criterion_id=criterion.id, verdict=choice,
                                                   run_id=pair[0].id)
                    filtered = results.results_page(
                        sessions, dataset_id=world.kept.id, rubric_version_id=version.id,
                        run_ids=[r.id for r in pair], sight=sight,
                        filters=results.ResultsFilter(verdict=wanted))
                    out[version.id, "filter", criterion.id, choice, s] = [
                        r.response_id for r in filtered.rows]
    return out


def test_every_switched_service_answers_what_the_recomputation_answered(sessions):
    world = busy_world(sessions, seed=5)
    graded = _graded(sessions, world)
    new = _reads(sessions, world, graded)
    with sessions() as session:
        new_candidates = {v.id: calibration_candidates.candidates(session, v.id)
                          for v in world.versions}
        old_candidates = {v.id: _old_candidates(session, v.id) for v in world.versions}
    assert {v: ([c.id for c in kept], found) for v, (kept, found) in
            new_candidates.items()} == old_candidates
    with recomputed():
        old = _reads(sessions, world, graded)
    assert new.keys() == old.keys()
    for key in new:
        assert new[key] == old[key], key
    # The history gave the reads something to differ on.
    assert any(new[v.id, "queue"] for v in world.versions)
    assert any(d.decision.status == "adjudicated" for v in world.versions
               for d in new[v.id, "queue+resolved"])
    assert any(new[v.id, "calibration"] for v in world.versions)
    assert any(detail.hidden for key, detail in new.items() if key[1:2] == ("detail",))


def test_the_switched_reads_use_indexes_not_full_scans(sessions):
    """The table by its keys, each stream's current verdict through the verdicts'
    (response, criterion, stream, seq) key: no full scan of human_verdicts nor of the
    table (the check can fail: tests/storage/test_effective_verdicts.py's last assertion)."""
    world = _World(sessions, seed=3)
    for _ in range(6):
        world.save()
    world.new_version()
    version = world.versions[-1]
    ids = [r.id for r in world.kept_rows]
    keys = [(rid, c.id) for rid in ids for c in version.criteria]
    with sessions() as session:
        sources = verdict_repo.carry_sources(session, version.id)
    queries = {
        "current streams": effective_reads.current_streams_query(sources, keys),
        "table rows": effective_reads.table_rows_query(version.id, ids),
        "a viewer's keys": effective_reads.viewers_keys_query(sources, "ana", ids),
        "a blind viewer's hidden keys": effective_reads.unanswered_query(
            sources, version.id, world.kept.id, "ana"),
        "a blind viewer's hidden keys, nothing carried": effective_reads.unanswered_query(
            {c.id: (c.id, version.number) for c in version.criteria}, version.id,
            world.kept.id, "ana"),
        "dispute page": effective_repo.dispute_page_query(version.id, world.kept.id, 20),
        "score decisions": effective_repo.applied_query(version.id, None, ids),
        "the whole queue's keys": effective_repo.dispute_keys_query(
            version.id, world.kept.id, ("disputed", "adjudicated")),
        "the set's reviewed responses": effective_repo.reviewed_ids_query(
            version.id, world.kept.id),
        "a trial's human verdicts": effective_repo.decided_rows_query(
            version.id, version.criteria[0].id),
        "calibration candidates": calibration_candidates.decided_ids_query(version.id),
    }
    for name, query in queries.items():
        plan = _plan(sessions, query)
        assert not _full_scans(plan, "human_verdicts"), (name, plan)
        assert not _full_scans(plan, "effective_verdicts"), (name, plan)
    assert "human_verdicts" in _plan(sessions, queries["current streams"])


def test_a_blind_reviewer_sees_no_other_verdict_through_the_table(sessions):
    """Bo answered 'accurate' and 'clarity' on v1 (carried into v2); Ana answered only
    'accurate' on v2. Ana sees both verdicts on 'accurate' (she answered it, on v2: the
    carried one counts) and nothing of 'clarity': not in the decisions, the scores, the
    Review detail (nor its history), the gold set; an adjudicator sees everything."""
    world = _World(sessions, seed=1)
    v1 = world.rubric
    response = world.kept_rows[0]
    accurate, clarity = v1.criteria[0], v1.criteria[1]
    reviews.save_review(sessions, actor=local_actor("bo"), response_id=response.id,
                        verdicts={accurate.id: ("MET", "bo's note"),
                                  clarity.id: ("Good", "bo's secret")})
    criteria = v1.to_criteria()
    criteria[2] = criteria[2].model_copy(update={"weight": 1.0})
    v2 = rubrics.save_criteria(sessions, v1.id, criteria, actor=ADMIN)
    accurate2, clarity2 = v2.criteria[0], v2.criteria[1]
    reviews.set_human_verdict(sessions, actor=local_actor("ana"), response_id=response.id,
                              criterion_id=accurate2.id, verdict="UNMET", note="ana's")
    ana, adjudicator = blindness.as_reviewer("ana"), blindness.EVERYTHING
    with sessions() as session:
        seen = effective_reads.decisions(session, v2.id, [response.id], sight=ana)[response.id]
        assert set(seen) == {accurate2.id}
        assert seen[accurate2.id].status == "disputed"
        assert {h.note for h in seen[accurate2.id].reviews} == {"bo's note", "ana's"}
        assert set(effective_reads.score_decisions(
            session, v2.id, [response.id], sight=ana)[response.id]) == {accurate2.id}
        assert set(effective_reads.decisions(
            session, v2.id, [response.id], sight=adjudicator)[response.id]) == {
            accurate2.id, clarity2.id}
        # On v1 Ana answered nothing: she sees nothing there.
        assert effective_reads.decisions(session, v1.id, [response.id], sight=ana) == {
            response.id: {}}
    detail = review_queue.response_detail(sessions, response.id, v2.id, sight=ana)
    assert clarity2.id not in detail.humans and detail.hidden == frozenset({clarity2.id})
    assert "bo's secret" not in {h.note for h in detail.history}
    [record] = labels.iter_gold_records(sessions, v2.id, world.kept.id, sight=ana)
    assert "bo's secret" not in json.dumps(record)
    [record] = labels.iter_gold_records(sessions, v2.id, world.kept.id, sight=adjudicator)
    assert "bo's secret" in json.dumps(record)


@pytest.mark.parametrize("seed", [41, 43])
def test_every_reviewers_current_verdict_read_at_once_is_the_consensus_readers(
        sessions, copied_world, seed):
    # Agreement's reviewers (the human baseline) read in one window query over the reviewed
    # responses: each stream's current verdict, carried ones included, as consensus.gather
    # gives them (new versions, adopted wordings, an import, adjudications).
    from tests.storage.recomputed import reviewer_verdicts as old_reviewer_verdicts

    world = _busy(copied_world, seed)
    compared = 0
    with sessions() as session:
        for version in world.versions:
            found = effective_reads.current_reviews(session, version.id, world.kept.id)
            old = old_reviewer_verdicts(session, version.id, world.kept.id)
            assert sorted(found, key=lambda h: h.id) == sorted(old, key=lambda h: h.id)
            # in the order the whole decisions list them (by response, criterion, then id)
            ids = effective_repo.reviewed_response_ids(session, version.id, world.kept.id)
            whole = effective_reads.decisions(session, version.id, ids)
            assert found == [h for rid in sorted(whole) for cid in sorted(whole[rid])
                             for h in whole[rid][cid].reviews]
            compared += len(found)
    assert compared > 0


@pytest.mark.parametrize("seed", [41])
def test_the_agreement_reviewer_rows_are_the_current_reviews_fields(sessions, copied_world,
                                                                   seed):
    # Agreement's gather reads the reviewers' verdicts as light rows (issue 41): the very
    # verdicts current_reviews gives, same fields, same order.
    world = _busy(copied_world, seed)
    compared = 0
    with sessions() as session:
        for version in world.versions:
            rows = effective_reads.current_review_rows(session, version.id, world.kept.id)
            found = effective_reads.current_reviews(session, version.id, world.kept.id)
            assert rows == [effective_reads.ReviewRow(
                h.response_id, h.criterion_id, h.id, h.choice, h.reviewer_key, h.reviewer,
                h.review_seconds) for h in found]
            compared += len(rows)
    assert compared > 0
