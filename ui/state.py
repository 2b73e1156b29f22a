"""Every session_state key the app uses, initialised in one place.

Keys are prefixed by page; values are ids and small values only.
"""

from __future__ import annotations

import streamlit as st

DEFAULTS: dict[str, object] = {
    # shared
    "reviewer_name": "",
    # agreement
    "agreement_set": None,  # "dataset_id:rubric_version_id" of the compared result set
    "agreement_pair": None,  # "a|b" source keys, or "all" for every source
    "agreement_criterion": None,  # criterion id whose disagreements are listed
    "agreement_gold_complete": False,  # gold export: fully reviewed responses only
    "agreement_nonce": 0,  # bumped after an import to clear the file uploader
    "agreement_flash": None,
    "agreement_import_problems": None,  # [problem, ...] of the last refused import
}


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
