"""The current identity for pages: the one place pages ask "who is acting?".

Today (local mode only) the actor is the reviewer name typed in this browser session, with every
role. Sign-in (OpenID Connect through ``st.login``) and a remembered local identity replace the
body of :func:`current_actor`; pages keep calling it and pass the actor to the services, which
do the permission checks.
"""

from __future__ import annotations

import streamlit as st

from storage.services.reviewers import Actor, local_actor


def current_actor() -> Actor | None:
    """The person acting in this browser session, or None when nobody is known yet."""
    name = str(st.session_state.get("reviewer_name") or "").strip()
    return local_actor(name) if name else None
