"""Who is reviewing, in a real browser: team mode signs people in with a real OpenID Connect
provider (tests/oidc, started here on 127.0.0.1) and enforces their roles; local mode
remembers the one person's name."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from storage.engine import open_database
from storage.services import datasets, people, rubrics
from tests import oidc_provider
from tests.e2e.conftest import SCREENSHOTS, _free_port, _serve, database_url_in
from tests.e2e.streamlit_page import choose, wait_idle
from tests.secrets_files import BROKEN, broken

ADMIN = "boss@example.org"
REVIEWER = "rita@example.org"
SIGN_IN = "Sign in with your organisation"
# Accounts whose provider sends the admin's address without vouching for it: Eve typed it
# (email_verified false, as Keycloak's self-registration allows), Mallory's provider sends no
# email_verified at all (as Entra's email claim).
UNVERIFIED = {"eve": {"email": ADMIN, "email_verified": False, "name": "Eve"},
              "mallory": {"email": ADMIN, "email_verified": None, "name": "Mallory"}}


def shown(text: str) -> re.Pattern[str]:
    """Text as the page shows it: an address in a message carries an invisible WORD JOINER
    after its "@" (ui/safe_text.py), which keeps the browser from making it a mailto link,
    and so does every ":" (no :shortcode: icons)."""
    return re.compile(re.escape(text).replace("@", "@\u2060?").replace(":", ":\u2060?"))


def _loopback_only(context: BrowserContext) -> None:
    """The provider's built-in pages import an outside web font: nothing leaves the machine."""
    def guard(route):
        host = urlparse(route.request.url).hostname
        if host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            route.abort()
    context.route("**/*", guard)


def _team_app(tmp_path_factory, *, id_token_ttl: int = 3600):
    data_dir = tmp_path_factory.mktemp("team-app")
    port = _free_port()
    # The app on localhost, the provider on 127.0.0.1: their cookies never mix.
    app_url = f"http://localhost:{port}"
    redirect = f"{app_url}/oauth2callback"
    provider = oidc_provider.start(redirect, id_token_ttl=id_token_ttl,
                                   log=data_dir / "oidc.log", accounts=UNVERIFIED)
    secrets = data_dir / "secrets.toml"
    secrets.write_text(oidc_provider.secrets_toml(provider.metadata_url, redirect))
    _, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_ADMINS": f"Boss@Example.org, {ADMIN}"},
                     port=port, extra_args=("--secrets.files", str(secrets)))
    return app_url, data_dir, provider, stop


@pytest.fixture(scope="module")
def team_app(tmp_path_factory):
    app_url, data_dir, provider, stop = _team_app(tmp_path_factory)
    yield app_url, data_dir, provider.issuer
    stop()
    provider.stop()


@pytest.fixture
def loopback_page(page: Page) -> Page:
    _loopback_only(page.context)
    return page


