"""Every session_state key the app uses, initialised in one place.

Keys are prefixed by page; values are ids and small values only. Pickers use these keys as
their widget keys (no ``index=``), and pages fix a stale value up before drawing the picker.
Editors and uploaders whose key carries a version id or a nonce are the only keys not listed.
"""

from __future__ import annotations

import streamlit as st

DEFAULTS: dict[str, object] = {
    # shared
    "reviewer_name": "",
    # home (Start page)
    "home_flash": None,  # (kind, message) shown once after loading the samples
    # rubrics
    "rubrics_show_archived": False,
    "rubrics_selected_id": None,  # the rubric picker's value (fixed up to a listed id)
    "rubrics_version_id": None,  # the version picker's value (fixed up to the latest)
    "rubrics_goto": None,  # (rubric id, version id) to select on the next run, after a write
    "rubrics_diff_old": None,
    "rubrics_diff_new": None,
    "rubrics_unlocked_version_id": None,  # a frozen version opened with "edit as new version"
    "rubrics_editor_nonce": 0,  # bumped after a save so the editor starts from the saved rows
    "rubrics_flash": None,
    "rubrics_import_problems": None,  # (source, [problem, ...]) of the last refused import
    # responses
    "responses_show_archived": False,
    "responses_dataset_id": None,  # the dataset picker's value
    "responses_goto": None,  # dataset id to select on the next run, after a write
    "responses_page": 0,
    "responses_page_dataset": None,  # the dataset responses_page belongs to
    "responses_upload_nonce": 0,  # bumped after an import to clear the file uploader
    "responses_flash": None,
    # settings
    "settings_check": None,  # (preset label, ok, message) of the last connection test
    "settings_flash": None,
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
