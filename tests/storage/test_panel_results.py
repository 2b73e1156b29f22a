"""A panel read like a run (SQLite and PostgreSQL): people's verdicts in place of the
panel's, scored by the one aggregation; the results export and the CLI export a panel."""

from __future__ import annotations

import csv
import io
import json

import pytest

from grading.aggregation import score_verdicts
from grading.types import ScoringSettings, Verdict
from storage import cli
from storage.errors import NotFoundError
from storage.exports import BASE_COLUMNS, results_export
from storage.services import panel_results, panels, reviews
from tests.storage.helpers import CRITERIA
from tests.storage.test_panels import ADMIN, three_judges  # noqa: F401 (fixture)

M, U, CA = Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS
# r1's score: its ties on 'cites' and 'harmful' are undecided (CANNOT_ASSESS, skipped)
TIED = score_verdicts(CRITERIA, [M, CA, M, CA], ScoringSettings(), {"output": "x"})[2]


def test_people_replace_the_panels_verdict_and_the_score_comes_from_the_one_aggregation(
        sessions, three_judges):  # noqa: F811
    _version, _dataset, responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    r1 = responses[1]
    before = {r.response_id: r for r in panel_results.panel_results(sessions, panel.id)}
    # r1's 'cites' is a tie (MET, UNMET, failed): undecided, and says so (grading.ties;
    # changed deliberately: it went to the lower score)
    cites = before[r1.id].effective.criteria[1]
    assert cites.judge_verdict is CA
    assert "tie" in cites.judge_reason and "undecided" in cites.judge_reason
    assert before[r1.id].ties == 2
    assert before[r1.id].effective.score == pytest.approx(TIED)

    reviews.set_human_verdict(sessions, response_id=r1.id, criterion_id=cites.criterion_id,
                              verdict="MET", actor=ADMIN, note="it cites the label")
    [after] = panel_results.panel_results(sessions, panel.id, [r1.id])
    assert after.effective.judge_score == pytest.approx(TIED)
    expected = score_verdicts(CRITERIA, [M, M, M, CA], ScoringSettings(), {"output": "x"})[2]
    assert after.effective.score == pytest.approx(expected)
    assert after.effective.reviewed_count == 1
    assert after.effective.criteria[1].effective_verdict is M
    # the members' verdicts stay readable under the panel's
    assert after.grade.criteria[1].member_verdicts == (M, U, None)


def test_the_stamp_moves_with_a_verdict_and_a_members_grade(sessions, three_judges):  # noqa: F811
    _version, _dataset, responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids[:2], rule="any", actor=ADMIN)
    first = panel_results.panel_stamp(sessions, [panel.id])
    assert panel_results.panel_stamp(sessions, [panel.id]) == first
    version_criteria = panel_results.panel_results(sessions, panel.id)[0].effective.criteria
    reviews.set_human_verdict(sessions, response_id=responses[0].id,
                              criterion_id=version_criteria[0].criterion_id, verdict="UNMET",
                              actor=ADMIN)
    assert panel_results.panel_stamp(sessions, [panel.id]) != first
    assert panel_results.panel_stamp(sessions, []) == ()


def test_the_results_export_writes_a_panel_like_a_run(sessions, three_judges):  # noqa: F811
    _version, _dataset, responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN,
                                name="trio")
    records = [json.loads(line) for line in
               results_export(sessions, [run_ids[0]], "jsonl", [panel.id]).splitlines()]
    assert [r["run_id"] for r in records] == [run_ids[0]] * 3 + [None] * 3
    mine = [r for r in records if r.get("panel_id") == panel.id]
    assert [r["workbench_response_id"] for r in mine] == [r.id for r in responses]
    r1 = mine[1]
    assert (r1["run_name"], r1["grader"], r1["ties"]) == ("trio", "panel", 2)
    assert r1["model"].startswith("majority of #")
    assert r1["member_runs"] == " ".join(map(str, run_ids))
    assert r1["cost"] is None  # one member's cost is unknown: never priced at 0
    cites = r1["criteria"][1]
    assert (cites["judge_verdict"], cites["tie"]) == ("CANNOT_ASSESS", True)
    assert cites["members"] == f"#{run_ids[0]}:MET #{run_ids[1]}:UNMET #{run_ids[2]}:failed"
    assert r1["effective_score"] == pytest.approx(TIED)

    table = list(csv.DictReader(io.StringIO(
        results_export(sessions, [], "csv", [panel.id]))))
    assert len(table) == 3
    assert table[1]["panel_id"] == str(panel.id) and table[1]["cites.tie"] == "True"
    assert table[1]["cites.judge_verdict"] == "CANNOT_ASSESS"
    # a runs-only export keeps its columns exactly
    header = results_export(sessions, [run_ids[0]], "csv").splitlines()[0].split(",")
    assert tuple(header[:len(BASE_COLUMNS)]) == BASE_COLUMNS
    assert "panel_id" not in header and not any(h.endswith(".tie") for h in header)


