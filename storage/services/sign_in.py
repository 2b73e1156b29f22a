"""Who a signed-in person is: the claims an OpenID Connect provider sent, turned into a person.

An e-mail is an identity only when the provider says it verified it (``email_verified``):
many providers let anyone type any address (Keycloak self-registration, Entra's ``email``
claim), and a typed admin address must not sign someone in as that admin. Without a verified
e-mail the person is their provider's stable subject, ``iss`` + ``sub``, which nobody can
choose: a key an admin can give a role to, and that matches no e-mail.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError

from storage import models as m
from storage.engine import SessionFactory
from storage.errors import InvalidInputError
from storage.repositories import people as repo
from storage.services.people import SEEN_EVERY, SUBJECT_PREFIX, person_key, roles_of
from storage.services.reviewers import Actor

_MAX_KEY = 320  # people.key's column width


@dataclass(frozen=True)
class SignInClaims:
    """What the provider's ID token says about the person (st.user)."""

    issuer: str = ""
    subject: str = ""
    email: str = ""
    email_verified: object = None  # as sent: True, "true" (some providers), missing, ...
    name: str = ""


@dataclass(frozen=True)
class SignedIn:
    """The person acting, and the e-mail the provider sent without verifying ("" if none)."""

    actor: Actor
    unverified_email: str = ""


def is_verified(value: object) -> bool:
    """Only an explicit yes: a missing claim is not a verification."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def subject_key(issuer: str, subject: str) -> str:
    """The person's key without a verified e-mail: who their provider says they are."""
    key = f"{SUBJECT_PREFIX}{issuer.strip()}#{subject.strip()}"
    if len(key) <= _MAX_KEY:
        return key
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return f"{SUBJECT_PREFIX}sha256:{digest}"


def _key(claims: SignInClaims) -> str:
    email = person_key(claims.email or "")
    if email and is_verified(claims.email_verified):
        return email
    if not claims.subject.strip():
        raise InvalidInputError(
            "the sign-in provider sent neither a verified e-mail nor a subject for this "
            "person; add the email scope to the client (openid email profile)")
    return subject_key(claims.issuer, claims.subject)


def sign_in(sessions: SessionFactory, claims: SignInClaims) -> SignedIn:
    """The signed-in person with their roles; remembers that they signed in (so an admin can
    find them in Settings). An unverified e-mail matches nobody: the person is their subject."""
    key = _key(claims)
    email = (claims.email or "").strip()
    unverified = email if email and not is_verified(claims.email_verified) else ""
    name = " ".join((claims.name or "").split())[:200]
    now = m.utcnow()
    try:
        with sessions.begin() as session:
            row = repo.find_person(session, key)
            if row is None:
                row = m.PersonRow(key=key, name=name, last_seen_at=now, created_at=now)
                session.add(row)
            elif row.last_seen_at is None or now - row.last_seen_at > SEEN_EVERY or (
                    name and row.name != name):
                row.last_seen_at = now
                row.name = name or row.name
            roles = roles_of(key, row)
    except IntegrityError:  # the same person's other tab inserted the row first
        with sessions() as session:
            roles = roles_of(key, repo.find_person(session, key))
    actor = Actor(key=key, name=name or key, roles=roles, signed_in=True)
    return SignedIn(actor=actor, unverified_email=unverified)
