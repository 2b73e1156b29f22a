"""Who is acting, as the app's pages see it: local mode's remembered name, and team mode's
configuration checked before anything else renders."""

from __future__ import annotations

import socket

from streamlit.testing.v1 import AppTest

from storage.local_identity import identity_path, remember_name, remembered_name
from storage.services import rubrics
from tests.ui.pages import APP, db, open_page, texts
from ui import auth

GOOD_AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "0123456789abcdef0123456789abcdef",
    "client_id": "rubric-workbench",
    "client_secret": "s3cret-value",
}


def _app_with_auth(auth: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets["auth"] = auth
    return at.run()


def _name_box(at: AppTest):
    """The sidebar's name box, whichever key it has now."""
    [box] = at.sidebar.text_input
    return box


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_local_name_is_asked_once_and_remembered_in_a_new_session():
    at = open_page("home")
    assert "Type your name once" in texts(at)
    at.text_input(key="review_name_input").input("  Ana   Souza ").run()
    assert remembered_name() == "Ana Souza" and identity_path().exists()
    # A new browser session (a reload, a browser restart) starts with the name.
    again = open_page("rubrics")
    assert again.text_input(key="review_name_input").value == "Ana Souza"
    assert again.session_state.reviewer_name == "Ana Souza"
    assert "Remembered on this computer" in texts(again)


def test_the_remembered_name_is_recorded_with_changes():
    at = open_page("home")
    at.text_input(key="review_name_input").input("Ana").run()
    at.button(key="home_load_sample").click().run()
    assert not at.exception
    [rubric] = rubrics.list_rubrics(db())
    assert rubrics.get_version(db(), rubric.latest_version_id).created_by == "Ana"


def test_an_empty_name_is_refused_and_the_old_one_kept():
    at = open_page("home")
    at.text_input(key="review_name_input").input("Ana").run()
    at.text_input(key="review_name_input").input("   ").run()
    assert "type your name" in texts(at)
    assert remembered_name() == "Ana"


def test_auth_with_missing_keys_is_a_page_saying_what_to_fix():
    auth = {k: v for k, v in GOOD_AUTH.items() if k not in ("client_secret", "cookie_secret")}
    at = _app_with_auth(auth)
    assert not at.exception
    shown = texts(at)
    assert "[auth] has no cookie_secret" in shown
    assert "[auth] has no client_secret" in shown
    assert "[auth] has no server_metadata_url" in shown
    assert "Sign in" not in [b.label for b in at.button]
    # Nothing of the app rendered: no page title, no navigation ran.
    assert [t.value for t in at.title] == ["Rubric Workbench"]


def test_a_wrong_redirect_uri_is_explained():
    at = _app_with_auth({**GOOD_AUTH, "redirect_uri": "http://localhost:8501/",
                         "server_metadata_url": "http://127.0.0.1:1/.well-known/x"})
    assert "must end with /oauth2callback" in texts(at)


def test_a_provider_that_is_down_is_a_clear_page_not_a_sign_in_loop():
    url = f"http://127.0.0.1:{_closed_port()}/.well-known/openid-configuration"
    at = _app_with_auth({**GOOD_AUTH, "server_metadata_url": url})
    assert not at.exception
    shown = texts(at)
    assert "The sign-in provider cannot be reached" in shown
    assert f"{url} does not answer" in shown
    assert [b.label for b in at.button] == ["Try again"]
    assert "secrets.toml" in shown


def test_a_signed_out_visitor_of_a_configured_app_sees_nothing_but_sign_in(monkeypatch):
    # A real discovery document from a real (local) OpenID Connect provider.
    from tests import oidc_provider

    provider = oidc_provider.start("http://localhost:8501/oauth2callback")
    try:
        at = _app_with_auth({**GOOD_AUTH, "server_metadata_url": provider.metadata_url})
    finally:
        provider.stop()
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in with your organisation"]
    assert not at.sidebar.text_input  # no name to type in team mode


def test_a_name_changed_in_another_tab_is_the_one_recorded_and_the_old_tab_says_so(
        monkeypatch):
    """Local mode is one person: renaming in one tab renames them everywhere. A tab still
    showing the old name records its next change under the new one and says so."""
    first = open_page("home")
    first.text_input(key="review_name_input").input("ana").run()
    second = open_page("home")  # another tab, opened under the old name
    assert second.text_input(key="review_name_input").value == "ana"
    first.text_input(key="review_name_input").input("Ana Souza").run()
    assert "another tab" not in texts(first)  # the tab where it was changed is not told

    second.button(key="home_load_sample").click().run()
    assert not second.exception
    [rubric] = rubrics.list_rubrics(db())
    assert rubrics.get_version(db(), rubric.latest_version_id).created_by == "Ana Souza"
    assert ("Your name was changed in another tab or window: what you do here is now "
            "recorded as 'Ana Souza'.") in texts(second)
    assert _name_box(second).value == "Ana Souza"  # a new box (ui.auth.name_input_key)
    second.run()
    assert "another tab" in texts(second)  # for a while, whatever the page reruns
    _name_box(second).input("Ana S.").run()
    assert "another tab" not in texts(second)  # renamed here: nothing left to explain
    assert remembered_name() == "Ana S."
    first.run()
    assert "recorded as 'Ana S.'" in texts(first)  # and the first tab is told in turn
    monkeypatch.setattr(auth, "NAME_NOTICE_S", 0.0)
    first.run()
    assert "another tab" not in texts(first)  # after a while, no more


def test_several_providers_get_one_button_each_and_one_that_is_down_is_named():
    from tests import oidc_provider

    corp = oidc_provider.start("http://localhost:8501/oauth2callback")
    partner = oidc_provider.start("http://localhost:8501/oauth2callback")
    down = f"http://127.0.0.1:{_closed_port()}/.well-known/openid-configuration"
    client = {"client_id": "rubric-workbench", "client_secret": "s3cret-value"}
    shared = {k: GOOD_AUTH[k] for k in ("redirect_uri", "cookie_secret")}
    try:
        at = _app_with_auth({**shared,
                             "corp": {**client, "server_metadata_url": corp.metadata_url},
                             "partner-idp": {**client,
                                             "server_metadata_url": partner.metadata_url}})
        assert not at.exception
        assert [b.label for b in at.button] == ["Sign in with Corp", "Sign in with Partner Idp"]
        at = _app_with_auth({**shared,
                             "corp": {**client, "server_metadata_url": corp.metadata_url},
                             "okta": {**client, "server_metadata_url": down}})
    finally:
        corp.stop()
        partner.stop()
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in with Corp"]
    assert f"Okta is unavailable: {down} does not answer" in texts(at)


def test_a_named_provider_missing_keys_or_with_a_bad_name_is_explained():
    at = _app_with_auth({k: GOOD_AUTH[k] for k in ("redirect_uri", "cookie_secret")}
                        | {"google": {"client_id": "x"},
                           "my_idp": {"client_id": "x", "client_secret": "y",
                                      "server_metadata_url": "http://127.0.0.1:1/x"}})
    assert not at.exception
    shown = texts(at)
    assert "[auth.google] has no client_secret" in shown
    assert "[auth.google] has no server_metadata_url" in shown
    assert "[auth.my_idp]: provider names cannot contain '_'; use [auth.my-idp]" in shown
    assert not [b for b in at.button if b.label.startswith("Sign in")]


def test_client_kwargs_left_under_auth_with_only_named_providers_is_explained():
    """Streamlit would drop it silently (it applies to the unnamed provider only), and a
    provider that refuses the default prompt would send the person round in a loop."""
    at = _app_with_auth({k: GOOD_AUTH[k] for k in ("redirect_uri", "cookie_secret")}
                        | {"client_kwargs": {"prompt": "login"},
                           "corp": {"client_id": "x", "client_secret": "y",
                                    "server_metadata_url": "http://127.0.0.1:1/x"}})
    assert not at.exception
    assert ("[auth] client_kwargs applies to no provider: with named providers, put it in "
            "each one's table ([auth.corp] client_kwargs = ...)") in texts(at)
    assert not [b for b in at.button if b.label.startswith("Sign in")]


def test_the_activity_shows_who_launched_imported_archived_and_deleted():
    """Every change to shared data is in Settings → Activity under the identity that made it:
    a rubric and responses imported, a run launched, verdicts imported for others, an
    archive and a deletion."""
    from storage.services import datasets, runs, verdict_import
    from storage.services.reviewers import local_actor

    remember_name("Ana")
    ana = local_actor("Ana")
    version = rubrics.import_rubric(db(), "Dosing", "- name: dose\n  requirement: States it\n",
                                    filename="dosing.yaml", actor=ana)
    dataset = datasets.create_dataset(db(), "Answers", responses=[{"id": "a1", "text": "x"}],
                                      actor=ana)
    runs.create_run(db(), rubric_version_id=version.id, dataset_id=dataset.id,
                    grader="per_criterion", model="openai/judge", actor=ana)
    verdict_import.import_human_verdicts(
        db(), version.id, dataset.id, "response_id,criterion,verdict,reviewer\n"
        "a1,dose,MET,Bo\n", filename="verdicts.csv", actor=ana,
        create_reviewers=True)  # Bo is new here
    rubrics.archive_rubric(db(), version.rubric_id, actor=ana)
    scratch = datasets.create_dataset(db(), "Scratch", actor=ana)
    datasets.delete_dataset(db(), scratch.id, confirm=True, actor=ana)

    at = open_page("settings")
    assert not at.exception
    activity = next(f.value for f in at.dataframe if "Who" in f.value.columns)
    shown = [tuple(row) for row in activity[["Who", "What", "On", "Detail"]].itertuples(
        index=False)]
    assert shown[::-1] == [
        ("Ana", "import", "rubric Dosing", "from dosing.yaml"),
        ("Ana", "import responses", "dataset Answers", "1 responses"),
        ("Ana", "launch", "run openai/judge", "per_criterion over 1 responses"),
        ("Ana", "import verdicts", "dataset Answers", "1 verdicts of Bo from verdicts.csv"),
        ("Ana", "archive", "rubric Dosing", ""),
        ("Ana", "create", "dataset Scratch", ""),
        ("Ana", "delete", "dataset Scratch", shown[0][3]),
    ]
    assert any(e.label.startswith("Activity: who launched, imported") for e in at.expander)


def test_a_message_sent_before_the_browser_saw_a_rename_made_elsewhere_renames_nobody():
    """A tab shows "Bo Chen"; another tab renames to "Cy Park" and this tab's next whole-page
    run follows. A message this tab's browser sent before that run reached it (a click, a
    save sent again, a poll) still carries "Bo Chen" in the name box: that is what the box
    showed, not the person typing their old name back."""
    at = open_page("home")
    at.text_input(key="review_name_input").input("Bo Chen").run()
    drawn_for_bo = at.text_input(key="review_name_input")  # the page as the browser has it
    remember_name("Cy Park")  # another tab
    at.run()
    assert at.session_state.reviewer_name == "Cy Park"
    # the browser's message, sent before the new name reached it: its box still holds Bo Chen
    drawn_for_bo.set_value("Bo Chen").run()
    assert not at.exception
    assert remembered_name() == "Cy Park"
    assert at.session_state.reviewer_name == "Cy Park"
    assert "recorded as 'Cy Park'" in texts(at)
    _name_box(at).input("Cy P.").run()  # the box shown now is the person's own
    assert remembered_name() == "Cy P." and at.session_state.reviewer_name == "Cy P."
