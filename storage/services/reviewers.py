"""Who is acting: the identity behind every write, its roles, and the one permission check.

Every service that changes something a team shares takes an ``actor`` and calls
:func:`require` before it writes. Pages never decide permissions on their own: hiding a button
is a convenience, the refusal happens here.

Local mode (no sign-in configured) gives the one person on the machine every role. Team mode
(OpenID Connect sign-in) gives the signed-in identity the roles stored in the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from storage.errors import StorageError


class Role(StrEnum):
    ADMIN = "admin"  # rubrics, datasets, runs, settings, delete, roles (and everything below)
    ADJUDICATOR = "adjudicator"  # a reviewer who also resolves disputes
    REVIEWER = "reviewer"  # review responses, read results


# What each role may also do: an admin may do everything, an adjudicator may review.
_IMPLIES: dict[Role, frozenset[Role]] = {
    Role.ADMIN: frozenset(Role),
    Role.ADJUDICATOR: frozenset({Role.ADJUDICATOR, Role.REVIEWER}),
    Role.REVIEWER: frozenset({Role.REVIEWER}),
}


class PermissionDeniedError(StorageError, PermissionError):
    """The acting person lacks the role an action needs; the message says which."""


class IdentityChangedError(StorageError):
    """The page showed one identity and another one acts now (renamed in another tab)."""


@dataclass(frozen=True)
class Actor:
    """The person (or process) acting.

    ``key`` is the stable identity recorded with every write (the e-mail or subject of a
    signed-in person, the remembered name in local mode); ``name`` is what the UI shows.
    """

    key: str
    name: str
    roles: frozenset[Role] = field(default_factory=frozenset)
    signed_in: bool = False

    def can(self, role: Role) -> bool:
        return any(role in _IMPLIES[held] for held in self.roles)

    @property
    def label(self) -> str:
        return self.name or self.key


def local_actor(name: str) -> Actor:
    """The one person on their own machine (no sign-in configured): every role."""
    name = name.strip()
    return Actor(key=name, name=name, roles=frozenset(Role), signed_in=False)


def command_line_actor(name: str | None = None) -> Actor:
    """The command-line tools act for whoever runs them on the machine: every role."""
    import getpass

    who = (name or "").strip() or f"cli:{getpass.getuser()}"
    return Actor(key=who, name=who, roles=frozenset(Role), signed_in=False)


_ACTIONS: dict[Role, str] = {
    Role.ADMIN: "an admin",
    Role.ADJUDICATOR: "an adjudicator",
    Role.REVIEWER: "a reviewer",
}


def require(actor: Actor | None, role: Role, action: str) -> Actor:
    """Refuse ``action`` (e.g. "delete a dataset") unless ``actor`` holds ``role``."""
    if actor is None or not actor.key:
        raise PermissionDeniedError(f"sign in (or set your reviewer name) to {action}")
    if not actor.can(role):
        held = ", ".join(sorted(r.value for r in actor.roles)) or "no role yet"
        raise PermissionDeniedError(
            f"{actor.label} may not {action}: that needs {_ACTIONS[role]} (you have: {held}). "
            "Ask an admin to change your role in Settings."
        )
    return actor


def require_shown(actor: Actor, shown_as: str | None) -> None:
    """Refuse a save asked for under ``shown_as`` (the identity the person's page showed) when
    that is no longer who acts: it is never recorded under the other name. None: unchecked
    (the command line, imports)."""
    if shown_as is None or shown_as == actor.key:
        return
    raise IdentityChangedError(
        f"Not saved: this page showed you as '{shown_as}', but you now act as "
        f"'{actor.label}' (the name was changed in another tab or window). Nothing was "
        f"recorded under either name. The page now shows '{actor.label}': if that is not "
        "you, change the name in the sidebar; then give your verdicts again and save.")
