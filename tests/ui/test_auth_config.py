"""Sign-in fails closed: a secrets file Streamlit would ignore or misread, and a team's
workbench without a readable [auth], are a page saying what to fix, never local mode (where
everyone holds every role)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from storage.services import people
from storage.services.reviewers import Role
from storage.services.sign_in import SignInClaims, sign_in
from tests.secrets_files import AUTH, BROKEN, broken, folder_of_secrets
from tests.ui.pages import APP, db, texts
from ui.auth_config import secrets_findings, secrets_problem


@pytest.mark.parametrize("kind", [k for k in BROKEN if k != "empty-file"])
def test_a_secrets_path_streamlit_ignores_or_misreads_is_a_problem(tmp_path, kind):
    path, named = broken(tmp_path, kind)
    problem = secrets_problem((str(path),))
    assert problem and named in problem and str(path) in problem


def test_readable_secrets_are_no_problem(tmp_path):
    good = tmp_path / "secrets.toml"
    good.write_text(AUTH)
    empty = tmp_path / "other" / "secrets.toml"
    empty.parent.mkdir()
    empty.write_text("# nothing yet\n")
    missing = tmp_path / "nowhere" / "secrets.toml"
    paths = (str(good), str(empty), str(missing), str(folder_of_secrets(tmp_path)))
    assert secrets_problem(paths) is None
    good.write_text("[database]\nurl = 'x'\n")
    assert secrets_problem(paths) is None
    assert secrets_findings(paths) == [
        f"{good} has no [auth] section", f"{empty} is empty", f"there is no {missing}",
        f"the secrets folder {tmp_path / 'secrets'} has no auth subfolder"]


def test_a_misnamed_secrets_file_next_to_the_read_one_is_found(tmp_path):
    """Streamlit reads .streamlit/secrets.toml only: sign-in written to secrets.toml.txt or
    secrets is never read, and the app would open to everyone."""
    folder = tmp_path / ".streamlit"
    folder.mkdir()
    (folder / "config.toml").write_text("[server]\nheadless = true\n")
    stray = folder / "secrets.toml.txt"
    stray.write_text(AUTH)
    wanted = folder / "secrets.toml"
    problem = secrets_problem((str(wanted),))
    assert problem == (f"{stray} holds sign-in settings, but Streamlit reads only {wanted}; "
                       "rename it to secrets.toml")
    # A kept copy (an example to fill in) is no misnamed file, nor is any stray file once
    # the read one has sign-in.
    wanted.write_text(AUTH)
    assert secrets_problem((str(wanted),)) is None
    wanted.unlink()
    stray.unlink()
    example = folder / "secrets.toml.example"
    example.write_text(AUTH)
    assert secrets_problem((str(wanted),)) is None
    example.unlink()
    stray.write_text("[other]\nx = 1\n")  # not sign-in: only named on the closed page
    assert secrets_problem((str(wanted),)) is None
    assert secrets_findings((str(wanted),)) == [
        f"there is no {wanted}",
        f"{stray} is not read (Streamlit reads secrets only from the files named in "
        "secrets.files)"]


def test_a_folder_named_like_the_toml_file_is_a_problem(tmp_path):
    folder = tmp_path / "secrets.toml"
    folder.mkdir()
    assert secrets_problem((str(folder),)) == f"{folder} is a folder; it must be a TOML file"


# -- the app, in AppTest ----------------------------------------------------------------------
@pytest.fixture
def secrets_files():
    """Point Streamlit's secrets.files option at the test's paths, as --secrets.files does."""
    before = st_config.get_option("secrets.files")

    def point(*paths: Path) -> None:
        st_config.set_option("secrets.files", [str(p) for p in paths])

    yield point
    st_config.set_option("secrets.files", before)


def _closed(at: AppTest) -> None:
    assert not at.exception
    assert "stays closed" in texts(at)
    assert [t.value for t in at.title] == ["Rubric Workbench"]  # no page of the app ran
    assert not at.sidebar.text_input  # no local-mode name to type
    assert not [b for b in at.button if b.label.startswith("Sign in")]


def test_a_workbench_with_environment_admins_never_opens_without_sign_in(monkeypatch):
    monkeypatch.setenv(people.ADMINS_VARIABLE, "boss@example.org")
    at = AppTest.from_file(APP, default_timeout=30).run()
    _closed(at)
    shown = texts(at)
    assert "this team's workbench stays closed" in shown
    assert "RUBRIC_WORKBENCH_ADMINS names the team's admins" in shown
    assert "boss@example.org" not in shown  # not told to whoever opens the page


def test_a_workbench_whose_people_have_roles_never_opens_without_sign_in(monkeypatch):
    monkeypatch.setenv(people.ADMINS_VARIABLE, "boss@example.org")
    people.set_role(db(), "rita@example.org", Role.REVIEWER, actor=_admin())
    monkeypatch.delenv(people.ADMINS_VARIABLE)
    at = AppTest.from_file(APP, default_timeout=30).run()
    _closed(at)
    assert "1 person has a role in this workbench's database" in texts(at)


def _admin():
    return sign_in(db(), SignInClaims(issuer="https://idp", subject="b", email="boss@example.org",
                                      email_verified=True)).actor


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_secrets_file_keeps_a_team_workbench_closed(tmp_path, monkeypatch,
                                                             secrets_files, kind):
    path, named = broken(tmp_path, kind)
    secrets_files(path)
    monkeypatch.setenv(people.ADMINS_VARIABLE, "boss@example.org")
    at = AppTest.from_file(APP, default_timeout=30).run()
    _closed(at)
    assert named in texts(at)


def test_without_a_team_an_empty_secrets_file_is_local_mode(tmp_path, secrets_files):
    path, _ = broken(tmp_path, "empty-file")
    secrets_files(path)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert at.sidebar.text_input(key="review_name_input")


def test_a_local_tab_closes_once_the_workbench_gains_a_team(monkeypatch):
    """Another instance with sign-in gives someone a role in the same database: a tab open in
    local mode stops holding every role at its next rerun (after the short role cache)."""
    from ui import auth

    at = AppTest.from_file(APP, default_timeout=30).run()
    assert at.sidebar.text_input(key="review_name_input")
    monkeypatch.setenv(people.ADMINS_VARIABLE, "boss@example.org")
    people.set_role(db(), "rita@example.org", Role.REVIEWER, actor=_admin())
    monkeypatch.delenv(people.ADMINS_VARIABLE)
    monkeypatch.setattr(auth, "_ACTOR_TTL_S", 0.0)
    at.run()
    _closed(at)
    assert "1 person has a role" in texts(at)