def _person(browser) -> Page:
    """A second browser profile: a second person."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    _loopback_only(context)
    return context.new_page()


def _sign_in(page: Page, app_url: str, login: str) -> None:
    page.goto(app_url)
    page.get_by_role("button", name=SIGN_IN).click(timeout=45_000)
    page.wait_for_url("**/interaction/**", timeout=30_000)
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any password")
    page.locator("button[type=submit]").click()
    page.wait_for_url(f"{app_url}/**", timeout=30_000)


def _shot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_an_unauthenticated_browser_sees_only_the_sign_in_page(team_app, loopback_page,
                                                                screenshot):
    app_url, _, _ = team_app
    page = loopback_page
    page.set_viewport_size({"width": 1280, "height": 800})
    for path in ("", "/rubrics", "/settings"):
        page.goto(app_url + path)
        expect(page.get_by_role("button", name=SIGN_IN)).to_be_visible(timeout=45_000)
        # No navigation, no page content: only the sign-in.
        expect(page.get_by_role("link", name="Rubrics")).to_have_count(0)
        expect(page.get_by_role("heading", name="Settings")).to_have_count(0)
        expect(page.get_by_text("Traceback")).to_have_count(0)
    screenshot("signin-page")


def test_a_reviewer_is_refused_an_admin_action_the_admin_can_do(team_app, loopback_page,
                                                                 browser, screenshot,
                                                                 monkeypatch):
    app_url, data_dir, _ = team_app
    boss = loopback_page
    boss.set_viewport_size({"width": 1280, "height": 800})
    rita = _person(browser)

    # Rita signs in first: she has no role yet, so she sees whom to ask and nothing else.
    _sign_in(rita, app_url, REVIEWER)
    expect(rita.get_by_text("you have no role yet")).to_be_visible(timeout=30_000)
    expect(rita.get_by_text(shown(ADMIN))).to_be_visible()
    expect(rita.get_by_role("link", name="Rubrics")).to_have_count(0)
    expect(rita.get_by_role("button", name="Sign out")).to_be_visible()
    _shot(rita, "signin-no-role")

    # The admin (from RUBRIC_WORKBENCH_ADMINS) signs in and gives Rita the reviewer role.
    _sign_in(boss, app_url, ADMIN)
    expect(boss.get_by_text(shown(f"{ADMIN} · admin"))).to_be_visible(timeout=30_000)
    boss.get_by_role("link", name="Settings", exact=True).click()
    expect(boss.get_by_role("heading", name="People and roles")).to_be_visible(timeout=30_000)
    expect(boss.get_by_text(shown(REVIEWER)).first).to_be_visible()
    boss.get_by_role("textbox", name="E-mail").fill(REVIEWER)
    boss.get_by_role("button", name="Save role").click()
    expect(boss.get_by_text(shown(f"{REVIEWER} is now reviewer"))).to_be_visible(timeout=30_000)
    # the message names her as text: no mailto link anywhere in it
    expect(boss.get_by_test_id("stAlert").locator("a")).to_have_count(0)
    boss.get_by_role("heading", name="People and roles").scroll_into_view_if_needed()
    screenshot("signin-settings-roles")

    # Rita now gets in, as herself, and can read.
    rita.get_by_role("button", name="Check again").click()
    expect(rita.get_by_text(shown(f"{REVIEWER} · reviewer"))).to_be_visible(timeout=30_000)
    expect(rita.get_by_role("link", name="Results")).to_be_visible()
    # She may not load data (an admin action): the service refuses, the page says why.
    rita.get_by_role("button", name="Load sample rubric and responses").click()
    refusal = rita.get_by_text("may not load the samples: that needs an admin")
    expect(refusal).to_be_visible(timeout=30_000)
    expect(rita.get_by_text("Ask an admin to change your role")).to_be_visible()
    # Nor make herself an admin.
    rita.get_by_role("link", name="Settings", exact=True).click()
    expect(rita.get_by_role("heading", name="People and roles")).to_be_visible(timeout=60_000)
    wait_idle(rita)
    rita.get_by_role("textbox", name="E-mail").fill(REVIEWER)
    choose(rita, "Role", "admin")
    expect(rita.get_by_role("textbox", name="E-mail")).to_have_value(REVIEWER)
    rita.get_by_role("button", name="Save role").click()
    expect(rita.get_by_text("may not change people's roles: that needs an admin")).to_be_visible(
        timeout=30_000)
    expect(rita.get_by_text("Traceback")).to_have_count(0)
    expect(rita.get_by_role("button", name="Save role")).to_be_visible()
    _shot(rita, "signin-reviewer-refused")

    # The admin can do what Rita could not; it is recorded under the admin's identity.
    boss.get_by_role("link", name="Start", exact=True).click()
    boss.get_by_role("button", name="Load sample rubric and responses").click()
    expect(boss.get_by_text("Loaded the rubric")).to_be_visible(timeout=30_000)

    sessions = open_database(database_url_in(data_dir))
    monkeypatch.setenv(people.ADMINS_VARIABLE, ADMIN)  # as the app was started
    roles = {p.key: (p.role, p.from_environment) for p in people.list_people(sessions)}
    assert roles == {ADMIN: ("admin", True), REVIEWER: ("reviewer", False)}
    [rubric] = rubrics.list_rubrics(sessions)
    assert rubrics.get_version(sessions, rubric.latest_version_id).created_by == ADMIN
    assert {d.imported_by for d in datasets.list_datasets(sessions)} == {ADMIN}
    events = people.list_audit_events(sessions)
    assert [(e.actor, e.action, e.target_kind) for e in reversed(events)] == [
        (ADMIN, "change role", "person"), (ADMIN, "create", "rubric"),
        (ADMIN, "import responses", "dataset")]
    rita.context.close()


def test_a_signed_in_session_expires_when_the_token_does(tmp_path_factory, loopback_page):
    """Streamlit keeps its identity cookie for 30 days; the app ends the session when the ID
    token expires, and signing in again brings the person back."""
    app_url, _, provider, stop = _team_app(tmp_path_factory, id_token_ttl=20)
    try:
        page = loopback_page
        _sign_in(page, app_url, ADMIN)
        expect(page.get_by_text(shown(f"{ADMIN} · admin"))).to_be_visible(timeout=30_000)
        page.wait_for_timeout(21_000)
        page.reload()
        expect(page.get_by_text("Your sign-in has expired")).to_be_visible(timeout=30_000)
        expect(page.get_by_role("link", name="Rubrics", exact=True)).to_have_count(0)
        page.get_by_role("button", name="Sign in again").click()
        page.wait_for_url("**/interaction/**", timeout=30_000)
        page.locator("input[name=login]").fill(ADMIN)
        page.locator("input[name=password]").fill("any password")
        page.locator("button[type=submit]").click()
        expect(page.get_by_text(shown(f"{ADMIN} · admin"))).to_be_visible(timeout=30_000)
    finally:
        stop()
        provider.stop()


def test_bad_sign_in_configuration_is_a_page_saying_what_to_fix(tmp_path_factory, page):
    data_dir = tmp_path_factory.mktemp("bad-auth")
    secrets = data_dir / "secrets.toml"
    secrets.write_text('[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\n'
                       'client_id = "rubric-workbench"\n')
    url, stop = _serve(data_dir, extra_args=("--secrets.files", str(secrets)))
    try:
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(url)
        expect(page.get_by_text("Sign-in is configured but cannot work yet")).to_be_visible(
            timeout=45_000)
        for key in ("cookie_secret", "client_secret", "server_metadata_url"):
            expect(page.get_by_role("listitem").filter(has_text=f"[auth] has no {key}")
                   ).to_be_visible()
        expect(page.get_by_text("Traceback")).to_have_count(0)
        _shot(page, "signin-bad-config")
    finally:
        stop()


def test_local_mode_remembers_the_reviewer_across_a_reload_and_a_new_browser(app_server, page,
                                                                             browser):
    page.goto(app_server)
    name = page.get_by_role("textbox", name="Your name (reviewer)")
    expect(name).to_be_visible(timeout=45_000)
    expect(name).to_have_value("")
    name.fill("Ana Souza")
    name.press("Enter")
    # exact: matched as a case-blind substring, the caption shown before the name is saved
    # ("... it is remembered on this computer") passed at once and the reload raced the save
    expect(page.get_by_text("Remembered on this computer; change it here at any time.",
                            exact=True)).to_be_visible(timeout=30_000)
    page.reload()
    expect(page.get_by_role("textbox", name="Your name (reviewer)")).to_have_value(
        "Ana Souza", timeout=45_000)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_role("link", name="Settings", exact=True).click()
    people_heading = page.get_by_role("heading", name="People and roles")
    expect(people_heading).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Local mode: no sign-in")).to_be_visible()
    people_heading.scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "local-settings-people.png"))
    other = browser.new_context().new_page()  # a browser restart: no cookies, no session
    other.goto(app_server)
    expect(other.get_by_role("textbox", name="Your name (reviewer)")).to_have_value(
        "Ana Souza", timeout=45_000)
    other.context.close()


def test_with_two_providers_a_person_signs_in_through_the_one_they_pick(tmp_path_factory,
                                                                       loopback_page):
    """[auth.corp] and [auth.partner]: one button each; the second provider's sign-in works
    and the person is who that provider says."""
    data_dir = tmp_path_factory.mktemp("two-providers")
    port = _free_port()
    app_url = f"http://localhost:{port}"
    redirect = f"{app_url}/oauth2callback"
    corp = oidc_provider.start(redirect, log=data_dir / "corp.log")
    partner = oidc_provider.start(redirect, log=data_dir / "partner.log")
    client = (f'client_id = "{oidc_provider.CLIENT_ID}"\n'
              f'client_secret = "{oidc_provider.CLIENT_SECRET}"\n'
              'client_kwargs = { prompt = "login" }\n')
    secrets = data_dir / "secrets.toml"
    secrets.write_text(
        f'[auth]\nredirect_uri = "{redirect}"\n'
        'cookie_secret = "test-only-cookie-secret-0123456789abcdef"\n'
        f'[auth.corp]\n{client}server_metadata_url = "{corp.metadata_url}"\n'
        f'[auth.partner]\n{client}server_metadata_url = "{partner.metadata_url}"\n')
    _, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_ADMINS": ADMIN}, port=port,
                     extra_args=("--secrets.files", str(secrets)))
    try:
        page = loopback_page
        page.goto(app_url)
        expect(page.get_by_role("button", name="Sign in with Corp")).to_be_visible(
            timeout=45_000)
        page.get_by_role("button", name="Sign in with Partner").click()
        page.wait_for_url(f"{partner.issuer}/interaction/**", timeout=30_000)
        page.locator("input[name=login]").fill(ADMIN)
        page.locator("input[name=password]").fill("any password")
        page.locator("button[type=submit]").click()
        expect(page.get_by_text(shown(f"{ADMIN} · admin"))).to_be_visible(timeout=30_000)
        expect(page.get_by_role("link", name="Rubrics", exact=True)).to_be_visible()
        _shot(page, "signin-two-providers")
    finally:
        stop()
        corp.stop()
        partner.stop()


def test_a_browser_on_another_address_than_redirect_uri_is_sent_to_the_right_one(
        team_app, loopback_page):
    """Signing in from 127.0.0.1 when redirect_uri is on localhost loses the sign-in cookie:
    the page offers the right address instead of a sign-in that would have to be redone."""
    app_url, _, _ = team_app
    page = loopback_page
    other = app_url.replace("localhost", "127.0.0.1")
    page.goto(other)
    expect(page.get_by_text("Sign-in works only at")).to_be_visible(timeout=45_000)
    expect(page.get_by_role("button", name=SIGN_IN)).to_have_count(0)
    link = page.get_by_role("link", name=f"Open {app_url}/")
    expect(link).to_have_attribute("href", f"{app_url}/")
    _shot(page, "signin-wrong-address")
    page.goto(link.get_attribute("href"))  # (the link opens a new tab)
    page.get_by_role("button", name=SIGN_IN).click(timeout=45_000)
    page.wait_for_url("**/interaction/**", timeout=30_000)
    page.locator("input[name=login]").fill("newcomer@example.org")  # no role in any test
    page.locator("input[name=password]").fill("any password")
    page.locator("button[type=submit]").click()
    # Once: straight back, signed in (no role yet), not asked to sign in again.
    expect(page.get_by_text("you have no role yet")).to_be_visible(timeout=30_000)
    expect(page.get_by_text(shown("You are signed in as newcomer@example.org"))).to_be_visible()


def test_a_secrets_file_that_is_not_toml_is_a_page_saying_so(tmp_path_factory, page):
    data_dir = tmp_path_factory.mktemp("bad-toml")
    secrets = data_dir / "secrets.toml"
    secrets.write_text('[auth\nredirect_uri = "http://localhost:8501/oauth2callback"\n')
    url, stop = _serve(data_dir, extra_args=("--secrets.files", str(secrets)))
    try:
        page.goto(url)
        # Not "configured but incomplete": whether sign-in is on cannot be known.
        expect(page.get_by_text("The settings file cannot be read", exact=True)
               ).to_be_visible(timeout=45_000)
        expect(page.get_by_text("Sign-in is configured but cannot work yet")).to_have_count(0)
        expect(page.get_by_text("it stays closed until the file is fixed")).to_be_visible()
        expect(page.get_by_text("fix the TOML syntax")).to_be_visible()
        expect(page.get_by_role("link", name="Rubrics", exact=True)).to_have_count(0)
        expect(page.get_by_text("Traceback")).to_have_count(0)
        _shot(page, "signin-bad-toml")
    finally:
        stop()


def test_an_unverified_admin_address_gets_no_role_and_the_page_says_why(team_app,
                                                                        loopback_page,
                                                                        browser):
    """The provider sends the admin's address for Eve but does not vouch for it: she is not
    the admin, she sees why and which key an admin can give a role; then she gets in as
    herself, never as the admin."""
    app_url, data_dir, issuer = team_app
    eve = loopback_page
    eve.set_viewport_size({"width": 1280, "height": 800})
    _sign_in(eve, app_url, "eve")
    expect(eve.get_by_text("Your provider did not verify your e-mail address")).to_be_visible(
        timeout=30_000)
    expect(eve.get_by_text(shown(f"You signed in with the address {ADMIN}"))).to_be_visible()
    eve_key = f"subject:{issuer}#eve"
    expect(eve.get_by_text(eve_key, exact=True)).to_be_visible()
    expect(eve.get_by_role("link", name="Rubrics", exact=True)).to_have_count(0)
    expect(eve.get_by_role("link", name="Settings", exact=True)).to_have_count(0)
    expect(eve.get_by_text(shown(f"{ADMIN} · admin"))).to_have_count(0)
    expect(eve.get_by_text("Traceback")).to_have_count(0)
    _shot(eve, "signin-unverified-email")

    # A provider that sends no email_verified at all vouches for nothing either.
    mallory = _person(browser)
    _sign_in(mallory, app_url, "mallory")
    expect(mallory.get_by_text("Your provider did not verify your e-mail address")
           ).to_be_visible(timeout=30_000)
    expect(mallory.get_by_role("link", name="Rubrics", exact=True)).to_have_count(0)
    mallory.context.close()

    # The real admin gives Eve's subject (not the address) the reviewer role.
    boss = _person(browser)
    _sign_in(boss, app_url, ADMIN)
    expect(boss.get_by_text(shown(f"{ADMIN} · admin"))).to_be_visible(timeout=30_000)
    boss.get_by_role("link", name="Settings", exact=True).click()
    expect(boss.get_by_role("heading", name="People and roles")).to_be_visible(timeout=30_000)
    wait_idle(boss)
    boss.get_by_role("textbox", name="E-mail").fill(eve_key)
    boss.get_by_role("button", name="Save role").click()
    expect(boss.get_by_text(shown(f"{eve_key} is now reviewer"))).to_be_visible(timeout=30_000)
    boss.context.close()

    eve.get_by_role("button", name="Check again").click()
    expect(eve.get_by_text(shown(f"{eve_key} · reviewer"))).to_be_visible(timeout=30_000)
    expect(eve.get_by_role("link", name="Results", exact=True)).to_be_visible()
    expect(eve.get_by_text(shown(f"{ADMIN} · admin"))).to_have_count(0)
    # Still a reviewer: an admin action is refused.
    eve.get_by_role("button", name="Load sample rubric and responses").click()
    expect(eve.get_by_text("may not load the samples: that needs an admin")).to_be_visible(
        timeout=30_000)

    sessions = open_database(database_url_in(data_dir))
    assert not [p for p in people.list_people(sessions) if p.name in ("Eve", "Mallory")
                and "@" in p.key]  # the admin's address never became theirs


@pytest.mark.parametrize("kind", BROKEN)
def test_a_team_app_with_a_broken_secrets_file_stays_closed(tmp_path_factory, page, kind):
    """Each of these once opened the app to anyone with every role (local mode), although
    RUBRIC_WORKBENCH_ADMINS named the team's admin: now a page names the file and the fix."""
    data_dir = tmp_path_factory.mktemp(f"broken-{kind}")
    path, named = broken(data_dir, kind)
    url, stop = _serve(data_dir, {"RUBRIC_WORKBENCH_ADMINS": ADMIN},
                       extra_args=("--secrets.files", str(path)))
    try:
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(url)
        expect(page.get_by_text(named)).to_be_visible(timeout=45_000)
        expect(page.get_by_text(str(path)).first).to_be_visible()
        expect(page.get_by_role("textbox", name="Your name (reviewer)")).to_have_count(0)
        expect(page.get_by_role("link", name="Rubrics", exact=True)).to_have_count(0)
        expect(page.get_by_role("button", name="Load sample rubric and responses")
               ).to_have_count(0)
        expect(page.get_by_text("Traceback")).to_have_count(0)
        expect(page.locator("code").filter(has_text="server_metadata_url")).to_be_visible()
        _shot(page, f"signin-broken-{kind}")
    finally:
        stop()
