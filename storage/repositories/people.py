"""People, their roles, and the append-only audit trail. Never commits."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage import models as m


def find_person(session: Session, key: str) -> m.PersonRow | None:
    return session.scalar(select(m.PersonRow).where(m.PersonRow.key == key))


def list_people(session: Session) -> Sequence[m.PersonRow]:
    return session.scalars(select(m.PersonRow).order_by(m.PersonRow.key)).all()


def keys_with_role(session: Session, role: str) -> list[str]:
    return list(session.scalars(
        select(m.PersonRow.key).where(m.PersonRow.role == role).order_by(m.PersonRow.key)))


def count_with_role(session: Session) -> int:
    return session.scalar(
        select(func.count()).select_from(m.PersonRow).where(m.PersonRow.role.is_not(None))) or 0


def add_event(
    session: Session, *, actor: str, action: str, target_kind: str, target_id: int | None,
    target_name: str = "", detail: str = "",
) -> None:
    session.add(m.AuditEventRow(
        actor=actor, action=action, target_kind=target_kind, target_id=target_id,
        target_name=target_name[:400], detail=detail, created_at=m.utcnow()))


def list_events(
    session: Session, *, limit: int, target_kind: str | None = None,
    target_id: int | None = None,
) -> Sequence[m.AuditEventRow]:
    query = select(m.AuditEventRow)
    if target_kind is not None:
        query = query.where(m.AuditEventRow.target_kind == target_kind)
    if target_id is not None:
        query = query.where(m.AuditEventRow.target_id == target_id)
    return session.scalars(
        query.order_by(m.AuditEventRow.created_at.desc(), m.AuditEventRow.id.desc()).limit(limit)
    ).all()
