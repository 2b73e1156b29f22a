"""A panel on the Agreement report (SQLite and PostgreSQL): compared with people like a run,
its cost the members' added up, and left out of alpha across sources (it would count its
members twice)."""

from __future__ import annotations

import pytest

from grading.agreement import compare_verdicts
from grading.types import Verdict
from storage.services import agreement, panels
from storage.services.agreement import HUMAN
from tests.actors import ADMIN
from tests.storage.agreement_seed import CHEAP, STRONG, seed
from tests.storage.agreement_seed import HUMAN as PEOPLE


def test_a_panel_is_a_source_compared_with_people_next_to_its_members(sessions):
    seeded = seed(sessions)
    before = agreement.agreement_report(sessions, seeded.version.id, seeded.dataset.id)
    stamp = agreement.data_stamp(sessions, seeded.version.id, seeded.dataset.id)
    panel = panels.create_panel(sessions, run_ids=[seeded.cheap.id, seeded.strong.id],
                                rule="majority", actor=ADMIN, name="pair")
    assert agreement.data_stamp(sessions, seeded.version.id, seeded.dataset.id) != stamp
    report = agreement.agreement_report(sessions, seeded.version.id, seeded.dataset.id)
    key = f"panel:{panel.id}"
    source = report.data.source(key)
    assert source.is_panel and not source.is_human and source.per_criterion
    assert source.member_run_ids == (seeded.cheap.id, seeded.strong.id)
    assert source.grades == 6 and source.unknown_cost_count == 0
    assert source.cost == pytest.approx(6 * (0.0004 + 0.0090))
    assert source.cost_per_grade == pytest.approx(0.0094)

    # the panel's verdict vs people, computed here from the seed's tables by hand
    people, judged = [], []
    for name, verdicts in PEOPLE.items():
        for index, human in enumerate(verdicts):
            if human is None:
                continue
            a, b = CHEAP[name][index], STRONG[name][index]
            if a == b:
                vote = a
            else:  # a tie is undecided; one abstaining leaves no majority
                vote = Verdict.CANNOT_ASSESS
            people.append(human)
            judged.append(vote)
    expected = compare_verdicts(people, judged)
    summary = next(j for j in report.judges if j.source.key == key)
    assert summary.verdicts_vs_human.pairs_used == expected.pairs_used
    assert summary.verdicts_vs_human.cohens_kappa == pytest.approx(expected.cohens_kappa)
    assert report.pair(HUMAN, key) is not None
    assert report.data.human_scores[key]  # fully reviewed responses have a human score
    # alpha across sources is the runs' and people's only
    assert report.alpha.overall.alpha == pytest.approx(before.alpha.overall.alpha)
    assert report.alpha.overall.pairable_units == before.alpha.overall.pairable_units
