"""Who is acting, for pages: the one place that answers it, and the gate app.py runs first.

Local mode (no ``[auth]`` in .streamlit/secrets.toml): one person on their own machine, with
every role. Their name is asked once in the sidebar and remembered in the data directory;
until they give one, changes are recorded under the computer's login name.

Team mode (``[auth]`` configured): nothing renders until the person has signed in with
OpenID Connect (``st.login``); the identity is the e-mail the provider verified, else the
provider's subject (storage/services/sign_in.py), never typed, and the roles come from the
database (storage/services/people.py). Services refuse what a role may not do.

Fails closed: secrets Streamlit cannot read, and a team's workbench (roles in the database or
RUBRIC_WORKBENCH_ADMINS) without readable sign-in, are a page saying what to fix, never local
mode.
"""

from __future__ import annotations

import getpass
import time
from datetime import UTC, datetime

import streamlit as st

from storage.errors import InvalidInputError
from storage.local_identity import remember_name, remembered_name
from storage.services import people
from storage.services.reviewers import Actor, local_actor
from storage.services.sign_in import SignedIn, SignInClaims, sign_in
from ui.auth_config import (
    auth_config,
)
from ui.auth_pages import (
    render_bad_configuration,
    render_expired,
    render_no_role,
    render_sign_in,
    render_signed_in,
    render_team_without_sign_in,
    render_unverified_email,
)
from ui.boundary import page_boundary, plain
from ui.runtime import get_sessions

# How long a page reuses the roles it read (an admin's change applies within this time).
_ACTOR_TTL_S = 5.0
# How long a tab keeps saying that another tab changed the local name (a page that reruns
# right after an action would otherwise wipe the notice before anyone saw it).
NAME_NOTICE_S = 60.0


def computer_login() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in this environment (e.g. a container without passwd)
        return "local user"


def _logged_in() -> bool:
    return bool(st.user.get("is_logged_in"))


def _claims() -> SignInClaims:
    """What the provider said about the person; storage/services/sign_in.py decides who that is."""
    user = st.user
    return SignInClaims(issuer=str(user.get("iss") or ""), subject=str(user.get("sub") or ""),
                        email=str(user.get("email") or ""),
                        email_verified=user.get("email_verified"),
                        name=str(user.get("name") or ""))


def expired_at() -> datetime | None:
    """When the signed-in identity's token expired, or None while it is valid."""
    exp = st.user.get("exp")
    if isinstance(exp, int | float) and exp < time.time():
        return datetime.fromtimestamp(exp, UTC)
    return None


def _local_actor() -> Actor | None:
    """Local mode's one person, or None when this workbench is a team's (it must not open)."""
    name = remembered_name() or computer_login()
    cached = st.session_state.get("auth_local")
    if cached and cached[0] == name and time.monotonic() - cached[1] < _ACTOR_TTL_S:
        return cached[2]
    try:
        actor = people.local_mode_actor(get_sessions(), name)
    except people.LocalModeRefusedError:
        actor = None
    st.session_state["auth_local"] = (name, time.monotonic(), actor)
    return actor


def current_sign_in() -> SignedIn | None:
    """The signed-in person of this browser session (team mode), or None."""
    claims = _claims()
    cached = st.session_state.get("auth_actor")
    if cached and cached[0] == claims and time.monotonic() - cached[1] < _ACTOR_TTL_S:
        return cached[2]
    signed = sign_in(get_sessions(), claims)
    st.session_state["auth_actor"] = (claims, time.monotonic(), signed)
    return signed


def current_actor() -> Actor | None:
    """The person acting in this browser session, or None when nobody may act."""
    config = auth_config()
    if config is None:
        return _local_actor()
    if config.problems or not _logged_in() or expired_at() is not None:
        return None
    signed = current_sign_in()
    return signed.actor if signed else None


