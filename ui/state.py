"""Every session_state key the app uses, initialised in one place.

Keys are prefixed by page; values are ids and small values only.
"""

from __future__ import annotations

import streamlit as st

DEFAULTS: dict[str, object] = {
    # shared
    "reviewer_name": "",
}


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
