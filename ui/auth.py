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
from urllib.parse import urlparse

import streamlit as st

from storage.errors import InvalidInputError
from storage.local_identity import remember_name, remembered_name
from storage.services import people
from storage.services.reviewers import Actor, local_actor
from storage.services.sign_in import SignedIn, SignInClaims, sign_in
from ui.auth_config import (
    AuthConfig,
    Provider,
    auth_config,
    local_mode_findings,
    provider_problem,
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


AUTH_EXAMPLE = ('[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\n'
                'cookie_secret = "a long random string"\nclient_id = "rubric-workbench"\n'
                'client_secret = "from your provider"\nserver_metadata_url = '
                '"https://idp.example.org/.well-known/openid-configuration"')


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


# -- team mode pages --------------------------------------------------------------------------
def _title(subtitle: str) -> None:
    st.title("Rubric Workbench")
    st.caption(subtitle)


def render_bad_configuration(problems: list[str] | tuple[str, ...], *,
                             unreadable: bool = False) -> None:
    """``unreadable``: the secrets file itself cannot be read, so whether sign-in is on is
    unknown; the app stays closed rather than open to everyone."""
    if unreadable:
        _title("The settings file cannot be read")
        st.error("The secrets that hold sign-in (`.streamlit/secrets.toml`, or the files "
                 "named in secrets.files) cannot be read as Streamlit reads them, so the app "
                 "cannot tell whether sign-in is on: it stays closed until the file is fixed. "
                 "Fix this and restart the app:",
                 icon=":material/settings_alert:")
    else:
        _title("Sign-in is configured but cannot work yet")
        st.error("Sign-in is switched on (there is an `[auth]` section in "
                 "`.streamlit/secrets.toml`) but it is incomplete. Fix these and restart the "
                 "app:", icon=":material/settings_alert:")
    st.markdown("\n".join(f"- {plain(p)}" for p in problems))
    st.markdown("A working `[auth]` section, for any OpenID Connect provider:")
    st.code(AUTH_EXAMPLE, language="toml")
    st.caption("To use the app without sign-in (one person on their own computer), remove the "
               "`[auth]` section. The README's “Team mode” section has notes for Google, "
               "Microsoft Entra and Okta.")


def render_team_without_sign_in() -> None:
    """A team's workbench (roles in its database, or admins named) with no readable sign-in:
    closed, never local mode's everyone-holds-every-role."""
    try:
        reason = people.team_reason(get_sessions())
    except Exception:  # already decided closed; the page must still say what to fix
        reason = ""
    _title("Sign-in is not configured, so this team's workbench stays closed")
    st.error(plain(
        f"This workbench belongs to a team ({reason or 'it has people with roles'}), but no "
        "sign-in configuration was found: without it everyone who opens the app would hold "
        "every role, so it stays closed. Fix the sign-in configuration and restart the app."),
        icon=":material/settings_alert:")
    findings = local_mode_findings()
    if findings:
        st.markdown("What the app found:\n" + "\n".join(f"- {plain(f)}" for f in findings))
    st.markdown("Sign-in is an `[auth]` section (lower case) in `.streamlit/secrets.toml`, "
                "for any OpenID Connect provider:")
    st.code(AUTH_EXAMPLE, language="toml")
    st.caption("To work alone without sign-in, start the app on another database "
               "(RUBRIC_WORKBENCH_DATA_DIR or RUBRIC_WORKBENCH_DATABASE_URL) and without "
               "RUBRIC_WORKBENCH_ADMINS.")


def _wrong_origin(config: AuthConfig) -> str | None:
    """The address to open instead, when the browser is not on redirect_uri's origin (the
    sign-in cookie would be lost and the person asked to sign in twice)."""
    try:
        here = urlparse(st.context.url or "")
    except Exception:
        return None
    there = urlparse(config.redirect_uri)
    if here.netloc and there.netloc and here.netloc != there.netloc:
        return f"{there.scheme}://{there.netloc}/"
    return None


def render_provider_down(problems: list[str]) -> None:
    _title("Sign in")
    st.error("The sign-in provider cannot be reached, so nobody can sign in right now.",
             icon=":material/cloud_off:")
    st.markdown("\n".join(f"- {plain(p)}" for p in problems))
    st.caption("Check that the provider is running and that `server_metadata_url` in "
               "`.streamlit/secrets.toml` is its discovery URL (it ends in "
               "/.well-known/openid-configuration), then try again.")
    if st.button("Try again", icon=":material/refresh:"):
        provider_problem.clear()
        st.rerun()


def render_sign_in(config: AuthConfig) -> None:
    problems = {p: provider_problem(p.server_metadata_url) for p in config.providers}
    usable = [p for p in config.providers if problems[p] is None]
    if not usable:
        render_provider_down([problem for problem in problems.values() if problem])
        return
    _title("Sign in to review, grade and manage rubrics")
    st.info("This workbench is shared by a team: sign in with your organisation's account. "
            "Everything you change is recorded under your name.", icon=":material/lock:")
    better = _wrong_origin(config)
    if better:
        # Signing in from here cannot work: the provider returns to redirect_uri's address,
        # where this address's sign-in cookie is not sent, and the person would sign in twice.
        st.warning(plain(f"Sign-in works only at {better} (the address sign-in returns to, "
                         "set as redirect_uri in .streamlit/secrets.toml). Open the app "
                         "there and sign in."), icon=":material/link:")
        st.link_button(f"Open {better}", better, type="primary", icon=":material/open_in_new:")
        return
    for provider in usable:
        if st.button(f"Sign in with {provider.label}", type="primary",
                     icon=":material/login:", key=f"auth_sign_in_{provider.name or 'default'}"):
            st.login(provider.name)
    for provider, problem in problems.items():
        if problem:
            st.caption(plain(f"{provider.label} is unavailable: {problem}."))


def _provider_of_user(config: AuthConfig) -> Provider:
    named = {p.name: p for p in config.providers}
    return named.get(st.user.get("provider")) or config.providers[0]


def render_expired(config: AuthConfig, when: datetime) -> None:
    _title("Your sign-in has expired")
    st.warning(f"Your sign-in expired at {when:%Y-%m-%d %H:%M} UTC. Sign in again to go on; "
               "nothing you saved is lost.", icon=":material/timer_off:")
    if st.button("Sign in again", type="primary", icon=":material/login:"):
        st.login(_provider_of_user(config).name)


def _admin_contacts() -> list[str]:
    try:
        return people.admin_contacts(get_sessions())
    except Exception:  # the page must still say what to do when the database is down
        return []


def _check_again_or_sign_out() -> None:
    row = st.container(horizontal=True)
    if row.button("Check again", icon=":material/refresh:"):
        st.session_state.auth_actor = None
        st.rerun()
    if row.button("Sign out", icon=":material/logout:"):
        st.logout()


def render_unverified_email(actor: Actor, email: str) -> None:
    _title("Your provider did not verify your e-mail address")
    st.warning(plain(
        f"You signed in with the address {email}, but your sign-in provider did not verify "
        "that it is yours (its email_verified is not true). An address anyone could type "
        "gives no role here, so you can see and change nothing."),
        icon=":material/gpp_maybe:")
    admins = _admin_contacts()
    st.markdown(plain(
        "What to do: verify the address with your sign-in provider (or ask whoever runs it "
        "to), then sign out and sign in again. Or ask an admin"
        + (f" ({', '.join(admins)})" if admins else "")
        + " to give a role, in Settings → People and roles, to the key your provider "
          "vouches for:"))
    st.code(actor.key, language=None)
    _check_again_or_sign_out()


def render_no_role(actor: Actor) -> None:
    _title("You are signed in, but you have no role yet")
    admins = _admin_contacts()
    st.warning(plain(f"You are signed in as {actor.key}, but nobody has given you a role in "
                     "this workbench yet, so there is nothing you can see or change."),
               icon=":material/person_off:")
    ask = ("Ask an admin to give you a role in Settings → People and roles"
           + (f": {', '.join(admins)}." if admins else "."))
    st.markdown(plain(ask))
    st.caption("Roles: reviewer (review responses, read results), adjudicator (reviewer + "
               "resolve disputes), admin (rubrics, datasets, runs, settings, deletions, roles).")
    _check_again_or_sign_out()


def render_signed_in(actor: Actor) -> None:
    with st.sidebar:
        roles = ", ".join(sorted(r.value for r in actor.roles))
        st.markdown(plain(f"Signed in as {actor.label}"))
        st.caption(plain(f"{actor.key} · {roles}"))
        if st.button("Sign out", icon=":material/logout:", key="auth_sign_out"):
            st.session_state.auth_actor = None
            st.logout()