# -- the gate (app.py, before navigation) -----------------------------------------------------
def gate() -> None:
    """Show the page this person may see: in team mode, stop here unless signed in with a role."""
    config = auth_config()
    if config is None:
        _follow_remembered_name()
        actor = None
        with page_boundary(lambda: None):  # e.g. the database is down: say so
            actor = _local_actor()
            if actor is None:
                render_team_without_sign_in()
        if actor is None:
            st.stop()
        render_local_identity()
        return
    if config.problems:
        render_bad_configuration(config.problems, unreadable=config.unreadable)
        st.stop()
    if not _logged_in():
        render_sign_in(config)
        st.stop()
    when = expired_at()
    if when is not None:
        render_expired(config, when)
        st.stop()
    signed = None
    with page_boundary(lambda: None):  # e.g. the database is down: say so, not a traceback
        signed = current_sign_in()
    if signed is None:
        st.stop()
    actor = signed.actor
    if not actor.roles:
        if signed.unverified_email:
            render_unverified_email(actor, signed.unverified_email)
        else:
            render_no_role(actor)
        st.stop()
    st.session_state.reviewer_name = actor.key
    render_signed_in(actor)


# -- local mode -------------------------------------------------------------------------------
def unnamed_key() -> str:
    """Who acts in local mode before a name is typed: the computer's login."""
    return local_actor(computer_login()).key


def _follow_remembered_name() -> None:
    """Act as the name remembered on this computer, and say so when another tab changed it.

    One person, one name: a change in one tab applies to every tab (a verdict saved from an
    older tab is recorded under the new name, as the person who just renamed themselves
    expects), but a tab that showed the old name says which name it now records.
    """
    s = st.session_state
    remembered = remembered_name()
    if s.auth_shown_name is not None and s.auth_shown_name != remembered:
        s.auth_name_notice = (remembered or computer_login(), time.monotonic())
        s.auth_name_box += 1  # the sidebar shows the new name in a new box (name_input_key)
    s.reviewer_name = remembered


def name_input_key() -> str:
    """The sidebar's name box: a new one each time this tab follows a rename made elsewhere.

    Until the browser has the run that shows the new name, what it sends (a click, a save
    sent again, the set panel's poll) still holds the old name in the old box. Streamlit took
    that for the person typing their old name back: renamed, written to the identity file,
    the form replaced and the click in it lost. :func:`handle_local_name` ignores old boxes.
    """
    box = st.session_state.auth_name_box
    return f"review_name_input_{box}" if box else "review_name_input"


def handle_local_name(key: str) -> None:
    s = st.session_state
    if key != name_input_key():
        return  # the box shown before a rename made elsewhere: its value is no edit
    try:
        s.reviewer_name = s.auth_shown_name = remember_name(s[key])
        s.auth_flash = s.auth_name_notice = None  # this tab's own change needs no notice
    except InvalidInputError as exc:
        s.auth_flash = str(exc)


def render_local_identity() -> None:
    s = st.session_state
    key = name_input_key()
    s[key] = s.reviewer_name
    with st.sidebar:
        st.text_input("Your name (reviewer)", key=key, max_chars=200,
                      on_change=handle_local_name, args=(key,), placeholder="e.g. Ana Souza",
                      help="Asked once and remembered on this computer. Recorded with every "
                           "verdict, import, deletion and run you make.")
        if s.auth_name_notice is not None:
            name, since = s.auth_name_notice
            if time.monotonic() - since < NAME_NOTICE_S:
                st.info(plain(f"Your name was changed in another tab or window: what you do "
                              f"here is now recorded as '{name}'."), icon=":material/badge:")
            else:
                s.auth_name_notice = None
        s.auth_shown_name = s.reviewer_name
        if s.auth_flash:
            st.error(plain(s.auth_flash))
        elif s.reviewer_name:
            st.caption("Remembered on this computer; change it here at any time.")
        else:
            st.caption(plain(f"Type your name once: it is remembered on this computer. Until "
                             f"then your changes are recorded as '{computer_login()}'."))
