"""The effective_scores table (issue 41): people's score per (response, rubric version), kept
by the writers of effective_verdicts in their transaction, equal to the one aggregation over
the consensus rule's decisions and row for row to a rebuild, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect
from sqlalchemy.pool import NullPool

from grading.types import ScoringSettings
from storage import models as m
from storage.cli import main as cli_main
from storage.convert import criterion_info
from storage.effective import compute_human_score
from storage.engine import open_database
from storage.repositories import rubrics as rubric_repo
from storage.services import (
    consensus,
    datasets,
    effective_upkeep,
    people_scores,
    reviews,
    rubrics,
    runs,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.storage.helpers import make_dataset, make_rubric, make_run
from tests.storage.test_criterion_kinds_migration import _migrate
from tests.storage.test_effective_verdicts import CHOICES, _World


def _kept_and_rebuilt(sessions) -> tuple[list[tuple], list[tuple]]:
    with sessions() as session:
        kept = people_scores.maintained_rows(session)
        kept_runs = people_scores.maintained_run_rows(session)
        effective_upkeep.rebuild(session)
        rebuilt = people_scores.maintained_rows(session)
        assert people_scores.maintained_run_rows(session) == kept_runs
        session.rollback()
    return kept, rebuilt


def _run_scores_from_the_service(sessions, run_ids, kept) -> list[tuple]:
    """Each run's effective score of every response people reviewed, as Results read it
    until now (reviews.effective_grades_for_run)."""
    found = []
    for run_id in run_ids:
        with sessions() as session:
            version_id = session.get(m.RunRow, run_id).rubric_version_id
        reviewed = sorted({row[2] for row in kept if row[0] == version_id})
        found.extend((run_id, g.response_id, g.score, g.error)
                     for g in reviews.effective_grades_for_run(sessions, run_id, reviewed,
                                                               scores_only=True))
    return sorted(found)


def _from_the_rule(sessions, world: _World) -> list[tuple]:
    """What the rows should say, from consensus.decisions (the rule itself) and the one
    aggregation function, for every response of the world under every version."""
    expected = []
    rows = {r.id: world.kept.id for r in world.kept_rows}
    rows.update({r.id: world.gone.id for r in world.gone_rows})
    with sessions() as session:
        version_ids = [v.id for v in world.versions] + [world.other.id]
        for version_id in version_ids:
            if session.get(m.RubricVersionRow, version_id) is None:
                continue
            criteria = [criterion_info(c) for c in rubric_repo.criteria_of(session, version_id)]
            found = consensus.decisions(session, sorted(rows), version_id)
            for rid, per in sorted(found.items()):
                if not per or rid not in rows:
                    continue
                score = compute_human_score(
                    response_id=rid, rubric_version_id=version_id, criteria=criteria,
                    humans=per, settings=ScoringSettings(), to_grade=None)
                expected.append((version_id, rows[rid], rid, score.reviewed_count,
                                 sum(1 for d in per.values() if d.status == "disputed"),
                                 len(criteria), score.score, score.raw_score))
    return sorted(expected)


class _Graded:
    """Runs of the world's versions grading a few responses between the people's steps, so
    grades land before and after the verdicts on them."""

    def __init__(self, world: _World):
        self.world, self.runs, self.graded = world, {}, set()

    def grade(self) -> str:
        world = self.world
        version = world.versions[-1] if world.rng.random() < 0.7 else world.versions[0]
        run = self.runs.get(version.id)
        if run is None:
            run = self.runs[version.id] = (world.run if version.id == world.rubric.id
                                           else make_run(sessions_of(world), version.id,
                                                         world.kept.id))
        todo = [r for r in world.kept_rows if (run.id, r.id) not in self.graded]
        batch = world.rng.sample(todo, min(2, len(todo)))
        criteria = version.to_criteria()
        grades = [runs.NewGrade(r.id, judge_report(
            [world.rng.choice(CHOICES.get(c.name, ("MET", "UNMET"))) for c in criteria],
            criteria), 0.1) for r in batch]
        if grades:
            runs.record_grades(sessions_of(world), run.id, grades)
        self.graded |= {(run.id, r.id) for r in batch}
        return f"graded {len(batch)} in run {run.id}"


def sessions_of(world: _World):
    return world.sessions


def test_random_histories_keep_peoples_scores_equal_to_the_rule_and_a_rebuild(sessions):
    world = _World(sessions, seed=42)
    graded = _Graded(world)
    steps = ([world.save] * 6 + [world.adjudicate] * 3 + [world.import_sheet]
             + [world.new_version, world.adopt_wording] + [graded.grade] * 3)
    reviews.set_human_verdict(sessions, actor=ADMIN, response_id=world.kept_rows[0].id,
                              criterion_id=world.other.criteria[0].id, verdict="MET")
    scored = unscored = disputed = run_scored = 0
    for i in range(40):
        step = world.rng.choice(steps)()
        kept, rebuilt = _kept_and_rebuilt(sessions)
        assert kept == rebuilt, f"after step {i} ({step}): {set(kept) ^ set(rebuilt)}"
        if i % 5 == 4:  # the rule's recomputation is slower: every fifth step
            assert kept == _from_the_rule(sessions, world), f"after step {i} ({step})"
            with sessions() as session:
                kept_runs = people_scores.maintained_run_rows(session)
            expected = _run_scores_from_the_service(
                sessions, sorted({run_id for run_id, _rid in graded.graded}), kept)
            assert kept_runs == expected, f"after step {i} ({step})"
            run_scored = max(run_scored, len(kept_runs))
        scored = max(scored, sum(1 for row in kept if row[6] is not None))
        unscored = max(unscored, sum(1 for row in kept if row[6] is None))
        disputed = max(disputed, sum(1 for row in kept if row[4]))
    # The history made complete, incomplete and disputed responses (else this proves little).
    assert scored and unscored and disputed and run_scored

    datasets.delete_dataset(sessions, world.gone.id, confirm=True, delete_human_verdicts=True,
                            actor=ADMIN)
    kept, rebuilt = _kept_and_rebuilt(sessions)
    assert kept == rebuilt and {row[1] for row in kept} == {world.kept.id}
    rubrics.delete_rubric(sessions, world.other.rubric_id, confirm=True,
                          delete_human_verdicts=True, actor=ADMIN)
    kept, rebuilt = _kept_and_rebuilt(sessions)
    assert kept == rebuilt and world.other.id not in {row[0] for row in kept}
    assert kept == _from_the_rule(sessions, world)
    with sessions() as session:
        assert people_scores.maintained_run_rows(session) == _run_scores_from_the_service(
            sessions, sorted({run_id for run_id, _rid in graded.graded}), kept)


def test_peoples_score_is_what_human_scores_gives(sessions):
    """Every criterion decided: the score the Review page shows (reviews.human_score); a
    dispute: no score, counted as disputed; adjudicated: scored again."""
    version = make_rubric(sessions, "Mixed", MIXED)
    _, [response, *_] = make_dataset(sessions)
    choices = {"accurate": "MET", "clarity": "Good", "tone": "formal"}
    verdicts = {c.id: (choices.get(c.name, "MET"), "") for c in version.criteria}
    reviews.save_review(sessions, actor=local_actor("ana"), response_id=response.id,
                        verdicts=verdicts)
    expected = reviews.human_score(sessions, response.id, version.id)
    assert expected.score is not None
    with sessions() as session:
        [row] = people_scores.maintained_rows(session)
    assert row[3:] == (len(verdicts), 0, len(verdicts), expected.score, expected.raw_score)

    first = version.criteria[0]
    reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=response.id,
                              criterion_id=first.id, verdict="UNMET")
    with sessions() as session:
        [row] = people_scores.maintained_rows(session)
    assert row[3:] == (len(verdicts) - 1, 1, len(verdicts), None, None)

    reviews.adjudicate(sessions, actor=ADMIN, response_id=response.id, criterion_id=first.id,
                       verdict="UNMET")
    again = reviews.human_score(sessions, response.id, version.id)
    with sessions() as session:
        [row] = people_scores.maintained_rows(session)
    assert again.score is not None and again.score != expected.score
    assert row[3:] == (len(verdicts), 0, len(verdicts), again.score, again.raw_score)


def test_rebuild_command_repairs_a_lost_score(sessions, db_url, capsys):
    version = make_rubric(sessions, "Mixed", MIXED)
    _, [response, *_] = make_dataset(sessions)
    reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                              criterion_id=version.criteria[0].id, verdict="MET")
    with sessions.begin() as session:
        session.execute(m.EffectiveScoreRow.__table__.delete())
    assert cli_main(["rebuild-effective", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == (
        "effective verdicts rebuilt: 1 rows; 1 rows differed from the kept table "
        "(removed + added)")
    kept, rebuilt = _kept_and_rebuilt(sessions)
    assert kept == rebuilt and len(kept) == 1


def test_migration_0022_fills_the_scores_from_the_history(backend, new_database):
    url = new_database(backend)
    sessions = open_database(url)
    world = _World(sessions, seed=22)
    for _ in range(20):
        world.rng.choice([world.save, world.save, world.adjudicate, world.new_version])()
    with sessions() as session:
        kept = people_scores.maintained_rows(session)
        verdicts = effective_upkeep.maintained_rows(session)
    sessions.kw["bind"].dispose()
    assert len(kept) > 5 and any(row[6] is not None for row in kept)

    _migrate(url, "0021_pair_reviews", down=True)
    engine = create_engine(url, poolclass=NullPool)
    assert "effective_scores" not in inspect(engine).get_table_names()
    engine.dispose()
    _migrate(url, "0022_effective_scores")
    sessions = open_database(url)
    with sessions() as session:
        assert people_scores.maintained_rows(session) == kept
        assert effective_upkeep.maintained_rows(session) == verdicts
    sessions.kw["bind"].dispose()
