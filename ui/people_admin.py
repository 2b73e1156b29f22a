"""Settings → People and roles: who may do what (team mode), and the audit trail of
run launches, imports, archives, deletions, run cancels and role changes (both modes)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.errors import StorageError
from storage.local_identity import identity_path
from storage.services import people
from storage.services.reviewers import Role
from ui.auth import current_actor
from ui.auth_config import auth_config
from ui.boundary import plain
from ui.runtime import database_key, get_sessions
from ui.safe_text import text

NO_ROLE = "(no role)"
AUDIT_LIMIT = 100
ROLE_CHOICES = [Role.REVIEWER.value, Role.ADJUDICATOR.value, Role.ADMIN.value, NO_ROLE]
ROLE_HELP = ("reviewer: review responses and read results · adjudicator: a reviewer who also "
             "resolves disputes · admin: rubrics, datasets, runs, settings, deletions and roles")


@st.cache_data(ttl=30, max_entries=8, show_spinner=False)
def get_people(db: str) -> list:
    return people.list_people(get_sessions())


@st.cache_data(ttl=30, max_entries=8, show_spinner=False)
def get_audit(db: str) -> list:
    return people.list_audit_events(get_sessions(), limit=AUDIT_LIMIT)


def handle_set_role(email: str, role: str) -> None:
    try:
        person = people.set_role(get_sessions(), email, None if role == NO_ROLE else role,
                                 actor=current_actor())
    except StorageError as exc:
        st.session_state.people_flash = ("error", f"Not changed: {exc}")
        return
    get_people.clear()
    get_audit.clear()
    st.session_state.people_flash = (
        "success", f"{person.key} is now {person.role or 'without a role'}.")


def _when(value) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value else ""


def render_people_table(db: str) -> None:
    known = get_people(db)
    if not known:
        st.info("Nobody has signed in yet.")
        return
    st.dataframe(pd.DataFrame([
        {"E-mail": text(p.key), "Name": text(p.name), "Role": p.role or NO_ROLE,
         "Role set by": text(p.role_set_by), "Last signed in": _when(p.last_seen_at)}
        for p in known]), hide_index=True, width="stretch")
    waiting = [p.key for p in known if not p.role]
    if waiting:
        st.caption(plain(f"Signed in without a role (they see an “ask an admin” page): "
                         f"{', '.join(waiting)}."))


def render_role_form() -> None:
    actor = current_actor()
    is_admin = actor is not None and actor.can(Role.ADMIN)
    if not is_admin:
        st.caption("Only admins change roles; ask one if yours should change.")
    with st.form("people_role_form", clear_on_submit=True):
        left, right = st.columns([3, 2])
        email = left.text_input("E-mail", placeholder="ana@example.org",
                                help="The address the person signs in with. They may be "
                                     "given a role before they first sign in. Someone whose "
                                     "provider does not verify their address is known by "
                                     "the subject: key their page shows them.")
        role = right.selectbox("Role", ROLE_CHOICES, help=ROLE_HELP)
        if st.form_submit_button("Save role", type="primary"):
            handle_set_role(email, role)
            st.rerun()


def render_flash() -> None:
    flash = st.session_state.get("people_flash")
    if flash:
        st.session_state.people_flash = None
        kind, message = flash
        (st.success if kind == "success" else st.error)(plain(message))


def render_audit(db: str) -> None:
    events = get_audit(db)
    shown = f"the {len(events)} most recent" if len(events) >= AUDIT_LIMIT else len(events)
    with st.expander(f"Activity: who launched, imported, archived, deleted and changed roles "
                     f"({shown})"):
        if not events:
            st.caption("Nothing yet.")
            return
        st.dataframe(pd.DataFrame([
            {"When": _when(e.created_at), "Who": text(e.actor), "What": e.action,
             "On": text(f"{e.target_kind} {e.target_name}".strip()), "Detail": text(e.detail)}
            for e in events]), hide_index=True, width="stretch")


def render_people() -> None:
    st.subheader("People and roles", divider="gray")
    db = database_key()
    if auth_config() is None:
        actor = current_actor()
        st.caption(plain(
            f"Local mode: no sign-in, and you ({actor.label if actor else 'nobody yet'}) hold "
            f"every role. Your name is set in the sidebar and remembered in {identity_path()}. "
            "For a team, configure sign-in ([auth] in .streamlit/secrets.toml; see the "
            "README's Team mode): then everyone signs in and admins give roles here."))
    else:
        st.caption(f"Everyone signs in; what they may do depends on their role. Roles — "
                   f"{ROLE_HELP}. "
                   f"Admins named in `{people.ADMINS_VARIABLE}` are always admins.")
        render_flash()
        render_people_table(db)
        render_role_form()
    render_audit(db)
