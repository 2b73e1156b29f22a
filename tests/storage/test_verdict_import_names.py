"""import-verdicts: reviewer names must be known people (compared normalised and case-folded),
an unknown name writes nothing unless reviewers may be created; the import writes in batches
with a number of statements that does not grow with the rows — on both databases."""

from __future__ import annotations

import pytest
from sqlalchemy import event, func, select

from grading.types import Verdict
from storage import models as m
from storage.errors import ImportProblemsError
from storage.label_commands import import_verdicts
from storage.services import consensus, reviews, verdict_import
from storage.services.reviewers import local_actor
from tests.actors import ADMIN
from tests.storage.helpers import make_dataset, make_rubric

V = Verdict
ANN = local_actor("ann")
HEAD = "response_id,criterion,verdict,reviewer,note\n"


@pytest.fixture
def world(sessions):
    """Ann alone answered 'cites' of r0 MET: the criterion is agreed."""
    version = make_rubric(sessions)
    dataset, responses = make_dataset(sessions, count=3)
    cites = version.criteria[1]
    reviews.set_human_verdict(sessions, actor=ANN, response_id=responses[0].id,
                              criterion_id=cites.id, verdict="MET", note="has a footnote")
    return version, dataset, responses, cites


def _import(sessions, world, sheet, **kwargs):
    version, dataset, *_ = world
    return verdict_import.import_human_verdicts(sessions, version.id, dataset.id, sheet,
                                                "sheet.csv", actor=ADMIN, **kwargs)


def _decision(sessions, world):
    version, _dataset, responses, cites = world
    with sessions() as session:
        return consensus.decisions(session, [responses[0].id], version.id)[responses[0].id][
            cites.id]


def _count(sessions) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(m.HumanVerdictRow))


@pytest.mark.parametrize("spelling", [
    pytest.param("ANN", id="upper-case"),
    pytest.param("a\u200bnn", id="zero-width-space"),
    pytest.param("\ufeffAnn\u2060", id="bom-and-word-joiner"),
    pytest.param("ＡＮＮ", id="full-width"),
    pytest.param(" ann ", id="spaces"),
])
def test_a_variant_of_a_known_name_is_that_reviewer_not_a_new_dispute(sessions, world,
                                                                       spelling):
    summary = _import(sessions, world, f"{HEAD}r0,cites,UNMET,{spelling},on second look\n")
    assert summary.reviewers == ("ann",) and summary.created == ()
    decision = _decision(sessions, world)
    assert (decision.status, decision.verdict) == ("agreed", V.UNMET)
    assert [h.reviewer_key for h in decision.reviews] == ["ann"]
    history = reviews.verdict_history(sessions, world[2][0].id, stream="ann")
    assert [(h.previous_verdict, h.verdict) for h in history] == [(None, V.MET),
                                                                  (V.MET, V.UNMET)]


def test_an_unknown_reviewer_is_named_with_its_rows_and_nothing_is_written(sessions, world):
    before = _count(sessions)
    sheet = (f"{HEAD}r0,accurate,MET,ann,\nr1,cites,UNMET,mallory,\nr2,cites,MET,Mallory,\n"
             "r2,accurate,MET,eve\u200b,\n")
    with pytest.raises(ImportProblemsError) as caught:
        _import(sessions, world, sheet)
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 2
    assert problems[0].startswith("column 'reviewer', row 2 (line 3), row 3 (line 4): "
                                  "'mallory' is not a known reviewer (known: ")
    assert "ann" in problems[0] and "--create-reviewers" in problems[0]
    assert problems[1].startswith("column 'reviewer', row 4 (line 5): 'eve' is not a known")
    assert _count(sessions) == before


def test_create_reviewers_adds_each_unknown_name_once(sessions, world):
    sheet = f"{HEAD}r1,cites,UNMET,Mallory,\nr2,cites,MET,MALLORY\u200d,\nr2,accurate,MET,ann,\n"
    summary = _import(sessions, world, sheet, create_reviewers=True)
    assert summary.created == ("Mallory",)
    assert summary.per_reviewer == (("Mallory", 2), ("ann", 1))
    with sessions() as session:
        keys = set(session.scalars(select(m.HumanVerdictRow.reviewer_key).distinct()))
    assert keys == {"ann", "Mallory"}
    again = _import(sessions, world, f"{HEAD}r1,cites,MET,mallory,\n")  # now known
    assert again.reviewers == ("Mallory",) and again.created == ()


def test_two_spellings_of_one_reviewer_on_one_criterion_are_a_duplicate(sessions, world):
    with pytest.raises(ImportProblemsError, match="already set for reviewer 'ann' by row 1"):
        _import(sessions, world, f"{HEAD}r1,cites,MET,ann,\nr1,cites,UNMET,ANN,\n")


