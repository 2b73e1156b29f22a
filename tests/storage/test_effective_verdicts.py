"""The effective_verdicts table (issue 41, step 1): kept equal to the consensus rule by every
writer, in the writer's own transaction, and equal row for row to a rebuild from the
append-only history, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
import threading

import pytest
from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.pool import NullPool

from storage import models as m
from storage.cli import main as cli_main
from storage.engine import open_database
from storage.repositories import effective as effective_repo
from storage.services import (
    consensus,
    datasets,
    effective_upkeep,
    labels,
    reviews,
    rubrics,
    trials,
)
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.kinds import MIXED
from tests.storage.helpers import make_dataset, make_rubric, make_run
from tests.storage.test_agreement_counts import _full_scans, _plan
from tests.storage.test_concurrency import WRITERS, _together
from tests.storage.test_criterion_kinds_migration import _migrate

REVIEWERS = ("ana", "bo", "cy")
CHOICES = {"accurate": ("MET", "UNMET", "CANNOT_ASSESS"),
           "clarity": ("Poor", "Fair", "Good", "Excellent"),
           "tone": ("formal", "casual", "no text")}


def _maintained_and_rebuilt(sessions) -> tuple[list[tuple], list[tuple]]:
    """The table as kept, and what a rebuild from the history gives (rolled back)."""
    with sessions() as session:
        kept = effective_upkeep.maintained_rows(session)
        effective_upkeep.rebuild(session)
        rebuilt = effective_upkeep.maintained_rows(session)
        session.rollback()
    return kept, rebuilt


def _assert_up_to_date(sessions, step: str) -> list[tuple]:
    kept, rebuilt = _maintained_and_rebuilt(sessions)
    assert kept == rebuilt, f"after {step}: kept {set(kept) ^ set(rebuilt)}"
    return kept


def _requirements(version) -> list:
    return version.to_criteria()


class _World:
    """Two rubrics (one to delete), two datasets (one to delete), three reviewers."""

    def __init__(self, sessions, seed: int):
        self.sessions, self.rng = sessions, random.Random(seed)
        self.rubric = make_rubric(sessions, "Mixed", MIXED)
        self.other = make_rubric(sessions, "Other", MIXED)
        self.kept, self.kept_rows = make_dataset(sessions, "Kept", count=5)
        self.gone, self.gone_rows = make_dataset(sessions, "Gone", count=3)
        self.run = make_run(sessions, self.rubric.id, self.kept.id)
        self.versions = [self.rubric]
        self.reworded = 0

    def _version(self):
        return self.rng.choice(self.versions[-2:])

    def _response(self):
        return self.rng.choice(self.kept_rows + self.gone_rows)

    def _choice(self, criterion) -> str:
        return self.rng.choice(CHOICES.get(criterion.name, ("MET", "UNMET")))

    def save(self) -> str:
        version, response = self._version(), self._response()
        picked = self.rng.sample(list(version.criteria), self.rng.randint(1, 3))
        who = self.rng.choice(REVIEWERS)
        reviews.save_review(self.sessions, actor=local_actor(who), response_id=response.id,
                            verdicts={c.id: (self._choice(c), "") for c in picked})
        return f"{who} saved {len(picked)} on v{version.number}"

    def adjudicate(self) -> str:
        version, response = self._version(), self._response()
        criterion = self.rng.choice(list(version.criteria))
        reviews.adjudicate(self.sessions, actor=ADMIN, response_id=response.id,
                           criterion_id=criterion.id, verdict=self._choice(criterion))
        return f"adjudicated on v{version.number}"

    def import_sheet(self) -> str:
        version = self.versions[-1]
        lines = ["response_id,criterion,verdict,reviewer"]
        for row in self.rng.sample(self.kept_rows, 3):
            for criterion in self.rng.sample(list(version.criteria), 2):
                lines.append(f"{row.external_id},{criterion.name},{self._choice(criterion)},"
                             f"{self.rng.choice(REVIEWERS)}")
        labels.import_human_verdicts(self.sessions, version.id, self.kept.id,
                                     "\n".join(lines) + "\n", actor=ADMIN,
                                     create_reviewers=True)
        return f"imported on v{version.number}"

    def new_version(self) -> str:
        """Reword one criterion (ending its carry) of the newest version: a new version when
        it is frozen, its criteria replaced in place when not."""
        latest = self.versions[-1]
        criteria = _requirements(latest)
        index = self.rng.randrange(len(criteria))
        self.reworded += 1
        criteria[index] = criteria[index].model_copy(
            update={"requirement": f"{criteria[index].requirement} ({self.reworded})"})
        saved = rubrics.save_criteria(self.sessions, latest.id, criteria, actor=ADMIN)
        if saved.id == latest.id:
            self.versions[-1] = saved
            return f"replaced v{latest.number}'s criteria"
        self.versions.append(saved)
        return f"new version v{saved.number}"

    def adopt_wording(self) -> str:
        """A wording trial adopted with the human verdicts carried (appended on the new
        version's criterion)."""
        latest = self.versions[-1]
        criterion = self.rng.choice(list(latest.criteria))
        self.reworded += 1
        with self.sessions.begin() as session:
            trial = m.CriterionTrialRow(
                criterion_id=criterion.id, base_run_id=self.run.id, status="done",
                requirement=f"{criterion.requirement} [{self.reworded}]", results=[])
            session.add(trial)
            session.flush()
            trial_id = trial.id
        adopted = trials.adopt_wording(self.sessions, trial_id, actor=ADMIN,
                                       carry_human_verdicts=True)
        self.versions.append(rubrics.get_version(self.sessions, adopted.id))
        return f"adopted a wording as v{adopted.number}"


def test_random_histories_keep_the_table_equal_to_a_rebuild(sessions):
    world = _World(sessions, seed=41)
    steps = ([world.save] * 6 + [world.adjudicate] * 2 + [world.import_sheet]
             + [world.new_version, world.adopt_wording])
    # The other rubric has verdicts too (deleted at the end with them).
    reviews.set_human_verdict(sessions, actor=ADMIN, response_id=world.kept_rows[0].id,
                              criterion_id=world.other.criteria[0].id, verdict="MET")
    seen_statuses: set[str] = set()
    carried = 0
    for i in range(40):
        step = world.rng.choice(steps)()
        rows = _assert_up_to_date(sessions, f"step {i}: {step}")
        seen_statuses |= {row[4] for row in rows}
        carried = max(carried, sum(1 for row in rows if row[8] is not None))

    # The history exercised every kind of row (else this test would prove little).
    assert seen_statuses == {"agreed", "adjudicated", "disputed"}
    assert carried > 0
    assert len(world.versions) >= 3

    datasets.delete_dataset(sessions, world.gone.id, confirm=True, delete_human_verdicts=True,
                            actor=ADMIN)
    kept = _assert_up_to_date(sessions, "deleting a dataset")
    assert kept and {row[1] for row in kept} == {world.kept.id}
    rubrics.delete_rubric(sessions, world.other.rubric_id, confirm=True,
                          delete_human_verdicts=True, actor=ADMIN)
    kept = _assert_up_to_date(sessions, "deleting a rubric")
    assert world.other.id not in {row[0] for row in kept}


def test_the_table_holds_what_the_consensus_rule_decides(sessions):
    """Row by row, what consensus.decisions says (status, verdict, option, the verdict that
    stands, where it was carried from): the rebuild is the rule itself, not a copy of it."""
    world = _World(sessions, seed=7)
    for _ in range(15):
        world.rng.choice([world.save, world.save, world.adjudicate, world.new_version])()
    with sessions() as session:
        expected = []
        for version in world.versions:
            ids = [r.id for r in world.kept_rows + world.gone_rows]
            for rid, per in consensus.decisions(session, ids, version.id).items():
                for cid, d in per.items():
                    dataset = world.kept.id if rid in {r.id for r in world.kept_rows} else (
                        world.gone.id)
                    expected.append((version.id, dataset, rid, cid, d.status,
                                     d.verdict.value if d.verdict else None,
                                     d.applied.option if d.verdict else None,
                                     d.applied.id if d.applied else None, d.carried_from))
        kept = effective_upkeep.maintained_rows(session)
    assert kept and sorted(kept) == sorted(expected)


def test_the_switched_reads_give_what_the_consensus_rule_gave(sessions):
    """Agreement's effective human verdicts and the decisions Results scores with, read from
    the table, are the very objects the consensus recomputation gave (every field of each
    verdict that stands: who, when, what it replaced, the criterion it applies to)."""
    world = _World(sessions, seed=11)
    for _ in range(25):
        world.rng.choice([world.save, world.save, world.adjudicate, world.import_sheet,
                          world.new_version])()
    checked = 0
    with sessions() as session:
        for version in world.versions:
            for dataset, rows in ((world.kept, world.kept_rows), (world.gone, world.gone_rows)):
                ids = [r.id for r in rows]
                found = consensus.decisions(session, ids, version.id)
                before = [d.applied for rid in sorted(found)
                          for _cid, d in sorted(found[rid].items()) if d.applied is not None]
                assert effective_repo.applied_verdicts(session, version.id,
                                                       dataset.id) == before
                light = effective_repo.score_decisions(session, version.id, dataset.id, ids)
                assert {rid: {cid: (d.status, d.verdict, d.applied, d.carried_from)
                              for cid, d in per.items()} for rid, per in light.items()} == {
                    rid: {cid: (d.status, d.verdict, d.applied, d.carried_from)
                          for cid, d in per.items()} for rid, per in found.items()}
                checked += len(before)
    assert checked > 20


def test_two_reviewers_saving_on_one_response_at_once_leave_the_agreed_row(sessions):
    """Each save recomputes the response after its own insert; the second to commit must see
    the first's verdict (PostgreSQL: it waits for the response's lock, then reads again)."""
    version = make_rubric(sessions, "Mixed", MIXED)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[0]

    for attempt in range(3):
        verdict = ("MET", "UNMET", "CANNOT_ASSESS")[attempt]
        results = _together(WRITERS, lambda i, v=verdict: reviews.set_human_verdict(
            sessions, response_id=response.id, criterion_id=criterion.id, verdict=v,
            actor=local_actor(f"reviewer{i}")))
        assert not [r for r in results if isinstance(r, Exception)], results
        kept = _assert_up_to_date(sessions, f"round {attempt}")
        [row] = [r for r in kept if r[3] == criterion.id]
        assert row[4:6] == ("agreed", verdict)
        # the newest of the six verdicts stands, as the consensus rule says
        assert row[7] == max(r.id for r in results)

    # One reviewer disagrees while the others save the same verdict again: disputed.
    results = _together(WRITERS, lambda i: reviews.set_human_verdict(
        sessions, response_id=response.id, criterion_id=criterion.id,
        verdict="UNMET" if i == 0 else "MET", actor=local_actor(f"reviewer{i}")))
    assert not [r for r in results if isinstance(r, Exception)], results
    [row] = [r for r in _assert_up_to_date(sessions, "the dispute")
             if r[3] == criterion.id]
    assert row[4:6] == ("disputed", None)


def test_rebuild_command_repairs_the_table_and_says_so(sessions, db_url, capsys):
    version = make_rubric(sessions, "Mixed", MIXED)
    _, [response, *_] = make_dataset(sessions)
    reviews.set_human_verdict(sessions, actor=ADMIN, response_id=response.id,
                              criterion_id=version.criteria[0].id, verdict="MET")
    reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=response.id,
                              criterion_id=version.criteria[1].id, verdict="Good")
    assert cli_main(["rebuild-effective", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == (
        "effective verdicts rebuilt: 2 rows; it was up to date")

    with sessions.begin() as session:  # a row lost (a bug, a hand edit)
        session.execute(m.EffectiveVerdictRow.__table__.delete().where(
            m.EffectiveVerdictRow.criterion_id == version.criteria[1].id))
    assert cli_main(["rebuild-effective", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == (
        "effective verdicts rebuilt: 2 rows; 1 rows differed from the kept table "
        "(removed + added)")
    kept, rebuilt = _maintained_and_rebuilt(sessions)
    assert kept == rebuilt and len(kept) == 2


def test_a_stale_save_writes_no_row(sessions):
    """A save refused as stale (nothing written) leaves the table as it was."""
    version = make_rubric(sessions, "Mixed", MIXED)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[0]
    first = reviews.set_human_verdict(sessions, actor=local_actor("ana"),
                                      response_id=response.id, criterion_id=criterion.id,
                                      verdict="MET")
    before = _assert_up_to_date(sessions, "the first save")
    result = reviews.save_review(sessions, actor=local_actor("ana"), response_id=response.id,
                                 verdicts={criterion.id: ("UNMET", "")},
                                 expected={criterion.id: first.id + 1000})
    assert result.stale and not result.saved
    assert _assert_up_to_date(sessions, "the stale save") == before


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_the_second_writer_waits_for_the_first_and_reads_its_verdict(sessions):
    """PostgreSQL, the interleaving a thread pool rarely hits: two reviewers' verdicts on one
    response are both inserted before either recomputes; the first recomputes (seeing only
    its own) and holds its transaction open while the second recomputes. The second must wait
    for the first to commit and then read both (agreed, with both reviews), instead of
    computing from its own verdict alone or colliding on the row's unique key. (SQLite has
    one writer at a time: the second could not even insert before the first commits.)"""
    version = make_rubric(sessions, "Mixed", MIXED)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[0]
    keys = [(response.id, criterion.id)]
    # (frozen first: the first save of a version freezes it, which would serialise them)
    rubrics.freeze_version(sessions, version.id, actor=ADMIN)
    first, second = sessions(), sessions()
    try:
        first.begin()
        second.begin()
        reviews.append_verdict(first, response.id, criterion.id, "MET", ("ana", "ana"), "",
                               reviews.UNCHECKED)
        reviews.append_verdict(second, response.id, criterion.id, "MET", ("bo", "bo"), "",
                               reviews.UNCHECKED)
        effective_upkeep.refresh_verdicts(first, keys)
        done = threading.Event()
        failed: list[BaseException] = []

        def recompute_second() -> None:
            try:
                effective_upkeep.refresh_verdicts(second, keys)
                second.commit()
            except BaseException as exc:  # asserted on below
                failed.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=recompute_second)
        worker.start()
        assert not done.wait(1.0), "the second writer did not wait for the first"
        first.commit()
        worker.join(30)
        assert not failed, failed
    finally:
        first.close()
        second.close()
    kept = _assert_up_to_date(sessions, "both commits")
    [row] = [r for r in kept if r[3] == criterion.id]
    assert row[4:6] == ("agreed", "MET")
    [decision] = [d for d in consensus.decisions(
        sessions(), [response.id], version.id)[response.id].values()]
    assert len(decision.reviews) == 2 and row[7] == decision.applied.id


def test_the_effective_reads_use_the_tables_indexes(sessions):
    """Agreement's and Results' reads find a review set's rows through
    ix_effective_verdicts_set and the verdicts that stand by their id: no full scan of
    either table (the check itself catches one: last assertion)."""
    world = _World(sessions, seed=3)
    for _ in range(6):
        world.save()
    ids = [r.id for r in world.kept_rows]
    for query in (effective_repo.applied_query(world.rubric.id, world.kept.id),
                  effective_repo.applied_query(world.rubric.id, world.kept.id, ids)):
        plan = _plan(sessions, query)
        assert "effective_verdicts" in plan and "human_verdicts" in plan, plan
        assert not _full_scans(plan, "effective_verdicts"), plan
        assert not _full_scans(plan, "human_verdicts"), plan
    assert _full_scans(_plan(sessions, select(m.EffectiveVerdictRow.verdict).where(
        m.EffectiveVerdictRow.option == "x")), "effective_verdicts")


def _human_verdict_rows(url: str) -> list[tuple]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        rows = [tuple(r) for r in c.execute(text("SELECT * FROM human_verdicts ORDER BY id"))]
    engine.dispose()
    return rows


def test_migration_0020_fills_the_table_from_the_history_in_place(backend, new_database):
    """A 0017 database with a busy history (three reviewers, adjudications, an import, new
    versions carrying verdicts, options) moves to 0020 with every verdict as it was and the
    table holding exactly what the consensus rule decides; and back down."""
    url = new_database(backend)
    sessions = open_database(url)
    world = _World(sessions, seed=20)
    for _ in range(25):
        world.rng.choice([world.save, world.save, world.adjudicate, world.import_sheet,
                          world.new_version])()
    with sessions() as session:
        kept = effective_upkeep.maintained_rows(session)
    sessions.kw["bind"].dispose()
    assert len(kept) > 20 and {row[4] for row in kept} == {"agreed", "adjudicated", "disputed"}

    _migrate(url, "0017_run_samples", down=True)
    history = _human_verdict_rows(url)
    engine = create_engine(url, poolclass=NullPool)
    assert "effective_verdicts" not in inspect(engine).get_table_names()
    engine.dispose()

    _migrate(url, "0020_effective_verdicts")
    assert _human_verdict_rows(url) == history
    sessions = open_database(url)
    with sessions() as session:
        assert effective_upkeep.maintained_rows(session) == kept
    sessions.kw["bind"].dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_new_version_made_while_a_verdict_is_being_saved_carries_it(sessions):
    """PostgreSQL: a reviewer's verdict on v1 is written and recomputed (v1 and v2: v3 does
    not exist yet) but not committed when an admin edits v2 into v3, which carries it. The
    edit must wait for the verdict's commit and then read it, or v3 would miss it for good
    (its writer lists v3 only after it exists). The verdict's writer holds FOR KEY SHARE on
    v2's row (its own lock on every version of the rubric, and the foreign key of its row
    on v2), which the edit's FOR UPDATE on v2 waits for."""
    version = make_rubric(sessions, "Mixed", MIXED)
    _, [response, *_] = make_dataset(sessions)
    criterion = version.criteria[0]
    reviews.set_human_verdict(sessions, actor=local_actor("bo"), response_id=response.id,
                              criterion_id=criterion.id, verdict="MET")  # freezes v1
    changed = version.to_criteria()
    changed[2] = changed[2].model_copy(update={"weight": 1.0})
    v2 = rubrics.save_criteria(sessions, version.id, changed, actor=ADMIN)
    rubrics.freeze_version(sessions, v2.id, actor=ADMIN)
    saving = sessions()
    try:
        saving.begin()
        reviews.append_verdict(saving, response.id, criterion.id, "UNMET", ("ana", "ana"), "",
                               reviews.UNCHECKED)
        effective_upkeep.refresh_verdicts(saving, [(response.id, criterion.id)])
        done = threading.Event()
        made: list[object] = []

        def edit() -> None:
            try:
                criteria = v2.to_criteria()
                criteria[2] = criteria[2].model_copy(update={"weight": 2.0})
                made.append(rubrics.save_criteria(sessions, v2.id, criteria, actor=ADMIN))
            except BaseException as exc:  # asserted on below
                made.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=edit)
        worker.start()
        assert not done.wait(1.0), "the edit did not wait for the verdict being saved"
        saving.commit()
        worker.join(30)
    finally:
        saving.close()
    [v3] = made
    assert not isinstance(v3, BaseException), v3
    assert v3.number == 3
    kept = _assert_up_to_date(sessions, "the edit")
    carried = [r for r in kept if r[0] == v3.id and r[3] == v3.criteria[0].id]
    assert [r[4:6] for r in carried] == [("disputed", None)]  # bo's MET, ana's UNMET
