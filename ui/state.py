"""Every session_state key the app uses, initialised in one place.

Keys are prefixed by page; values are ids and small values only. Pickers use these keys as
their widget keys (no ``index=``), and pages fix a stale value up before drawing the picker.
Widgets whose key carries an id or a nonce (editors, uploaders, an upload's column pickers)
are the only keys not listed.
"""

from __future__ import annotations

import streamlit as st

from storage.jobs.provider_breaker import DEFAULT_PAUSE_AFTER

DEFAULTS: dict[str, object] = {
    # shared
    "reviewer_name": "",  # who is acting (ui/auth.py keeps it in step with the identity)
    "auth_flash": None,  # why the typed local name was refused
    "auth_shown_name": None,  # the local name this tab last showed (None: not drawn yet)
    "auth_name_notice": None,  # (name, monotonic time) another tab changed it to (ui/auth.py)
    "auth_name_box": 0,  # bumped when this tab follows a rename: ui.auth.name_input_key
    "auth_actor": None,  # (claims, monotonic time, SignedIn) of team mode's last role read
    "auth_local": None,  # (name, monotonic time, Actor | None) of local mode's last team check
    # home (Start page)
    "home_flash": None,  # (kind, message) shown once after loading the samples
    "home_sample_loaded": False,  # the samples card then shows the next step
    # rubrics
    "rubrics_show_archived": False,
    "rubrics_selected_id": None,  # the rubric picker's value (fixed up to a listed id)
    "rubrics_version_id": None,  # the version picker's value (fixed up to the latest)
    "rubrics_goto": None,  # (rubric id, version id) to select on the next run, after a write
    "rubrics_diff_old": None,
    "rubrics_diff_new": None,
    "rubrics_diff_show_all": False,
    "rubrics_unlocked_version_id": None,  # a frozen version opened with "edit as new version"
    "rubrics_editor_nonce": 0,  # bumped after a save so the editor starts from the saved rows
    "rubrics_flash": None,
    # (version id or None for a new rubric, source, [problem, ...]) of the last refused import
    "rubrics_import_problems": None,
    # responses
    "responses_show_archived": False,
    "responses_dataset_id": None,  # the dataset picker's value
    "responses_goto": None,  # dataset id to select on the next run, after a write
    "responses_page": 0,  # 0-based page of the browse table
    "responses_search": "",  # words the browse table is narrowed to (searched in SQL)
    "responses_jump": 1,  # the page-number box (1-based), set to the page shown each run
    "responses_page_dataset": None,  # the dataset responses_page belongs to
    "responses_upload_nonce": 0,  # bumped after an import to clear the file uploader
    "responses_flash": None,
    # settings
    "settings_check": None,  # (preset label, ok, message) of the last connection test
    "settings_flash": None,
    "settings_preset": None,  # the label of the preset picked to test or remove
    "people_flash": None,  # (kind, message) after a role change (ui/people_admin.py)
    # grade
    "grade_flash": None,  # (kind, message) shown once after a launch or cancel
    "grade_rubric_id": None,
    "grade_version_id": None,
    "grade_dataset_id": None,
    "grade_selection_mode": "all",  # all | first | pick | results
    "grade_first_n": 10,
    "grade_picked_ids": [],
    "grade_graders": ["per_criterion"],
    "grade_presets": [],  # labels of model presets
    "grade_custom_models": "",
    "grade_api_base": "",
    "grade_normalize": True,
    "grade_allow_ca": False,
    "grade_ca_strategy": "skip",
    "grade_partial_credit": 0.5,
    "grade_retries": 2,
    "grade_concurrency": 0,
    "grade_use_cache": True,
    "grade_structured_output": "auto",
    "grade_call_deadline": 300,
    "grade_pause_after": DEFAULT_PAUSE_AFTER,
    "grade_samples": 1,
    "grade_shuffle_options": False,  # multi-choice options shown in a per-response order
    "grade_shuffle_criteria": False,  # one-shot: criteria listed in a per-response order
    "grade_temperature": 0.0,
    "grade_fallback_pos": "(none: the criterion fails)",
    "grade_fallback_neg": "(none: the criterion fails)",
    "grade_lp_on": False,
    "grade_lp_free_budget": 6000,
    "grade_lp_max_cap": 8000,
    "grade_lp_penalty_at_cap": 0.5,
    "grade_lp_exponent": 1.6,
    "grade_lp_type": "ALL",
    "grade_system_prompt": "",
    "grade_calibrate": False,  # few-shot calibration with reviewed examples (ui/grade_calibration)
    "grade_calibration_k": 4,
    "grade_calibration_seed": 0,
    "grade_run_name": "",
    "grade_launching": False,  # set by the Launch button, drawn disabled until queued
    "grade_as_panel": False,  # grade as a judge panel (ui/grade_panel.py)
    "grade_panel_rule": "majority",
    "grade_panel_cap": 0.0,  # USD for the whole panel; 0: no cap
    "grade_run_cap": 0.0,  # USD per run launched without a panel (ui/grade_cost_cap); 0: none
    "grade_handoff": None,  # grade_handoff.Handoff: responses sent from a Results filter
    # results
    "results_set": None,  # (dataset_id, rubric_version_id) of the open result set
    "results_run_ids": [],
    "results_search": "",
    "results_failed_only": False,
    "results_disagree_only": False,
    "results_reviewed": "any",
    "results_score_range": (0.0, 1.0),
    "results_score_run": 0,  # 0: any run
    "results_sort": "response",
    "results_sort_run": None,
    "results_descending": False,
    "results_page_size": 50,
    "results_page": 1,
    "results_open_response": None,  # the response id a click on a row opened
    "results_dialog_pending": False,  # open that response's dialog on this run
    "results_table_nonce": 0,  # bumped after a click so the table forgets the selection
    "results_goto_review": False,  # "Review this response" was clicked in the dialog
    "results_score_gap": 0.2,  # comparable scores further apart count as a disagreement
    "results_meta_column": "",  # a metadata column to filter on ("" for none)
    "results_meta_value": None,
    "results_meta_text": "",  # the value typed for a column with too many values to list
    "results_verdict_criterion": None,  # criterion id whose effective verdict filters
    "results_verdict_value": "MET",
    "results_verdict_run": None,
    "results_panel_ids": [],  # judge panels shown next to the runs
    "results_panel_goto": None,  # panel(s) just made (Results, Grade): picked on the next run
    "results_flash": None,  # a message shown once (a panel was made)
    "results_combine_open": False,  # the "Combine as a panel" dialog is open
    "results_combine_runs": (),  # the runs shown when it was opened (ids)
    # review
    "review_set": None,  # (dataset_id, rubric_version_id)
    "review_unreviewed_only": False,
    "review_blind": False,
    "review_position": 0,
    "review_queue_nonce": 0,  # bumped by "refresh queue"
    "review_response_id": None,  # set by Results' "review this response"
    "review_flash": None,
    "review_set_flash": None,  # the review set form's "saved", shown after its rerun
    "review_form_nonce": 0,  # bumped after a save so the form starts from the saved verdicts
    "review_name_input": "",  # local mode's sidebar name widget (ui/auth.py)
    # (response_id, {criterion_id: my verdict id}, form nonce, monotonic time opened)
    "review_shown": None,
    # the verdict form's one save as the browser sent it (ui/components/verdict_form.py),
    # acted on by the fragment
    "review_submitted": None,
    "review_form_done": None,  # id of the last save taken: the browser's form unlocks on it
    "review_form_taken": (),  # ids of the last saves taken: one sent again is not taken twice
    "review_answered": None,  # (save id, flash): what came of it, said again if it is resent
    # (response_id, form nonce, {criterion_id: (verdict, note)}): what a form starts from
    # after a refused "save and next" brought the reviewer back
    "review_restore": None,
    "review_form_as": None,  # (form key, the name that form was drawn for and saves under)
    "review_pending_as": None,  # the identity the page showed when the form's save came
    # review_form.Due: a "save and next" whose write follows the drawing of the next response
    "review_due": None,
    # (shown version id, newer version id, newer number, message): the last save was made on
    # an older rubric version than the newest (ui/review_version_view.py)
    "review_version_notice": None,
    "review_version_switched": False,  # "Switch to vN" pressed: the whole page reruns
    "review_actor": None,  # the reviewer key the form was drawn for (local mode can switch)
    "review_queue_done": None,  # (dataset id, version id) whose queue "save and next" ended
    "review_scrolled": None,  # response id last scrolled to its top
    "review_mode": "Review",  # Review | Adjudicate
    # ((dataset id, version id), keys of the cards shown): a card decided stays in its place
    "review_adj_order": None,
    "review_adjudicate": None,  # "response_criterion" whose Decide was pressed
    "review_adjudicate_flash": None,  # (that key, kind, message)
    # agreement
    "agreement_set": None,  # "dataset_id:rubric_version_id" of the compared result set
    "agreement_tab": "Criteria",  # the section open (ui.agreement_text.TABS)
    "agreement_pair": None,  # "a|b" source keys, or "all" for every source
    "agreement_criterion": None,  # criterion id whose disagreements are listed
    "agreement_open_response": None,  # response id picked among those disagreements
    "agreement_gold_complete": False,  # gold export: fully reviewed responses only
    "agreement_nonce": 0,  # bumped after an import to clear the file uploader
    "agreement_flash": None,
    "agreement_import_problems": None,  # [problem, ...] of the last refused import
    "agreement_import_create": False,  # the import may add reviewers it does not know
    "agreement_trust_judge": None,  # source key of the judge the trust section shows
    # judges
    "judges_tab": None,  # the tab to open on the next run (Agreement's "Reword" links)
    # compare
    "compare_rubric_id": None,  # the rubric picker (fixed up to a listed id)
    "compare_version_id": None,  # its version (fixed up to the latest)
    "compare_mode": "datasets",  # "datasets" (two datasets) | "split" (one, split by a column)
    "compare_a": None,  # dataset id of source A (two datasets)
    "compare_b": None,  # dataset id of source B
    "compare_dataset": None,  # the dataset split by a column
    "compare_column": None,  # its metadata column
    "compare_a_value": None,  # the column's value naming source A
    "compare_b_value": None,  # and source B
    "compare_a_column": None,  # the text column naming source A (two columns of one dataset)
    "compare_b_column": None,  # and source B ("" is the response text)
    "compare_match": "id",  # pair by "id" or "query"
    "compare_model": "",  # the judge's litellm model name
    "compare_api_base": "",  # its OpenAI-compatible server, if any
    "compare_holistic": False,  # one question for the whole rubric
    "compare_board_basis": "judge",  # the leaderboard from "judge" winners or "people"
    "compare_examples": 0,  # calibration: pairs people decided shown per criterion (0: none)
    "compare_selected": None,  # the judge shown: a comparison's id, or "P<id>" for a panel
    "compare_panel_members": [],  # comparison ids picked for a new panel of judges
    "compare_panel_name": "",  # its name
    "compare_flash": None,  # (kind, message) shown once after starting or cancelling
    # review pairs (people's preferences on a comparison's pairs)
    "pairs_comparison": None,  # the comparison reviewed (id)
    "pairs_index": 0,  # the pair shown: its index among the comparison's compared pairs
    "pairs_nonce": 0,  # a new form after each save
    "pairs_submitted": None,  # the form's save as the browser sent it (taken once)
    "pairs_taken": (),  # ids of the saves already taken (the browser may send one again)
    "pairs_done": None,  # the id of the last save taken (tells the browser)
    "pairs_form_as": None,  # (form key, identity, my answers' ids) the form was drawn with
    "pairs_adjudicate": None,  # (pair, position, ((reviewer, answer id), ...)) a Decide saw
    "pairs_flash": None,  # (kind, message) shown once after a save
    "pairs_answered": None,  # (save id, flash) of the last save: said again if it is resent
    "pairs_show_agreement": False,  # the agreement table is drawn
}


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
