"""Team mode's people: who has which role, who signed in, and the audit trail of what they did.

Roles live in the ``people`` table, keyed by verified e-mail or by provider subject
(storage/services/sign_in.py). The first admins come from ``RUBRIC_WORKBENCH_ADMINS``
(comma-separated e-mails or ``subject:`` keys) so that a new team can never be locked out:
those people are admins whatever the table says, and the Settings page cannot demote them.
A workbench with such admins, or with anyone holding a role, is a team's: it never opens in
local mode (:func:`local_mode_actor`).
"""

from __future__ import annotations

import os
from datetime import timedelta

from sqlalchemy.orm import Session

from storage import models as m
from storage.dto import AuditEvent, PersonInfo
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.repositories import people as repo
from storage.services.reviewers import Actor, PermissionDeniedError, Role, local_actor, require

ADMINS_VARIABLE = "RUBRIC_WORKBENCH_ADMINS"
# A signed-in page reruns on every click: remember "last seen" at most this often.
SEEN_EVERY = timedelta(minutes=10)
# The key of a person signed in without a verified e-mail (storage/services/sign_in.py).
SUBJECT_PREFIX = "subject:"


class LocalModeRefusedError(PermissionDeniedError):
    """Local mode (everyone holds every role) asked for on a team's workbench."""


def person_key(identity: str) -> str:
    """The stable key of a person: the e-mail, lower-cased (e-mails are case-insensitive), or
    their provider's subject as it is (a subject is case-sensitive)."""
    # An address copied from a message carries the app's invisible word joiners (ui.safe_text).
    key = identity.replace("\u2060", "").strip()
    return key.lower() if "@" in key and not key.startswith(SUBJECT_PREFIX) else key


def environment_admins() -> frozenset[str]:
    """The admins named in ``RUBRIC_WORKBENCH_ADMINS`` (read at call time)."""
    raw = os.environ.get(ADMINS_VARIABLE, "")
    return frozenset(person_key(part) for part in raw.replace(";", ",").split(",") if part.strip())


def roles_of(key: str, row: m.PersonRow | None) -> frozenset[Role]:
    if key in environment_admins():
        return frozenset({Role.ADMIN})
    return frozenset({Role(row.role)}) if row is not None and row.role else frozenset()


def team_reason(sessions: SessionFactory) -> str:
    """Why this workbench belongs to a team, so that it must never open without sign-in
    (everyone would hold every role), or "" when it does not."""
    if environment_admins():
        return f"{ADMINS_VARIABLE} names the team's admins"
    with sessions() as session:
        count = repo.count_with_role(session)
    if count:
        return (f"{count} {'person has a role' if count == 1 else 'people have roles'} in "
                "this workbench's database")
    return ""


def local_mode_actor(sessions: SessionFactory, name: str) -> Actor:
    """The one person of local mode (every role), unless this workbench belongs to a team."""
    reason = team_reason(sessions)
    if reason:
        raise LocalModeRefusedError(
            f"this workbench is a team's ({reason}) and sign-in is not configured; it stays "
            "closed until sign-in ([auth] in .streamlit/secrets.toml) can be read")
    return local_actor(name)


def _info(row: m.PersonRow | None, key: str, admins: frozenset[str]) -> PersonInfo:
    from_env = key in admins
    if row is None:
        return PersonInfo(key=key, name="", role=Role.ADMIN.value, role_set_by=ADMINS_VARIABLE,
                          role_set_at=None, last_seen_at=None, from_environment=True)
    return PersonInfo(
        key=row.key, name=row.name, role=Role.ADMIN.value if from_env else row.role,
        role_set_by=ADMINS_VARIABLE if from_env else row.role_set_by,
        role_set_at=None if from_env else row.role_set_at, last_seen_at=row.last_seen_at,
        from_environment=from_env,
    )


def list_people(sessions: SessionFactory) -> list[PersonInfo]:
    """Everyone known: the environment's admins, everyone with a role, everyone who signed in."""
    admins = environment_admins()
    with sessions() as session:
        rows = {row.key: row for row in repo.list_people(session)}
    return [_info(rows.get(key), key, admins) for key in sorted(set(rows) | admins)]


def admin_contacts(sessions: SessionFactory) -> list[str]:
    """Whom a person without a role should ask: every admin's key."""
    with sessions() as session:
        stored = repo.keys_with_role(session, Role.ADMIN.value)
    return sorted(set(stored) | environment_admins())


def set_role(
    sessions: SessionFactory, identity: str, role: Role | str | None, *, actor: Actor,
    name: str = "",
) -> PersonInfo:
    """Give ``identity`` (an e-mail) a role, or take it away with ``None``. Admins only."""
    require(actor, Role.ADMIN, "change people's roles")
    key = person_key(identity)
    if not key or any(c.isspace() for c in key):
        raise InvalidInputError(
            f"{identity.strip()!r} is not an e-mail address; give the address the person "
            "signs in with, e.g. ana@example.org (or the subject: key shown to someone whose "
            "provider does not verify e-mail addresses)")
    try:
        new = None if role in (None, "") else Role(role).value
    except ValueError:
        raise InvalidInputError(
            f"unknown role {role!r}; use one of {', '.join(r.value for r in Role)}") from None
    if key in environment_admins() and new != Role.ADMIN.value:
        raise InvalidInputError(
            f"{key} is an admin through {ADMINS_VARIABLE}; remove them from that variable "
            "(and restart the app) to change their role")
    if key == actor.key and new != Role.ADMIN.value:
        raise InvalidInputError(
            "you cannot take away your own admin role; ask another admin to do it")
    with sessions.begin() as session:
        row = repo.find_person(session, key)
        if row is None:
            row = m.PersonRow(key=key, name=" ".join(name.split())[:200], created_at=m.utcnow())
            session.add(row)
        old = row.role
        if old != new:
            row.role, row.role_set_by, row.role_set_at = new, actor.key, m.utcnow()
            record(session, actor, "change role", "person", None, key,
                   f"{old or 'no role'} → {new or 'no role'}")
        session.flush()
        return _info(row, key, environment_admins())


def record(
    session: Session, actor: Actor, action: str, target_kind: str, target_id: int | None,
    target_name: str = "", detail: str = "",
) -> None:
    """Append one audit event inside the caller's transaction (services call this)."""
    repo.add_event(session, actor=actor.key, action=action, target_kind=target_kind,
                   target_id=target_id, target_name=target_name, detail=detail)


def list_audit_events(
    sessions: SessionFactory, *, limit: int = 200, target_kind: str | None = None,
    target_id: int | None = None,
) -> list[AuditEvent]:
    """The most recent audit events first."""
    with sessions() as session:
        return [
            AuditEvent(id=e.id, actor=e.actor, action=e.action, target_kind=e.target_kind,
                       target_id=e.target_id, target_name=e.target_name, detail=e.detail,
                       created_at=e.created_at)
            for e in repo.list_events(session, limit=limit, target_kind=target_kind,
                                      target_id=target_id)
        ]
