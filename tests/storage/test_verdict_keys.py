"""The grades' verdict keys (storage/services/verdict_keys.py, migration 0031): the judges'
disagreement read from them equals the old criterion-by-criterion query on random histories
(failed criteria and grades, multi-choice options and abstentions, transient failures graded
again, grades without a key), on SQLite and PostgreSQL; the kept keys equal a rebuild and
what migration 0031 fills in."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter

import pytest
from sqlalchemy import create_engine, func, inspect, select, update
from sqlalchemy.pool import NullPool

from grading.options import MultiChoiceVerdict
from grading.types import Criterion, CriterionReport, EvaluationReport
from grading.types import Verdict as V
from storage import models as m
from storage.cli import main as cli_main
from storage.engine import open_database
from storage.repositories import results as repo
from storage.services import datasets, review_queue, runs, verdict_keys
from storage.services.results import ResultsFilter, grade_facts, results_page
from storage.services.results_python import page_in_python
from tests.actors import ADMIN
from tests.kinds import MIXED
from tests.storage.helpers import make_rubric, make_run
from tests.storage.test_agreement_counts import _full_scans, _plan
from tests.storage.test_criterion_kinds_migration import _migrate

CRITERIA = [*MIXED, Criterion(name="cites", requirement="Cites a source", weight=5)]
ABSTAIN = "(abstains)"


@pytest.mark.parametrize("choices, criteria, key", [
    pytest.param({1: "MET", 2: "Good"}, [2, 1], '["MET","Good"]', id="every-criterion"),
    pytest.param({1: "MET", 2: None}, [1, 2], "?", id="one-failed"),
    pytest.param({1: "MET"}, [1, 2], "?", id="one-missing"),
    pytest.param({1: None, 2: None}, [1, 2], "-", id="all-failed"),
    pytest.param({}, [1, 2], "-", id="no-criterion-rows"),
    pytest.param({1: 'a "quoted", label'}, [1], '["a \\"quoted\\", label"]', id="escaped"),
])
def test_a_key_holds_every_choice_or_says_why_not(choices, criteria, key):
    assert verdict_keys.verdict_key(choices, criteria) == key


def _choice(rng: random.Random, criterion: Criterion) -> str | None:
    if rng.random() < 0.06:
        return None  # the judge failed on this criterion
    if criterion.options is None:
        return rng.choice(["MET", "UNMET", "CANNOT_ASSESS"])
    return rng.choice([*(o.label for o in criterion.options), ABSTAIN])


def _report(rng: random.Random, base: random.Random) -> EvaluationReport:
    if rng.random() < 0.06:
        return EvaluationReport(score=None, error="the judge's answer could not be parsed")
    # judges agree most of the time, so agreeing and disagreeing responses both occur
    chosen = [_choice(base, c) for c in CRITERIA]
    if rng.random() < 0.4:
        k = rng.randrange(len(CRITERIA))
        chosen[k] = _choice(rng, CRITERIA[k])
    items = []
    for criterion, choice in zip(CRITERIA, chosen, strict=True):
        fields = criterion.model_dump()
        if choice is None:
            items.append(CriterionReport(**fields, error="no answer"))
        elif criterion.options is None:
            items.append(CriterionReport(**fields, verdict=V(choice)))
        elif choice == ABSTAIN:
            items.append(CriterionReport(**fields, multi_choice_verdict=MultiChoiceVerdict(
                value=0.0, na=True)))
        else:
            index = criterion.find_option_by_label(choice)
            option = criterion.options[index]
            items.append(CriterionReport(**fields, multi_choice_verdict=MultiChoiceVerdict(
                selected_index=index, selected_label=option.label, value=option.value,
                na=option.na)))
    failed = any(c is None for c in chosen)
    return EvaluationReport(score=None if failed else rng.random(),
                            error="failed" if failed else None, report=items)


def _history(sessions, seed: int, size: int = 30):
    rng = random.Random(seed)
    version = make_rubric(sessions, f"Keys {seed}", CRITERIA)
    dataset = datasets.create_dataset(sessions, f"Answers {seed}", responses=[
        {"id": f"r{i}", "text": f"answer {i}"} for i in range(size)], actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id).id for _ in range(3)]
    judges.append(make_run(sessions, version.id, dataset.id, grader="one_shot").id)
    todo = [(run_id, r.id) for run_id in judges for r in responses]
    rng.shuffle(todo)
    todo = todo[:int(len(todo) * 0.9)]  # some responses are never graded by some runs
    while todo:
        batch, todo = todo[:rng.randint(1, 4)], todo[4:]
        for run_id, group in itertools.groupby(sorted(batch), key=lambda t: t[0]):
            ids = [rid for _run, rid in group]
            if rng.random() < 0.15:  # failed transiently first, graded again in a later pass
                runs.record_grades(sessions, run_id, [runs.NewGrade(
                    rid, EvaluationReport(score=None, error="HTTP 503"), transient=True)
                    for rid in ids])
            runs.record_grades(sessions, run_id, [
                runs.NewGrade(rid, _report(rng, random.Random(rid))) for rid in ids])
    return version, dataset, judges


def _criterion_by_criterion(session, run_ids) -> set[int]:
    with_verdicts, _ = repo.comparable_groups(session, run_ids)
    if len(with_verdicts) < 2:
        return set()
    return set(session.scalars(repo.criterion_differ_query(with_verdicts)))


def _check(sessions, judges) -> int:
    """Every choice of runs: the keys' answer is the criterion-by-criterion one; returns
    how many responses disagreed over all choices (so the test sees both answers)."""
    seen = 0
    with sessions() as session:
        for count in (2, 3, 4):
            for chosen in itertools.combinations(judges, count):
                old = _criterion_by_criterion(session, list(chosen))
                assert repo.verdict_disagree_ids(session, list(chosen)) == old, chosen
                # both answers of one GROUP BY (the pages' and the queue's reading)
                assert repo.disagreement(session, list(chosen), 0.25) == (
                    old, repo.score_disagree_ids(session, list(chosen), 0.25)), chosen
                seen += len(old)
    return seen


@pytest.mark.parametrize("seed", [1, 2])
def test_disagreement_from_the_keys_is_the_criterion_by_criterion_answer(sessions, seed):
    version, dataset, judges = _history(sessions, seed)
    assert _check(sessions, judges) > 0
    with sessions() as session:
        kinds = Counter(key[0] for key in session.scalars(select(m.GradeRow.verdict_key)))
    # the history has fully keyed grades, partly judged ones and wholly failed ones
    assert kinds.get("[", 0) and kinds.get("?", 0) and kinds.get("-", 0), kinds
    # kept with every grade: a rebuild from the criterion rows changes none
    count, changed = verdict_keys.rebuild_verdict_keys(sessions, actor=ADMIN)
    assert (count, changed) == (len(judges) * 30 - _never_graded(sessions, judges), 0)
    # Grades not keyed yet (as before the migration's fill) fall back on the criteria.
    with sessions.begin() as session:
        session.execute(update(m.GradeRow).where(m.GradeRow.id % 3 == 0)
                        .values(verdict_key=None))
    _check(sessions, judges)
    assert verdict_keys.rebuild_verdict_keys(sessions, actor=ADMIN)[1] > 0
    _check(sessions, judges)
    # the pages and the queue read the same facts
    where = {"dataset_id": dataset.id, "rubric_version_id": version.id, "run_ids": judges[:3]}
    facts = grade_facts(sessions, **where)
    with sessions() as session:
        assert facts.verdicts_differ == _criterion_by_criterion(session, judges[:3])
    assert grade_facts(sessions, **where, with_scores=False) == type(facts)(
        **{**facts.__dict__, "judged": None})
    disagree = ResultsFilter(disagree_only=True)
    sql = results_page(sessions, **where, filters=disagree, limit=100)
    assert {row.response_id for row in sql.rows} == set(facts.disagree)
    assert sql == page_in_python(sessions, **where, filters=disagree, limit=100)
    assert sql == page_in_python(sessions, **where, filters=disagree, limit=100, facts=(
        grade_facts(sessions, **where, with_scores=False)))
    # the queue (disagreements first) from the keys, and from the old query's answer
    with sessions() as session:
        old = frozenset(_criterion_by_criterion(session, judges[:3]) | facts.scores_differ)
    assert old != facts.scores_differ
    assert (review_queue.review_queue(sessions, **where).response_ids
            == review_queue.review_queue(sessions, **where, facts=dataclasses.replace(
                facts, disagree=old)).response_ids)


def _never_graded(sessions, judges, size: int = 30) -> int:
    with sessions() as session:
        graded = session.scalar(select(func.count()).select_from(m.GradeRow)
                                .where(m.GradeRow.run_id.in_(judges)))
    return len(judges) * size - graded


def test_a_grade_graded_again_gets_the_new_grades_key(sessions):
    version = make_rubric(sessions, "Again", CRITERIA)
    dataset = datasets.create_dataset(sessions, "Answers", responses=[
        {"id": "r0", "text": "answer"}], actor=ADMIN)
    response = datasets.list_responses(sessions, dataset.id, limit=None)[0]
    a, b = (make_run(sessions, version.id, dataset.id).id for _ in range(2))
    agreed = _report(random.Random(3), random.Random(3))
    while agreed.report is None or any(c.error for c in agreed.report):
        agreed = _report(random.Random(), random.Random(3))
    runs.record_grades(sessions, a, [runs.NewGrade(response.id, agreed)])
    runs.record_grades(sessions, b, [runs.NewGrade(
        response.id, EvaluationReport(score=None, error="HTTP 503"), transient=True)])

    def key_of(run_id):
        with sessions() as session:
            return session.scalar(select(m.GradeRow.verdict_key).where(
                m.GradeRow.run_id == run_id))

    assert key_of(b) == verdict_keys.UNLABELLED
    runs.record_grades(sessions, b, [runs.NewGrade(response.id, agreed)])
    assert key_of(b) == key_of(a) and key_of(a).startswith("[")
    with sessions() as session:
        assert repo.verdict_disagree_ids(session, [a, b]) == set()
    # the same grade with one choice changed: the replaced grade's key says so
    c = make_run(sessions, version.id, dataset.id).id
    runs.record_grades(sessions, c, [runs.NewGrade(
        response.id, EvaluationReport(score=None, error="HTTP 503"), transient=True)])
    items = list(agreed.report)
    items[0] = items[0].model_copy(update={"verdict": V.UNMET if items[0].verdict == V.MET
                                           else V.MET})
    runs.record_grades(sessions, c, [runs.NewGrade(
        response.id, agreed.model_copy(update={"report": items}))])
    assert key_of(c) not in (key_of(a), verdict_keys.UNLABELLED)
    with sessions() as session:
        assert repo.verdict_disagree_ids(session, [a, c]) == {response.id}
        assert verdict_keys.computed_keys(session, [
            session.scalar(select(m.GradeRow.id).where(m.GradeRow.run_id == c))]) == {
            session.scalar(select(m.GradeRow.id).where(m.GradeRow.run_id == c)): key_of(c)}


def test_the_keys_query_reads_no_criterion_row_of_a_keyed_grade(sessions):
    """No full scan of grade_criteria: the keyed responses group one row per grade, read
    from ``ix_grades_compared`` alone; the others are found through ``ix_grades_unkeyed``
    and only their criteria read."""
    _version, _dataset, judges = _history(sessions, 5, size=12)
    plan = _plan(sessions, repo.verdicts_differ_query(judges[:3]))
    assert "grade_criteria" in plan and not _full_scans(plan, "grade_criteria"), plan
    assert "ix_grades_unkeyed" in plan, plan
    if sessions.kw["bind"].dialect.name == "sqlite":
        assert "COVERING INDEX ix_grades_compared" in plan, plan


def test_the_migration_keys_the_grades_it_finds(db_url, sessions):
    """Migration 0031 on a database graded before it: down to 0030 (no keys), up again,
    every grade holds the key ``record_grades`` wrote, and the answers are unchanged."""
    _version, _dataset, judges = _history(sessions, 4, size=16)
    with sessions() as session:
        written = verdict_keys.kept_keys(session)
        answers = [repo.verdict_disagree_ids(session, judges[:k]) for k in (2, 3, 4)]
    sessions.kw["bind"].dispose()
    _migrate(db_url, "0030_queue_reads", down=True)
    engine = create_engine(db_url, poolclass=NullPool)
    assert "verdict_key" not in {c["name"] for c in inspect(engine).get_columns("grades")}
    engine.dispose()
    _migrate(db_url, "head")
    upgraded = open_database(db_url, migrate=False)
    with upgraded() as session:
        assert verdict_keys.kept_keys(session) == written
        assert [repo.verdict_disagree_ids(session, judges[:k]) for k in (2, 3, 4)] == answers
    upgraded.kw["bind"].dispose()


def test_rebuild_verdict_keys_command_repairs_the_keys_and_says_so(sessions, db_url, capsys):
    _version, _dataset, judges = _history(sessions, 6, size=6)
    graded = len(judges) * 6 - _never_graded(sessions, judges, size=6)
    assert cli_main(["rebuild-verdict-keys", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == (
        f"judges' verdict keys rebuilt: {graded} grades; they were up to date")
    with sessions.begin() as session:  # a key lost or wrong (a bug, a hand edit)
        ids = list(session.scalars(select(m.GradeRow.id).order_by(m.GradeRow.id).limit(2)))
        session.execute(update(m.GradeRow).where(m.GradeRow.id == ids[0])
                        .values(verdict_key=None))
        session.execute(update(m.GradeRow).where(m.GradeRow.id == ids[1])
                        .values(verdict_key='["wrong"]'))
    assert cli_main(["rebuild-verdict-keys", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == (
        f"judges' verdict keys rebuilt: {graded} grades; 4 rows differed from the kept keys "
        "(removed + added)")
    _check(sessions, judges)
