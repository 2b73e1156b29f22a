"""AppTest: the Agreement page's trust section shows the criterion-order effect of a
one-shot run that shuffled the criteria (late minus early, with its interval and n), says
"can't tell yet" for a run with too few responses, and "not shuffled" otherwise."""

from __future__ import annotations

import random

from grading.types import Criterion
from storage.services import datasets, rubrics, runs, trust_report
from tests.actors import ADMIN
from tests.kinds import MIXED, judge_report
from tests.ui.pages import unescape
from tests.ui.test_agreement_trust import _open, _table

CRITERIA = [MIXED[0], MIXED[1],
            Criterion(name="brief", requirement="Is brief", weight=1)]
COLUMN = "Listed late minus early (one-shot)"


def _run(sessions, version, dataset_id: int, ids: list[int], *, shuffled: bool) -> int:
    rng = random.Random(len(ids))
    run = runs.create_run(sessions, rubric_version_id=version.id, dataset_id=dataset_id,
                          grader="one_shot", model=f"openai/judge-{len(ids)}",
                          settings={"extra": {"shuffle_criteria": True} if shuffled else {}},
                          actor=ADMIN)
    for rid in ids:
        order = list(range(3))
        rng.shuffle(order)  # order[p] = criterion listed at p + 1
        listed_at = {c: p + 1 for p, c in enumerate(order)}
        # MET far more often when listed first; the rating higher when listed first
        accurate = "MET" if rng.random() < (0.9 if listed_at[0] == 1 else 0.2) else "UNMET"
        clarity = "Excellent" if listed_at[1] == 1 else "Poor"
        report = judge_report([accurate, clarity, "MET"], CRITERIA)
        items = [item.model_copy(update={"prompt_position": listed_at[i] if shuffled
                                         else None})
                 for i, item in enumerate(report.report)]
        runs.record_grade(sessions, run.id, rid, report.model_copy(update={"report": items}))
    runs.start_run(sessions, run.id, worker="seed")
    runs.finish_run(sessions, run.id)
    return run.id


def test_the_trust_section_shows_the_criterion_order_effect(sessions):
    version = rubrics.create_rubric(sessions, "Ordered", CRITERIA, actor=ADMIN)
    dataset = datasets.create_dataset(sessions, "Ordered answers", responses=[
        {"id": f"o{i}", "query": "q", "text": f"answer {i}"} for i in range(60)], actor=ADMIN)
    ids = [r.id for r in datasets.list_responses(sessions, dataset.id, limit=None)]
    many = _run(sessions, version, dataset.id, ids, shuffled=True)
    few = _run(sessions, version, dataset.id, ids[:8], shuffled=True)
    plain = _run(sessions, version, dataset.id, ids[:20], shuffled=False)
    expected = trust_report.trust_report(sessions, version.id, dataset.id)

    at = _open()
    assert not at.exception, at.exception
    at.selectbox(key="agreement_trust_judge").set_value(f"run:{many}").run()
    assert not at.exception, at.exception
    shown = _table(at, COLUMN)
    rows = expected.judge(f"run:{many}").criteria
    for cell, row in zip(shown[COLUMN], rows, strict=True):
        f = row.criterion_order.late_minus_early
        assert cell == f"{f.value:+.2f} [{f.low:+.2f}, {f.high:+.2f}] (n={f.n})"
    assert rows[0].criterion_order.late_minus_early.high < 0
    assert rows[1].criterion_order.late_minus_early.value == -1.0  # Poor 0 vs Excellent 1
    text = "\n".join(unescape(str(m.value)) for m in [*at.markdown, *at.caption])
    assert "judged lower when listed late" in text
    assert "can't tell yet below 10 responses in either half" in text

    at.selectbox(key="agreement_trust_judge").set_value(f"run:{few}").run()
    cells = list(_table(at, COLUMN)[COLUMN])
    assert all(c.startswith("can't tell yet (n=") for c in cells), cells
    at.selectbox(key="agreement_trust_judge").set_value(f"run:{plain}").run()
    assert list(_table(at, COLUMN)[COLUMN]) == ["not shuffled"] * 3
