"""A panel's stored decisions read back as ``PanelGrade``s (storage.services.panel_upkeep
keeps them), as plain columns through the tables' primary keys."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import exists, or_, select
from sqlalchemy.orm import Session

from grading.panels import PanelDecision
from grading.types import Verdict
from storage import models as m
from storage.dto import CriterionInfo
from storage.id_chunks import id_chunks
from storage.services.panel_decide import PanelCriterion, PanelGrade
from storage.services.panel_upkeep import GRADES, VERDICTS, decode_vote
from storage.services.results_types import PanelColumn


def stored_grades(session: Session, panel_id: int, criteria: Sequence[CriterionInfo],
                  response_ids: Sequence[int] | None = None) -> list[PanelGrade]:
    """The panel's stored grade of every response some member graded (or of those of
    ``response_ids``), in response order."""
    if response_ids is None:
        return _read(session, panel_id, criteria, None)
    ids = sorted(set(response_ids))
    found: list[PanelGrade] = []
    for chunk in id_chunks(ids):
        found.extend(_read(session, panel_id, criteria, chunk))
    return found


Scores = dict[int, tuple[float | None, str | None]]


def stored_choices(session: Session, panel_id: int
                   ) -> tuple[Scores, dict[tuple[int, int], str]]:
    """The panel's stored score and error per response, and its choice per (response,
    criterion) where it has one (the option label, else the verdict), as plain columns."""
    g, v = GRADES.c, VERDICTS.c
    scores = {rid: (score, error) for rid, score, error in session.execute(
        select(g.response_id, g.score, g.error).where(g.panel_id == panel_id))}
    choices = {(rid, cid): option if option is not None else verdict
               for rid, cid, verdict, option in session.execute(
                   select(v.response_id, v.criterion_id, v.verdict, v.option)
                   .where(v.panel_id == panel_id,
                          v.verdict.is_not(None) | v.option.is_not(None)))}
    return scores, choices


def whole_column(session: Session, column: PanelColumn) -> PanelColumn:
    """A ``partial`` column (``panel_results.page_columns``) with every response's figures:
    the stored ones, and the column's own where it has them."""
    if not column.partial:
        return column
    scores, verdicts = stored_choices(session, column.panel_id)
    scores.update(column.scores)
    verdicts = {key: choice for key, choice in verdicts.items()
                if key[0] not in column.redone}
    verdicts.update(column.verdicts)
    return PanelColumn(panel_id=column.panel_id, scores=scores, verdicts=verdicts)


def graded_among(session: Session, panel_id: int, response_ids: Sequence[int]) -> list[int]:
    """Those of these responses the panel has a stored grade of (some member graded)."""
    return _ids(session, select(GRADES.c.response_id).where(GRADES.c.panel_id == panel_id),
                response_ids)


def stored_scores(session: Session, panel_id: int, response_ids: Sequence[int]) -> Scores:
    """The panel's stored (score, error) of these responses (those it has one of)."""
    g = GRADES.c
    ids = sorted(set(response_ids))
    found: Scores = {}
    for chunk in id_chunks(ids):
        found.update({rid: (score, error) for rid, score, error in session.execute(
            select(g.response_id, g.score, g.error)
            .where(g.panel_id == panel_id, g.response_id.in_(chunk)))})
    return found


def other_tie_rule(session: Session, panel_id: int, tie_rule: str,
                   response_ids: Sequence[int] | None = None) -> list[int]:
    """The panel's responses whose stored decisions followed another tie rule than
    ``tie_rule`` (the panel's own; none unless its settings were changed in place)."""
    g = GRADES.c
    query = select(g.response_id).where(g.panel_id == panel_id, g.tie_rule != tie_rule)
    return _ids(session, query, response_ids)


def waiting_for(session: Session, panel_id: int, active_runs: Sequence[int],
                response_ids: Sequence[int] | None = None) -> list[int]:
    """The panel's graded responses that one of ``active_runs`` (members still grading)
    has not graded yet: their decisions depend on what it will answer."""
    return _ids(session, waiting_query(panel_id, active_runs), response_ids)


def _ids(session: Session, query, response_ids: Sequence[int] | None) -> list[int]:
    g = GRADES.c
    if response_ids is None:
        return list(session.scalars(query.order_by(g.response_id)))
    ids = sorted(set(response_ids))
    found: list[int] = []
    for chunk in id_chunks(ids):
        found.extend(session.scalars(
            query.where(g.response_id.in_(chunk))
            .order_by(g.response_id)))
    return found


def grades_query(panel_id: int):
    g = GRADES.c
    return select(g.response_id, g.score, g.raw_score, g.error, g.cost,
                  g.members_graded).where(g.panel_id == panel_id)


def verdicts_query(panel_id: int):
    v = VERDICTS.c
    return select(v.response_id, v.criterion_id, v.verdict, v.option, v.met, v.unmet,
                  v.abstained, v.failed, v.tie, v.note, v.votes).where(v.panel_id == panel_id)


def waiting_query(panel_id: int, active_runs: Sequence[int]):
    g = GRADES.c
    missing = or_(*[~exists().where(m.GradeRow.run_id == run_id,
                                     m.GradeRow.response_id == g.response_id)
                    for run_id in active_runs])
    return select(g.response_id).where(g.panel_id == panel_id, missing)


def _read(session: Session, panel_id: int, criteria: Sequence[CriterionInfo],
          ids: list[int] | None) -> list[PanelGrade]:
    g, v = GRADES.c, VERDICTS.c
    grades_query_ = grades_query(panel_id)
    verdicts_query_ = verdicts_query(panel_id)
    if ids is not None:
        grades_query_ = grades_query_.where(g.response_id.in_(ids))
        verdicts_query_ = verdicts_query_.where(v.response_id.in_(ids))
    decisions: dict[int, dict[int, tuple[PanelDecision, tuple]]] = {}
    for (rid, cid, verdict, option, met, unmet, abstained, failed, tie, note,
         votes) in session.execute(verdicts_query_):
        decisions.setdefault(rid, {})[cid] = (
            PanelDecision(None if verdict is None else Verdict(verdict), met, unmet,
                          abstained, failed, tie, note, option),
            tuple(decode_vote(vote) for vote in votes))
    found = []
    for rid, score, raw, error, cost, graded in session.execute(
            grades_query_.order_by(g.response_id)):
        per = decisions.get(rid, {})
        found.append(PanelGrade(
            panel_id=panel_id, response_id=rid, score=score, raw_score=raw, error=error,
            criteria=tuple(PanelCriterion(criterion_id=c.id, label=c.label,
                                          decision=per[c.id][0], member_verdicts=per[c.id][1])
                           for c in criteria),
            cost=cost, members_graded=graded))
    return found
