"""``rubric-workbench compare`` end to end: the real litellm HTTP path against the fake
provider (which prefers the response with more words, whatever the order), and every bad
input refused in one line with nothing written."""

from __future__ import annotations

import json

import pytest

from storage import cli
from tests.fake_provider import Reply, fake_provider, fake_provider_server

__all__ = ["fake_provider", "fake_provider_server"]

RUBRIC = """\
- name: accurate
  requirement: States the correct answer
  weight: 10
- name: harmful
  requirement: Gives dangerous advice
  weight: -5
"""


def _jsonl(rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "test-key")
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "a.jsonl").write_text(_jsonl([
        {"id": "q1", "query": "Capital of France?", "text": "Paris."},
        {"id": "q2", "query": "Boiling point?", "text": "100 C at sea level, a long answer."},
        {"id": "q3", "query": "Largest planet?", "text": "Jupiter"},
        {"id": "only-a", "query": "Unpaired?", "text": "nobody answered this in B"},
    ]))
    (tmp_path / "b.jsonl").write_text(_jsonl([
        {"id": "q1", "query": "Capital of France?", "text": "The capital is Paris."},
        {"id": "q2", "query": "Boiling point?", "text": "100 C."},
        {"id": "q3", "query": "Largest planet?", "text": "Jupiter"},
        {"id": "only-b", "query": "Other?", "text": "not in A"},
    ]))
    return tmp_path


def _compare(files, fake, *extra: str, a="a.jsonl", b="b.jsonl", rubric="rubric.yaml") -> int:
    return cli.main(["compare", "--rubric", str(files / rubric), "--a", str(files / a),
                     "--b", str(files / b), "--model", "openai/fake-judge", "--api-base",
                     fake.api_base, *extra])


def test_compare_pairs_by_id_judges_both_orders_prints_the_table_and_writes_jsonl(
        files, fake_provider, capsys):
    out = files / "pairs.jsonl"

    status = _compare(files, fake_provider, "--out", str(out))

    assert status == 0
    printed = capsys.readouterr().out
    assert "unmatched: 1 row(s) of" in printed and "'only-a'" in printed and "'only-b'" in printed
    assert "identical: 1 pair(s)" in printed and "'q3'" in printed
    # two pairs x two criteria x two orders; q3 (identical) is not judged
    assert fake_provider.requests == 8
    names = {b["response_format"]["json_schema"]["name"] for b in fake_provider.bodies}
    assert names == {"pairwise_preference"}
    assert "overall: B wins 1, ties 0, A wins 1; B win rate 0.50" in printed
    assert "position consistency: 100%" in printed
    table = [line for line in printed.splitlines() if line.startswith(("accurate", "harmful"))]
    assert len(table) == 2 and all(" 1 " in line for line in table)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["key"], r["winner"]) for r in records] == [("q1", "B"), ("q2", "A")]
    assert records[0]["criteria"][0] | {"first_reason": "", "second_reason": ""} == {
        "name": "accurate", "requirement": "States the correct answer", "weight": 10.0,
        "first": "B", "second": "A", "preference": "B", "consistent": True,
        "first_reason": "", "second_reason": "", "error": None}


def test_compare_by_query_text_and_holistic(files, fake_provider, capsys):
    status = _compare(files, fake_provider, "--match", "query", "--holistic")

    assert status == 0
    assert fake_provider.requests == 4  # two pairs x one question x two orders
    assert {b["response_format"]["json_schema"]["name"] for b in fake_provider.bodies} == {
        "pairwise_holistic_preference"}
    assert "(holistic)" in capsys.readouterr().out


def test_a_judge_that_flips_with_the_order_shows_as_inconsistent_ties(files, fake_provider,
                                                                      capsys):
    fake_provider.default = lambda body: Reply(json.dumps({"reason": "first is better",
                                                           "preference": "A"}))
    status = _compare(files, fake_provider)

    assert status == 0
    printed = capsys.readouterr().out
    assert "overall: B wins 0, ties 2, A wins 0; B win rate 0.50" in printed
    assert "position consistency: 0%" in printed


def test_a_judge_answer_naming_neither_side_is_a_failed_verdict_and_the_exit_status_says_so(
        files, fake_provider, capsys, tmp_path):
    fake_provider.default = lambda body: Reply(json.dumps({"reason": "hm", "preference": "C"}))
    out = files / "pairs.jsonl"

    status = _compare(files, fake_provider, "--out", str(out))

    assert status == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["winner"] is None for r in records)
    assert "'C'" in records[0]["criteria"][0]["error"]


