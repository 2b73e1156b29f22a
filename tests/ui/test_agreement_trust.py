"""AppTest of the Agreement page's "How far to trust this judge" section."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from storage.services import trust_report
from tests.storage import trust_seed
from tests.storage.agreement_seed import seed as seed_small
from tests.ui.pages import agreement_tab, unescape

APP = str(Path(__file__).resolve().parents[2] / "ui" / "app.py")


def _open() -> AppTest:
    """The Agreement page on its "Trust a judge" section."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("app_pages/agreement.py")
    return agreement_tab(at, "Trust a judge")


def _table(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_trust_section_shows_every_figure_with_n_and_interval(sessions):
    world = trust_seed.seed(sessions)
    expected = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    at = _open()
    assert not at.exception, at.exception
    assert "How far to trust this judge" in [h.value for h in at.subheader]
    a1 = expected.judge(f"run:{world.runs['a1']}")
    assert at.selectbox(key="agreement_trust_judge").value == a1.source_key
    text = "\n".join(unescape(str(m.value)) for m in [*at.markdown, *at.caption])
    assert a1.verdict in text
    assert "Cost per 1,000 responses: $2.00" in text
    assert f"{trust_seed.HARD_CASES} reviewed responses outside the sample are left out" in text
    corrected = _table(at, "Corrected estimate")
    assert list(corrected["Criterion"]) == ["accurate", "clarity", "Score"]
    # n and an interval beside every figure that has a value
    figure = re.compile(r"^[+-]?\d+\.\d\d \[[+-]?\d+\.\d\d, [+-]?\d+\.\d\d\] \(n=\d+\)$")
    for column in ("Judge's mean", "People's mean on the sample", "Corrected estimate"):
        assert all(figure.match(v) for v in corrected[column]), list(corrected[column])
    assert corrected["Corrected estimate"][0].endswith(f"(n={trust_seed.SAMPLE})")
    stability = _table(at, "Fleiss' κ")
    assert all(figure.match(v) for v in stability["Flip rate"])
    assert all(v.endswith(f"(n={trust_seed.RESPONSES})") for v in stability["Fleiss' κ"])
    bias = _table(at, "Within the human verdict")
    assert all(figure.match(v) for v in bias["Within the human verdict"])
    assert bias["First-shown option chosen, minus chance"][1].endswith(
        f"(n={trust_seed.RESPONSES})")
    assert bias["First-shown option chosen, minus chance"][0] == "not shuffled"

    # the other judge: one run only, so stability is not measured, and the page says why
    at.selectbox(key="agreement_trust_judge").set_value(f"run:{world.runs['b']}").run()
    assert not at.exception, at.exception
    captions = "\n".join(unescape(str(c.value)) for c in at.caption)
    assert "Not measured: one run of this judge" in captions
    assert expected.judge(f"run:{world.runs['b']}").verdict in "\n".join(
        unescape(str(m.value)) for m in at.markdown)


def test_switching_result_sets_keeps_the_trust_section_on_a_judge_of_the_new_set(sessions):
    """The judge picked on one dataset x rubric is not a judge of the next one: the section
    falls back to the new set's first judge instead of failing."""
    world = trust_seed.seed(sessions)
    other = seed_small(sessions)
    at = _open()
    trust_set = f"{world.dataset_id}:{world.version_id}"
    at.selectbox(key="agreement_set").set_value(trust_set).run()
    at.selectbox(key="agreement_trust_judge").set_value(f"run:{world.runs['b']}").run()
    assert not at.exception, at.exception
    at.selectbox(key="agreement_set").set_value(f"{other.dataset.id}:{other.version.id}").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="agreement_trust_judge").value == f"run:{other.cheap.id}"
    # the holistic run gives no per-criterion verdicts: not a judge of this section
    assert len(at.selectbox(key="agreement_trust_judge").options) == 2  # cheap and strong


def test_a_panel_shows_its_stability_and_where_its_samples_come_from(sessions):
    from storage.services import panels
    from tests.actors import ADMIN

    world = trust_seed.seed(sessions, b_twice=True)
    panel = panels.create_panel(sessions, run_ids=[world.runs["a1"], world.runs["b"]],
                                rule="majority", actor=ADMIN)
    expected = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    judge = expected.judge(f"panel:{panel.id}")
    at = _open()
    at.selectbox(key="agreement_trust_judge").set_value(judge.source_key).run()
    assert not at.exception, at.exception
    text = "\n".join(unescape(str(m.value)) for m in [*at.markdown, *at.caption])
    assert judge.verdict in text
    assert f"runs #{world.runs['b']}, #{world.runs['b2']}" in text
    stability = _table(at, "Fleiss' κ")
    assert list(stability["Criterion"]) == ["accurate", "clarity"]
    assert stability["Flip rate"][0].endswith(
        f"(n={judge.criteria[0].stability.flip_rate.n})")
    bias = _table(at, "First-shown option chosen, minus chance")
    assert bias["First-shown option chosen, minus chance"][1].endswith(
        f"(n={trust_seed.RESPONSES})")  # each response once


def test_the_trust_section_places_the_judge_against_the_peoples_own_range(sessions):
    world = trust_seed.seed(sessions, second_reviewer=True)
    expected = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    a1 = expected.judge(f"run:{world.runs['a1']}")
    assert a1.human_range and a1.human_range[0].position != "unknown"
    at = _open()
    assert not at.exception, at.exception
    text = "\n".join(unescape(str(m.value)) for m in [*at.markdown, *at.caption])
    assert a1.verdict in text
    table = _table(at, "The people (each reviewer)")
    assert list(table["Criterion"]) == ["accurate"]
    figure = table["Judge"][0]
    assert figure.startswith(f"{a1.human_range[0].judge_f1.value:.2f} [")
    assert figure.endswith(f"(n={trust_seed.SAMPLE})")