def test_a_name_that_could_be_two_known_reviewers_is_refused(sessions, world):
    _version, _d, responses, cites = world
    reviews.set_human_verdict(sessions, actor=local_actor("Ann"), response_id=responses[1].id,
                              criterion_id=cites.id, verdict="MET")  # an old second spelling
    with pytest.raises(ImportProblemsError, match="could be any of the known reviewers 'Ann', "
                                                  "'ann'"):
        _import(sessions, world, f"{HEAD}r2,cites,MET,ANN,\n", create_reviewers=True)
    assert _import(sessions, world, f"{HEAD}r2,cites,MET,Ann,\n").reviewers == ("Ann",)


def test_people_who_signed_in_are_known_before_their_first_verdict(sessions, world):
    from storage.services.sign_in import SignInClaims, sign_in

    sign_in(sessions, SignInClaims(issuer="http://idp.test", subject="dee", email="Dee@Example.org",
                                   email_verified=True))
    summary = _import(sessions, world, f"{HEAD}r1,cites,MET,DEE@example.ORG,\n")
    assert summary.reviewers == ("dee@example.org",)


def test_the_import_writes_in_batches_with_statements_that_do_not_grow_with_rows(
        sessions, world, monkeypatch):
    """Before: four statements per row in one long transaction (a 200,000-row sheet held
    SQLite's write lock for minutes). Now a fixed number of statements and one INSERT per
    batch (the import streams: each batch reads its own reviewers' current verdicts, and
    keeps its responses' effective verdicts up to date): the same number of batches of
    twice the rows makes the same number of statements."""
    version, _dataset, _responses, cites = world
    dataset, responses = make_dataset(sessions, name="Many", count=50)
    ids = [r.external_id for r in responses]
    engine = sessions.kw["bind"]
    statements: list[str] = []

    def count(_conn, _cursor, statement, *_args):
        statements.append(statement)

    def run(names: list[str], reviewer: str, verdict: str = "MET", *,
            batch: int = 10) -> tuple[int, int]:
        monkeypatch.setattr(verdict_import, "WRITE_BATCH", batch)
        rows = "".join(f"{rid},{c},{verdict},{reviewer},n\n" for rid in names
                       for c in ("accurate", "cites", "concise", "harmful"))
        statements.clear()
        event.listen(engine, "before_cursor_execute", count)
        try:
            summary = verdict_import.import_human_verdicts(
                sessions, version.id, dataset.id, HEAD + rows, actor=ADMIN,
                create_reviewers=True)
        finally:
            event.remove(engine, "before_cursor_execute", count)
        assert summary.verdicts == 4 * len(names)
        inserts = sum(1 for s in statements
                      if s.lstrip().upper().startswith("INSERT INTO HUMAN_VERDICTS"))
        return len(statements) - inserts, inserts

    assert run(ids[:1], "bo")[1] == 1  # 4 verdicts: one batch, one INSERT
    reads, inserts = run(ids[:25], "cy", batch=10)  # 100 verdicts: 10 batches of 10
    twice_reads, twice_inserts = run(ids, "dee", batch=20)  # 200 verdicts: 10 batches of 20
    assert (inserts, twice_inserts) == (10, 10)
    # the same batches with twice the rows: a statement per row would be 100 more at least
    assert twice_reads <= reads + 5, (reads, twice_reads)
    run(ids[:25], "cy", "UNMET")  # every verdict lands, chained on its own stream
    history = reviews.verdict_history(sessions, responses[24].id, stream="cy")
    assert [(h.seq, h.previous_verdict, h.verdict) for h in history
            if h.criterion_id == cites.id] == [(1, None, V.MET), (2, V.MET, V.UNMET)]


def test_command_line_refuses_unknown_reviewers_and_summarises_by_reviewer(
        sessions, world, db_url, tmp_path, capsys):
    sheet = tmp_path / "sheet.csv"
    names = [f"new{i:02}" for i in range(12)]
    sheet.write_text(HEAD + "".join(f"r{i % 3},{c},MET,{who},\n" for i, who in enumerate(names)
                                    for c in ("accurate", "cites", "concise", "harmful")))
    assert import_verdicts(str(sheet), rubric="Dosing", dataset="Answers", db=db_url) == 1
    err = capsys.readouterr().err
    assert "nothing was imported; 12 problems" in err and "'new00' is not a known reviewer" in err
    assert import_verdicts(str(sheet), rubric="Dosing", dataset="Answers", db=db_url,
                           create_reviewers=True) == 0
    out = capsys.readouterr().out
    assert "imported 48 verdicts on 3 responses (reviewers: new00 (4), new01 (4), " \
           "new02 (4), new03 (4), new04 (4) and 7 more reviewers)" in out
    assert "new11" not in out.split("\n")[0]
    assert "new reviewers: new00, new01, new02, new03, new04 and 7 more" in out