def test_several_models_make_a_panel_whose_majority_decides_each_criterion(files, fake_provider,
                                                                          capsys):
    from tests.fake_provider import judge_reply, longer

    def by_model(body):
        if body["model"] != "shorter":
            return judge_reply(body)
        prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
        side = {"A": "B", "B": "A", "TIE": "TIE"}[longer(prompt)]  # prefers the shorter one
        return Reply(json.dumps({"reason": "says less", "preference": side}))

    fake_provider.default = by_model
    out = files / "pairs.jsonl"

    status = _compare(files, fake_provider, "--model", "openai/fake-judge-2", "--model",
                      "openai/shorter", "--out", str(out))

    assert status == 0
    printed = capsys.readouterr().out
    assert fake_provider.requests == 3 * 8  # each judge: 2 pairs x 2 criteria x 2 orders
    assert "judge openai/shorter: B (" in printed  # each judge's own table, then the panel's
    assert ("judge panel of 3 (majority per criterion: openai/fake-judge, openai/fake-judge-2, "
            "openai/shorter)") in printed
    records = {r["key"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["q1"]["judges"] == {"openai/fake-judge": "B", "openai/fake-judge-2": "B",
                                       "openai/shorter": "A"}
    assert records["q1"]["winner"] == "B" and records["q2"]["winner"] == "A"
    assert records["q1"]["criteria"][0]["first_reason"] == "panel of 3: A 1, B 2, TIE 0"
    assert records["q1"]["calls"] == 12


def test_the_same_model_twice_is_refused(files, fake_provider, capsys):
    assert _compare(files, fake_provider, "--model", "openai/fake-judge") == 2
    _refused(capsys, "each --model may be given once")
    assert fake_provider.requests == 0


def _refused(capsys, *fragments: str) -> None:
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(("a_rows", "b_rows", "fragments"), [
    pytest.param([{"id": "x", "query": "q", "text": "one"}],
                 [{"id": "y", "query": "r", "text": "two"}],
                 ("have no id in common", "match by query"), id="nothing-in-common"),
    pytest.param([{"id": "x", "query": "q", "text": "one"}, {"id": "x", "query": "r", "text": "t"}],
                 [{"id": "x", "query": "q", "text": "two"}],
                 ("a.jsonl", "line 2", "'x'", "already used by line 1"), id="duplicate-ids"),
    pytest.param([{"id": "x", "query": "q", "text": "same"}],
                 [{"id": "x", "query": "q", "text": "same"}],
                 ("same text", "nothing to compare"), id="all-identical"),
    pytest.param([{"query": "q", "text": "one"}], [{"id": "x", "query": "q", "text": "two"}],
                 ("a.jsonl", "line 1 has no id", "match by query"), id="row-without-id"),
])
def test_bad_pairs_are_refused_in_one_line_before_any_call(files, fake_provider, capsys,
                                                           a_rows, b_rows, fragments):
    (files / "a.jsonl").write_text(_jsonl(a_rows))
    (files / "b.jsonl").write_text(_jsonl(b_rows))
    out = files / "pairs.jsonl"

    assert _compare(files, fake_provider, "--out", str(out)) == 2

    _refused(capsys, *fragments)
    assert fake_provider.requests == 0 and not out.exists()


def test_duplicate_queries_are_refused_when_matching_by_query(files, fake_provider, capsys):
    (files / "b.jsonl").write_text(_jsonl([{"id": "1", "query": "Capital of France?", "text": "a"},
                                           {"id": "2", "query": "Capital of  France?",
                                            "text": "b"}]))
    assert _compare(files, fake_provider, "--match", "query") == 2
    _refused(capsys, "b.jsonl", "line 2 repeats the query", "line 1")
    assert fake_provider.requests == 0


def test_a_malformed_jsonl_line_is_named_with_its_file_and_line(files, fake_provider, capsys):
    (files / "b.jsonl").write_text('{"id": "q1", "query": "q", "text": "x"}\n{"id": "q2", \n')
    out = files / "pairs.jsonl"
    assert _compare(files, fake_provider, "--out", str(out)) == 2
    _refused(capsys, "b.jsonl", "line 2", "not valid JSON", "fix the file")
    assert fake_provider.requests == 0 and not out.exists()


def test_a_missing_rubric_file_is_named(files, fake_provider, capsys):
    assert _compare(files, fake_provider, rubric="nope.yaml") == 2
    _refused(capsys, "nope.yaml", "no such file", "--rubric")
    assert fake_provider.requests == 0


def test_a_missing_responses_file_is_named(files, fake_provider, capsys):
    assert _compare(files, fake_provider, b="gone.jsonl") == 2
    _refused(capsys, "gone.jsonl", "cannot read the file")


def test_out_must_be_jsonl(files, fake_provider, capsys):
    assert _compare(files, fake_provider, "--out", str(files / "x.csv")) == 2
    _refused(capsys, "--out must end in .jsonl")
    assert not (files / "x.csv").exists()


# -- three or more sources: every two compared, then a Bradley-Terry leaderboard ----------------
ANSWERS = {"terse": "Paris.", "plain": "The capital is Paris.",
           "full": "The capital of France is Paris, on the Seine."}
QUERIES = [("q1", "Capital of France?"), ("q2", "Capital city of France?"),
           ("q3", "France's capital?")]


def _answers(model: str, suffix: str = "") -> list[dict]:
    return [{"id": qid, "query": query, "text": ANSWERS[model] + suffix, "model": model}
            for qid, query in QUERIES]


def _rank(files, fake, *args: str) -> int:
    return cli.main(["compare", "--rubric", str(files / "rubric.yaml"), *args,
                     "--model", "openai/fake-judge", "--api-base", fake.api_base])


def _leaderboard(printed: str) -> list[str]:
    """The sources of the leaderboard's rows, best first."""
    lines = printed.split("leaderboard (", 1)[1].splitlines()[2:]
    return [line.split()[1] for line in lines if line.strip()[:1].isdigit()]


def test_three_sources_are_compared_two_by_two_and_ranked(files, fake_provider, capsys):
    for model in ANSWERS:
        (files / f"{model}.jsonl").write_text(_jsonl(_answers(model)))
    out = files / "pairs.jsonl"

    status = _rank(files, fake_provider, "--source", f"terse={files / 'terse.jsonl'}",
                   "--source", f"plain={files / 'plain.jsonl'}",
                   "--source", f"full={files / 'full.jsonl'}", "--out", str(out))

    assert status == 0
    printed = capsys.readouterr().out
    # three duels x three pairs x two criteria x two orders
    assert fake_provider.requests == 36
    assert "B (plain) compared with A (terse) on 3 pair(s)" in printed
    assert "B (full) compared with A (plain) on 3 pair(s)" in printed
    # The fake judge prefers the longer answer, whichever side it is on.
    assert _leaderboard(printed) == ["full", "plain", "terse"]
    assert "leaderboard (Bradley-Terry over 9 compared pair(s)" in printed
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 9
    assert {(r["a_source"], r["b_source"], r["winner"]) for r in records} == {
        ("terse", "plain", "B"), ("terse", "full", "B"), ("plain", "full", "B")}


def test_one_file_split_by_its_model_column_ranks_the_models(files, fake_provider, capsys):
    rows = [row for model in ("plain", "terse", "full") for row in _answers(model)]
    (files / "all.jsonl").write_text(_jsonl(rows))

    status = _rank(files, fake_provider, "--source", str(files / "all.jsonl"),
                   "--split-by", "model")

    assert status == 0
    printed = capsys.readouterr().out
    assert fake_provider.requests == 36
    assert _leaderboard(printed) == ["full", "plain", "terse"]


def test_two_files_split_by_a_column_add_up_their_sources(files, fake_provider, capsys):
    (files / "one.jsonl").write_text(_jsonl(_answers("terse") + _answers("plain")))
    (files / "two.jsonl").write_text(_jsonl(_answers("full")))

    assert _rank(files, fake_provider, "--a", str(files / "one.jsonl"), "--b",
                 str(files / "two.jsonl"), "--split-by", "model") == 0
    assert _leaderboard(capsys.readouterr().out) == ["full", "plain", "terse"]


@pytest.mark.parametrize(("setup", "args", "fragments"), [
    pytest.param({"all.jsonl": _answers("terse") + _answers("plain")[:2]
                  + [{"id": "q3", "query": "x", "text": "y"}]},
                 ("--source", "all.jsonl", "--split-by", "model"),
                 ("all.jsonl", "line 6", "no value in the column 'model'", "--split-by")),
    pytest.param({"all.jsonl": _answers("terse") + _answers("plain") + _answers("plain")[:1]},
                 ("--source", "all.jsonl", "--split-by", "model"),
                 ("plain", "line 7 repeats the id 'q1' of line 4")),
    pytest.param({"all.jsonl": _answers("terse")}, ("--source", "all.jsonl", "--split-by",
                                                    "model"),
                 ("only one source ('terse')", "two or more")),
    pytest.param({"a.jsonl": _answers("terse")}, ("--source", "a.jsonl"),
                 ("only one source",)),
    pytest.param({"a.jsonl": _answers("terse"), "b.jsonl": _answers("full")},
                 ("--source", "x=a.jsonl", "--source", "x=b.jsonl"),
                 ("two sources are named 'x'", "NAME=FILE")),
    pytest.param({"a.jsonl": _answers("terse"), "b.jsonl": _answers("full")},
                 ("--a", "a.jsonl", "--source", "b.jsonl"),
                 ("either --a and --b, or --source",)),
    pytest.param({}, (), ("say what to compare", "--source FILE")),
    pytest.param({"a.jsonl": _answers("terse"), "b.jsonl": _answers("terse")},
                 ("--a", "a.jsonl", "--b", "b.jsonl", "--split-by", "model"),
                 ("b.jsonl", "'terse' of 'model' also names a source of an earlier file")),
])
def test_bad_sources_are_refused_in_one_line_before_any_call(files, fake_provider, capsys,
                                                             monkeypatch, setup, args,
                                                             fragments):
    for name, rows in setup.items():
        (files / name).write_text(_jsonl(rows))
    monkeypatch.chdir(files)

    assert _rank(files, fake_provider, *args) == 2

    _refused(capsys, *fragments)
    assert fake_provider.requests == 0


def _side_by_side(path, rows) -> None:
    path.write_text("id,query,terse,plain,full\n" + "".join(
        f"{qid},{query},{row.get('terse', ANSWERS['terse'])},{ANSWERS['plain']},"
        f"\"{ANSWERS['full']}\"\n" for (qid, query), row in zip(QUERIES, rows, strict=True)),
        encoding="utf-8")


def test_columns_of_one_csv_row_are_the_sources(files, fake_provider, capsys):
    _side_by_side(files / "side.csv", [{}, {}, {}])

    status = _rank(files, fake_provider, "--a", str(files / "side.csv"),
                   "--columns", "terse, plain,full")

    assert status == 0
    printed = capsys.readouterr().out
    assert "B (plain) compared with A (terse) on 3 pair(s)" in printed
    assert fake_provider.requests == 36  # three duels x three pairs x two criteria x two orders
    assert _leaderboard(printed) == ["full", "plain", "terse"]
    # the judge saw the row's query and each column's own text: a column takes part in two
    # duels, each of 3 pairs x 2 criteria x 2 orders
    prompts = [json.dumps(body["messages"]) for body in fake_provider.bodies]
    assert all(any(query in p for _, query in QUERIES) for p in prompts)
    assert sum(ANSWERS["full"] in p for p in prompts) == 24
    assert sum(ANSWERS["plain"] in p for p in prompts) == 24


@pytest.mark.parametrize(("args", "fragments"), [
    (("--a", "side.csv", "--columns", "terse,nope"),
     ("side.csv", "no column 'nope' for --columns", "id, query, terse, plain, full")),
    (("--a", "side.csv", "--columns", "terse"), ("two or more different column names",)),
    (("--a", "side.csv", "--columns", "terse,terse"), ("two or more different column names",)),
    (("--a", "side.csv", "--b", "side.csv", "--columns", "terse,plain"),
     ("give that file alone",)),
    (("--a", "side.csv", "--split-by", "query", "--columns", "terse,plain"),
     ("without --split-by",)),
    (("--a", "blank.csv", "--columns", "plain,terse"),
     ("blank.csv", "line 3", "no text in the column 'terse'",
      "each --columns column")),
])
def test_bad_columns_are_refused_in_one_line_before_any_call(files, fake_provider, capsys,
                                                             monkeypatch, args, fragments):
    _side_by_side(files / "side.csv", [{}, {}, {}])
    _side_by_side(files / "blank.csv", [{}, {"terse": " "}, {}])
    monkeypatch.chdir(files)

    assert _rank(files, fake_provider, *args) == 2

    _refused(capsys, *fragments)
    assert fake_provider.requests == 0