def test_cli_exports_a_panel_and_refuses_a_missing_one_without_writing(
        sessions, db_url, three_judges, tmp_path, capsys):  # noqa: F811
    run_ids = three_judges[3]
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    out = tmp_path / "panel.csv"
    assert cli.main(["export", "--panel", str(panel.id), "--db", db_url, "--out",
                     str(out)]) == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["panel_id"] for r in rows] == [str(panel.id)] * 3
    missing = tmp_path / "missing.csv"
    assert cli.main(["export", "--panel", "9999", "--db", db_url, "--out",
                     str(missing)]) != 0
    assert "judge panel 9999 does not exist" in capsys.readouterr().err
    assert not missing.exists()
    with pytest.raises(NotFoundError):
        results_export(sessions, [], "jsonl", [9999])


def test_the_results_table_csv_carries_a_panel_column_group(sessions, three_judges):  # noqa: F811
    from storage.exports import table_csv
    from storage.services import results, runs

    _version, dataset, responses, run_ids = three_judges
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    page = results.results_page(sessions, dataset_id=dataset.id,
                                rubric_version_id=panel.rubric_version_id,
                                run_ids=run_ids[:1], limit=10)
    effective = {r.response_id: r.effective
                 for r in panel_results.panel_results(sessions, panel.id)}
    rows = list(csv.DictReader(io.StringIO(table_csv(
        page, [runs.get_run(sessions, run_ids[0])], [(f"panel{panel.id}_majority", effective)]))))
    assert [r["workbench_response_id"] for r in rows] == [str(r.id) for r in responses]
    column = f"panel{panel.id}_majority_effective_score"
    assert float(rows[1][column]) == pytest.approx(TIED)


def test_panel_export_and_the_results_export_agree_on_every_decision(sessions, three_judges):  # noqa: F811
    """``panel export`` (the panel's decisions only) and ``export --panel`` (a record like a
    run's, people's verdicts applied) are two documented shapes of the same decisions."""
    from storage.panel_commands import panel_records

    run_ids = three_judges[3]
    panel = panels.create_panel(sessions, run_ids=run_ids, rule="majority", actor=ADMIN)
    compact = list(panel_records(sessions, panel.id))
    full = [json.loads(line) for line in
            results_export(sessions, [], "jsonl", [panel.id]).splitlines()]
    assert len(compact) == len(full) == 3
    for short, long in zip(compact, full, strict=True):
        keys = ("panel_id", "response_id", "workbench_response_id", "score", "raw_score",
                "error", "cost")
        assert {k: short[k] for k in keys} == {k: long[k] for k in keys}
        assert " ".join(map(str, short["member_runs"])) == long["member_runs"]
        # a member still grading is pending in both shapes, never failed (issue 40, item 6)
        assert short["complete"] == long["complete"]
        assert " ".join(map(str, short["pending_members"])) == long["pending_members"]
        pending = set(short["pending_members"])
        for mine, theirs in zip(short["criteria"], long["criteria"], strict=True):
            assert (mine["criterion"], mine["verdict"], mine["tie"], mine["how"]) == (
                theirs["name"], theirs["judge_verdict"], theirs["tie"], theirs["reason"])
            assert " ".join(
                f"#{run_id}:{verdict or ('pending' if run_id in pending else 'failed')}"
                for run_id, verdict in zip(run_ids, mine["members"], strict=True)
            ) == theirs["members"]
    assert sum(c["tie"] for r in compact for c in r["criteria"]) > 0  # ties are compared too
