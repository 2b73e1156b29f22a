"""What a team's workbench shows instead of a page until someone may see it (ui.auth.gate):
settings to fix, sign-in, an expired sign-in, an e-mail the provider did not verify, no role
yet; and, once signed in, who they are and how to sign out."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlparse

import streamlit as st

from storage.services import people
from storage.services.reviewers import Actor
from ui.auth_config import AuthConfig, Provider, local_mode_findings, provider_problem
from ui.boundary import plain
from ui.runtime import get_sessions

AUTH_EXAMPLE = ('[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\n'
                'cookie_secret = "a long random string"\nclient_id = "rubric-workbench"\n'
                'client_secret = "from your provider"\nserver_metadata_url = '
                '"https://idp.example.org/.well-known/openid-configuration"')


# -- the pages --------------------------------------------------------------------------
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
