"""Judge panels on SQLite and PostgreSQL: validation, grades read from members, permissions."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from grading.aggregation import score_verdicts
from grading.types import Criterion, ScoringSettings, Verdict
from storage import models as m
from storage.errors import InvalidInputError, NotFoundError
from storage.services import datasets, panels, runs
from storage.services.reviewers import Actor, PermissionDeniedError, Role, local_actor
from tests.storage.helpers import CRITERIA, holistic_report, judge_report, make_rubric, make_run

M, U, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
ADMIN = local_actor("Ada")
REVIEWER = Actor(key="rita@example.org", name="Rita", roles=frozenset({Role.REVIEWER}),
                 signed_in=True)


def _grade(sessions, run, response, verdicts, cost=0.002):
    report = judge_report(CRITERIA, verdicts, ScoringSettings(), response.output, cost=cost)
    runs.record_grade(sessions, run.id, response.id, report)


@pytest.fixture
def three_judges(sessions):
    """Three per-criterion runs over three responses (CRITERIA: 10, 5, 2.5, -8)."""
    version = make_rubric(sessions)
    rows = [{"id": f"r{i}", "text": f"answer {i}"} for i in range(3)]
    dataset = datasets.create_dataset(sessions, "Answers", responses=rows, actor=ADMIN)
    responses = datasets.list_responses(sessions, dataset.id, limit=None)
    judges = [make_run(sessions, version.id, dataset.id) for _ in range(3)]
    script = [
        # r0: a clear majority on every criterion
        ([M, M, M, U], [M, U, M, U], [M, M, U, U]),
        # r1: judge 3 failed on 'cites' and 'harmful': ties there are undecided
        ([M, M, M, M], [M, U, M, U], [M, None, M, None]),
        # r2: judge 3 not graded yet
        ([U, U, U, U], [U, U, U, U], None),
    ]
    for index, verdicts in enumerate(script):
        for judge, judged in zip(judges, verdicts, strict=True):
            if judged is not None:
                _grade(sessions, judge, responses[index], judged,
                       cost=None if (judge is judges[2] and index == 1) else 0.002)
    return version, dataset, responses, [j.id for j in judges]


def stored_before_the_tie_rule(sessions, panel_id: int) -> None:
    """Make a panel look as one stored before the one tie rule did: no tie rule in its
    scoring JSON (panel_ties.read then gives it the lower-score rule it was made with)."""
    with sessions.begin() as session:
        scoring = dict(session.get(m.PanelRow, panel_id).scoring)
        assert scoring.pop("tie_rule") == "undecided"
        session.execute(update(m.PanelRow).where(m.PanelRow.id == panel_id)
                        .values(scoring=scoring))


def test_a_panel_stored_before_the_one_tie_rule_reads_back_as_it_was_stored(
        sessions, three_judges):
    """Panels are combined when read: a panel made when ties went to the lower score (its
    scoring JSON has no tie rule) keeps that rule, so its verdicts and scores do not change
    under it; a new panel of the same runs is a new panel with the one rule."""
    _version, _dataset, responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    stored_before_the_tie_rule(sessions, panel.id)
    old = panels.get_panel(sessions, panel.id)
    assert old.tie_rule == "lower_score"
    r1 = {g.response_id: g for g in panels.panel_grades(sessions, panel.id)}[responses[1].id]
    cites, harmful = r1.criteria[1], r1.criteria[3]
    assert (cites.decision.verdict, harmful.decision.verdict) == (U, M)  # as stored
    assert "lower score" in cites.decision.note
    assert r1.score == pytest.approx((10 + 2.5 - 8) / 17.5)
    again = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    assert again.id != panel.id and again.tie_rule == "undecided"


def test_majority_panel_grades_each_response_through_the_one_aggregation(sessions, three_judges):
    version, dataset, responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN,
                                name="Three judges")
    assert panel.rubric_version_id == version.id and panel.dataset_id == dataset.id
    assert panel.created_by == "Ada"
    grades = {g.response_id: g for g in panels.panel_grades(sessions, panel.id)}
    assert set(grades) == {r.id for r in responses}

    r0 = grades[responses[0].id]
    assert [c.decision.verdict for c in r0.criteria] == [M, M, M, U]
    expected = score_verdicts(CRITERIA, [M, M, M, U], ScoringSettings(), {"output": "answer 0"})
    assert r0.score == pytest.approx(expected[2])
    assert r0.cost == pytest.approx(0.006)

    r1 = grades[responses[1].id]
    cites, harmful = r1.criteria[1], r1.criteria[3]
    assert cites.member_verdicts == (M, U, None)
    # a tie is undecided (grading.ties; changed deliberately: it went to the lower score)
    assert cites.decision.verdict is CA and cites.decision.tie
    assert harmful.decision.verdict is CA and harmful.decision.tie
    assert r1.score == pytest.approx(score_verdicts(
        CRITERIA, [M, CA, M, CA], ScoringSettings(), {"output": "answer 1"})[2])
    assert r1.cost is None  # one member's cost is unknown: never priced at 0

    r2 = grades[responses[2].id]
    assert r2.members_graded == 2
    # the missing member abstains: 2 of 3 UNMET is still a strict majority
    assert [c.decision.verdict for c in r2.criteria] == [U, U, U, U]


def test_member_agreement_flags_low_agreement_criteria(sessions, three_judges):
    _version, _dataset, _responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="unanimous", actor=ADMIN)
    by_label = {a.label: a for a in panels.member_agreement(sessions, panel.id)}
    assert set(by_label) == {"accurate", "cites", "concise", "harmful"}
    assert by_label["cites"].low and by_label["cites"].alpha is not None
    assert by_label["cites"].units == 3


def test_weighted_panel_uses_member_weights(sessions, three_judges):
    _version, _dataset, responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="weighted", weights=[1, 3, 1],
                                actor=ADMIN)
    assert [m.weight for m in panel.members] == [1, 3, 1]
    r0 = panels.panel_grades(sessions, panel.id, [responses[0].id])[0]
    assert r0.criteria[1].decision.verdict is U  # the heavy member's UNMET outweighs two MET


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"rule": "plurality"}, "unknown panel rule 'plurality'", id="rule"),
        pytest.param({"rule": "weighted"}, "needs a weight for every member", id="no-weights"),
        pytest.param({"rule": "weighted", "weights": [1, -1, 1]},
                     "member 2: weight must be a positive number", id="bad-weight"),
        pytest.param({"rule": "majority", "weights": [2, 1, 1]},
                     "weights are only for the weighted rule", id="weights-not-weighted"),
    ],
)
def test_bad_panel_settings_are_refused(sessions, three_judges, kwargs, message):
    run_ids = three_judges[3]
    with pytest.raises(InvalidInputError, match=message):
        panels.create_panel(sessions, run_ids=run_ids, actor=ADMIN, **kwargs)
    assert panels.list_panels(sessions) == []


def test_runs_of_another_version_or_dataset_or_holistic_cannot_join(sessions, three_judges):
    version, dataset, responses, run_ids = three_judges
    other_dataset = datasets.create_dataset(sessions, "Other", responses=[{"text": "x"}],
                                            actor=ADMIN)
    stranger = make_run(sessions, version.id, other_dataset.id)
    with pytest.raises(InvalidInputError, match="another dataset"):
        panels.create_panel(sessions, run_ids=[run_ids[0], stranger.id], rule="any",
                            actor=ADMIN)
    other_version = make_rubric(sessions, name="Other rubric",
                                criteria=[Criterion(requirement="x", weight=1)])
    outsider = make_run(sessions, other_version.id, dataset.id)
    with pytest.raises(InvalidInputError, match="another rubric version"):
        panels.create_panel(sessions, run_ids=[run_ids[0], outsider.id], rule="any",
                            actor=ADMIN)
    holistic = make_run(sessions, version.id, dataset.id, grader="rubric_as_judge")
    runs.record_grade(sessions, holistic.id, responses[0].id, holistic_report(
        CRITERIA, 80, ScoringSettings(), responses[0].output))
    with pytest.raises(InvalidInputError, match=r"holistic.*cannot vote"):
        panels.create_panel(sessions, run_ids=[run_ids[0], holistic.id], rule="majority",
                            actor=ADMIN)
    with pytest.raises(InvalidInputError, match="at least two runs"):
        panels.create_panel(sessions, run_ids=[run_ids[0]], rule="majority", actor=ADMIN)
    with pytest.raises(InvalidInputError, match="only once"):
        panels.create_panel(sessions, run_ids=[run_ids[0], run_ids[0]], rule="majority",
                            actor=ADMIN)
    with pytest.raises(NotFoundError):
        panels.create_panel(sessions, run_ids=[run_ids[0], 99999], rule="majority",
                            actor=ADMIN)
    assert panels.list_panels(sessions) == []


def test_a_reviewer_may_not_create_or_delete_panels(sessions, three_judges):
    run_ids = three_judges[3]
    with pytest.raises(PermissionDeniedError, match="Rita may not create a judge panel"):
        panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=REVIEWER)
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    with pytest.raises(PermissionDeniedError, match="needs an admin"):
        panels.delete_panel(sessions, panel.id, actor=REVIEWER)
    assert [p.id for p in panels.list_panels(sessions)] == [panel.id]
    panels.delete_panel(sessions, panel.id, actor=ADMIN)
    assert panels.list_panels(sessions) == []
    # the members and their grades stay
    assert len(runs.list_grades(sessions, run_ids[0])) == 3


def test_panel_lists_filter_by_result_set(sessions, three_judges):
    version, dataset, _responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids[:2], rule="any", actor=ADMIN)
    assert [p.id for p in panels.list_panels(sessions, dataset_id=dataset.id,
                                             rubric_version_id=version.id)] == [panel.id]
    assert panels.list_panels(sessions, dataset_id=dataset.id + 1) == []
    assert panels.get_panel(sessions, panel.id).label == f"panel {panel.id} (any of 2)"


def test_panel_commands_create_list_and_export(sessions, db_url, three_judges, tmp_path,
                                               capsys):
    from storage import cli

    _version, _dataset, responses, run_ids = three_judges
    args = ["panel", "--db", db_url, "create", "--rule", "majority", "--name", "trio"]
    for run_id in run_ids:
        args += ["--run", str(run_id)]
    assert cli.main(args) == 0
    created = capsys.readouterr().out
    panel = panels.list_panels(sessions)[0]
    assert created.startswith(f"panel {panel.id}: majority of runs")
    assert cli.main(["panel", "--db", db_url, "list"]) == 0
    assert "trio" in capsys.readouterr().out

    out = tmp_path / "panel.jsonl"
    assert cli.main(["panel", "--db", db_url, "export", str(panel.id), "--out", str(out)]) == 0
    import json

    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["workbench_response_id"] for r in records] == [r.id for r in responses]
    assert [r["response_id"] for r in records] == [r.external_id or f"#{r.id}"
                                                   for r in responses]
    cites = records[1]["criteria"][1]
    assert cites == {"criterion": "cites", "verdict": "CANNOT_ASSESS", "tie": True,
                     "how": "tie (MET 1, UNMET 1, abstained 1): undecided, CANNOT_ASSESS",
                     "members": ["MET", "UNMET", None]}
    csv_out = tmp_path / "panel.csv"
    assert cli.main(["panel", "--db", db_url, "export", str(panel.id), "--out",
                     str(csv_out)]) == 0
    assert len(csv_out.read_text().splitlines()) == 1 + 3 * 4
    assert csv_out.read_text().startswith("panel_id,response_id,workbench_response_id,")

    # bad input: a message, not a traceback, and nothing written
    assert cli.main(["panel", "--db", db_url, "create", "--rule", "weighted",
                     "--run", str(run_ids[0]), "--run", str(run_ids[1])]) == 1
    assert "needs a weight for every member" in capsys.readouterr().err
    assert len(panels.list_panels(sessions)) == 1


def test_deleting_a_panel_is_recorded_in_the_activity_log(sessions, three_judges):
    from storage.services import people

    run_ids = three_judges[3]
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN,
                                name="Three judges")
    refused_before = len(people.list_audit_events(sessions))
    with pytest.raises(PermissionDeniedError):
        panels.delete_panel(sessions, panel.id, actor=REVIEWER)
    assert len(people.list_audit_events(sessions)) == refused_before  # refused: nothing logged
    panels.delete_panel(sessions, panel.id, actor=ADMIN)
    [event] = [e for e in people.list_audit_events(sessions) if e.target_kind == "judge panel"]
    assert (event.actor, event.action, event.target_id, event.target_name) == (
        "Ada", "delete", panel.id, "Three judges")
    assert "majority of runs " + ", ".join(map(str, run_ids)) in event.detail


def test_ensure_panel_finds_the_same_panel_instead_of_making_a_copy(sessions, three_judges):
    run_ids = three_judges[3]
    first, created = panels.ensure_panel(sessions, run_ids=run_ids, rule="majority",
                                         actor=ADMIN)
    again, created_again = panels.ensure_panel(sessions, run_ids=run_ids, rule="majority",
                                               actor=ADMIN, name="another name")
    assert created and not created_again and again.id == first.id
    # another rule, other weights or other members make another panel
    weighted, made = panels.ensure_panel(sessions, run_ids=run_ids, rule="weighted",
                                         weights=[1, 1, 2], actor=ADMIN)
    other_weights, made_too = panels.ensure_panel(sessions, run_ids=run_ids, rule="weighted",
                                                  weights=[1, 2, 1], actor=ADMIN)
    pair, made_pair = panels.ensure_panel(sessions, run_ids=run_ids[:2], rule="majority",
                                          actor=ADMIN)
    assert made and made_too and made_pair
    assert len({first.id, weighted.id, other_weights.id, pair.id}) == 4
    with pytest.raises(PermissionDeniedError):
        panels.ensure_panel(sessions, run_ids=run_ids, rule="majority", actor=REVIEWER)


def test_two_launches_at_once_make_one_panel(sessions, three_judges):
    """Two browsers (or a double click) launching the same panel at the same moment."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    run_ids = three_judges[3]
    start = Barrier(2)

    def launch(_):
        start.wait()
        return panels.ensure_panel(sessions, run_ids=run_ids, rule="any", actor=ADMIN)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(launch, range(2)))
    assert len({panel.id for panel, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, True]
    assert len(panels.list_panels(sessions)) == 1


def test_creating_the_same_panel_twice_returns_the_existing_one(sessions, three_judges):
    """A double click on Create panel (or the command run twice) makes one panel, not two
    with the same members; other scoring settings are another panel."""
    run_ids = three_judges[3]
    first = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    again = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN,
                                name="P2")
    assert again.id == first.id and len(panels.list_panels(sessions)) == 1
    stricter = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN,
                                   scoring=ScoringSettings(normalize=False))
    assert stricter.id != first.id


def test_concurrent_clicks_on_create_panel_make_one_panel(sessions, three_judges):
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    run_ids = three_judges[3]
    start = Barrier(4)

    def click(_):
        start.wait()
        return panels.create_panel(sessions, run_ids=run_ids, rule="weighted",
                                   weights=[2, 1, 1], actor=ADMIN)

    with ThreadPoolExecutor(4) as pool:
        made = list(pool.map(click, range(4)))
    assert len({panel.id for panel in made}) == 1
    assert len(panels.list_panels(sessions)) == 1


def test_a_weight_whose_sum_would_overflow_is_refused_when_the_panel_is_created(
        sessions, db_url, three_judges, capsys):
    from storage import cli

    run_ids = three_judges[3]
    args = ["panel", "--db", db_url, "create", "--rule", "weighted"]
    for run_id in run_ids:
        args += ["--run", str(run_id), "--weight", "1e308"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "member 1: weight must be between 1e-06 and 1,000,000, got 1e+308" in err
    assert "Traceback" not in err
    assert panels.list_panels(sessions) == []
