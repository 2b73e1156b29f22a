"""AppTest of the Agreement page's "Pairwise order (comparisons)" table in the trust
section: one row per judge (model) that compared responses of this dataset on this rubric
version, with its pull towards the response shown first and its position consistency."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from storage import models as m
from storage.services import comparisons, datasets
from storage.services.comparisons import Source
from tests.actors import ADMIN
from tests.storage import trust_seed
from tests.ui.pages import unescape
from tests.ui.test_agreement_trust import _open, _table


def _judged(sessions, version_id: int, dataset_id: int, model: str, answer) -> int:
    """A comparison of the trust dataset with a rewrite of it, judged as the comparison
    runner stores it: per pair and criterion, ``answer(n)`` = (first, second) as given."""
    with sessions() as session:
        ids = list(session.scalars(select(m.ResponseRow.external_id)
                                   .where(m.ResponseRow.dataset_id == dataset_id)))
    other = datasets.create_dataset(sessions, f"Rewrite for {model}", actor=ADMIN, responses=[
        {"id": rid, "text": f"rewritten {rid}"} for rid in ids]).id
    made = comparisons.create_comparison(sessions, rubric_version_id=version_id,
                                         a=Source(dataset_id), b=Source(other), model=model,
                                         actor=ADMIN)
    with sessions.begin() as session:
        pairs = list(session.scalars(select(m.ComparisonPairRow.id).where(
            m.ComparisonPairRow.comparison_id == made.id, m.ComparisonPairRow.kind == "pair")))
        criteria = list(session.scalars(select(m.CriterionRow.id).where(
            m.CriterionRow.version_id == version_id).order_by(m.CriterionRow.position)))
        for n, pid in enumerate(pairs):
            session.execute(update(m.ComparisonPairRow).where(m.ComparisonPairRow.id == pid)
                            .values(state="done"))
            for position, cid in enumerate(criteria):
                first, second = answer(n)
                same = first == {"A": "B", "B": "A"}.get(second, second)
                session.add(m.ComparisonPreferenceRow(
                    pair_id=pid, criterion_id=cid, position=position, first=first,
                    second=second, preference=first if same else "TIE", consistent=same))
    return made.id


def test_the_trust_section_lists_each_comparisons_judge_with_its_order_effect(sessions):
    world = trust_seed.seed(sessions)
    biased = _judged(sessions, world.version_id, world.dataset_id, "openai/first",
                     lambda n: ("A", "A"))
    fair = _judged(sessions, world.version_id, world.dataset_id, "openai/reader",
                   lambda n: ("B", "A") if n % 2 else ("A", "B"))
    at = _open()
    assert not at.exception, at.exception
    table = _table(at, "First shown preferred, minus chance")
    assert list(table["Judge (model)"]) == ["openai/first", "openai/reader"]
    assert list(table["Comparisons"]) == [f"#{biased}", f"#{fair}"]
    first, reader = table["First shown preferred, minus chance"]
    assert first.startswith("+0.50 [+0.") and first.endswith(")")  # never a point
    assert first != "+0.50 [+0.50, +0.50]" and "(n=" in first
    assert reader.startswith("+0.00 [-0.") and "(n=" in reader
    assert table["Same answer in both orders"][0].startswith("0.00 [0.00, 0.")
    assert table["Same answer in both orders"][1].startswith("1.00 [0.")
    captions = "\n".join(unescape(str(c.value)) for c in at.caption)
    assert "Each pair is asked in both orders" in captions


@pytest.mark.parametrize("pairs", [3])
def test_a_few_compared_pairs_cannot_tell_yet(sessions, pairs):
    world = trust_seed.seed(sessions)
    with sessions() as session:
        keep = list(session.scalars(select(m.ResponseRow.external_id).where(
            m.ResponseRow.dataset_id == world.dataset_id).limit(pairs)))
    other = datasets.create_dataset(sessions, "Few", actor=ADMIN, responses=[
        {"id": rid, "text": f"rewritten {rid}"} for rid in keep]).id
    made = comparisons.create_comparison(sessions, rubric_version_id=world.version_id,
                                         a=Source(world.dataset_id), b=Source(other),
                                         model="openai/few", actor=ADMIN)
    with sessions.begin() as session:
        pair_ids = list(session.scalars(select(m.ComparisonPairRow.id).where(
            m.ComparisonPairRow.comparison_id == made.id, m.ComparisonPairRow.kind == "pair")))
        for pid in pair_ids:
            session.add(m.ComparisonPreferenceRow(pair_id=pid, criterion_id=None, position=0,
                                                  first="A", second="A", preference="TIE",
                                                  consistent=False))
    at = _open()
    assert not at.exception, at.exception
    table = _table(at, "First shown preferred, minus chance")
    assert table["First shown preferred, minus chance"][0] == (
        f"can't tell yet (n={len(pair_ids)}; need about 10)")
