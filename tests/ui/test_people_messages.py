"""People's names in messages are text: an e-mail address never becomes a mailto link.

Streamlit's markdown (remark-gfm) turns bare e-mail addresses and www names into links in the
text *after* backslash escapes are undone, so escaping alone does not stop it. The patterns
below are remark-gfm's autolink-literal ones (mdast-util-gfm-autolink-literal), applied to
the text as the browser's parser sees it.
"""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from storage.local_identity import remember_name
from storage.services import people
from storage.services.reviewers import Role, local_actor
from tests.ui.pages import db, open_page, unescape

EMAIL_LINK = re.compile(r"(?:^|(?<=[\s\W]))[-.\w+]+@[-\w]+(?:\.[-\w]+)+")
URL_LINK = re.compile(r"(?:https?://|www(?=\.))[-.\w]+", re.IGNORECASE)
# markdown link syntax and angle-bracket autolinks, before escapes are undone
MARKDOWN_LINK = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\(|(?<!\\)<[^>\s]+@[^>\s]+(?<!\\)>")


def _as_parsed(markdown: str) -> str:
    """The text node the browser's markdown parser builds: escapes undone, joiners kept."""
    return re.sub(r"\\(.)", r"\1", markdown)


def assert_no_link(markdown: str) -> None:
    assert not MARKDOWN_LINK.search(markdown), markdown
    parsed = _as_parsed(markdown)
    assert not EMAIL_LINK.search(parsed), f"an e-mail would be a mailto link: {parsed!r}"
    assert not URL_LINK.search(parsed), f"a name would be a web link: {parsed!r}"


def test_the_link_check_catches_what_the_browser_would_link():
    # the check itself can fail: a bare or escaped address is what the browser links
    for shown in ("ana@example.org is now reviewer.", r"ana\@example\.org is now reviewer\.",
                  r"see www\.example\.org"):
        try:
            assert_no_link(shown)
        except AssertionError:
            continue
        raise AssertionError(f"not caught: {shown}")


def _role_change_app() -> AppTest:
    """The People page's own handler and message, as the role form calls them."""

    def script() -> None:
        import streamlit as st

        from ui import people_admin
        from ui.state import init_state

        init_state()
        if st.button("save"):
            people_admin.handle_set_role(st.session_state.get("who", ""), "reviewer")
        people_admin.render_flash()

    return AppTest.from_function(script, default_timeout=30)


def test_the_is_now_reviewer_message_shows_an_email_as_text():
    at = _role_change_app().run()
    at.session_state["who"] = "Rita.Lopes@example.org"
    at.button[0].click().run()
    assert not at.exception, at.exception
    [message] = at.success
    assert unescape(message.value) == "rita.lopes@example.org is now reviewer."
    assert_no_link(message.value)


def test_a_refused_role_change_shows_the_typed_text_as_text():
    at = _role_change_app().run()
    at.session_state["who"] = "[ana](https://evil.example) www.evil.example"
    at.button[0].click().run()
    [message] = at.error
    assert "is not an e-mail address" in unescape(message.value)
    assert_no_link(message.value)


def test_an_address_copied_from_a_message_finds_the_same_person():
    at = _role_change_app().run()
    at.session_state["who"] = "rita@example.org"
    at.button[0].click().run()
    copied = _as_parsed(at.success[0].value).split(" ")[0]  # what a person selects and copies
    assert "\u2060" in copied  # the joiner is invisible but is copied with the text
    again = people.set_role(db(), copied, Role.ADJUDICATOR, actor=local_actor("Admin"))
    assert again.key == "rita@example.org"
    assert [(p.key, p.role) for p in people.list_people(db())] == [
        ("rita@example.org", "adjudicator")]


def test_a_local_name_that_is_an_email_is_text_on_the_settings_page():
    remember_name("ana@example.org")
    at = open_page("settings")
    captions = [c.value for c in at.caption if "Local mode" in unescape(c.value)]
    assert captions and "you (ana@example.org) hold every role" in unescape(captions[0])
    assert_no_link(captions[0])


def test_a_storage_refusal_at_the_page_boundary_shows_its_names_as_text():
    def script() -> None:
        from storage.errors import InvalidStateError
        from ui.boundary import page_boundary

        with page_boundary(lambda: None):
            raise InvalidStateError("the rubric '**Ana** ana@example.org' was archived")

    at = AppTest.from_function(script, default_timeout=30).run()
    [error] = at.error
    assert unescape(error.value) == ("the rubric '**Ana** ana@example.org' was archived. "
                                     "Reload the page to see the current state.")
    assert "**Ana**" not in error.value
    assert_no_link(error.value)


def test_the_activity_table_shows_names_with_direction_controls_made_visible():
    from grading.types import Criterion
    from storage.services import rubrics

    remember_name("Ana\u202eevil")
    version = rubrics.create_rubric(db(), "Refunds\u202etxt.exe", [Criterion(requirement="x")],
                                    actor=local_actor("Ana\u202eevil"))
    rubrics.archive_rubric(db(), version.rubric_id, actor=local_actor("Ana\u202eevil"))
    at = open_page("settings")
    activity = next(f.value for f in at.dataframe if "Who" in f.value.columns)
    row = activity.iloc[0]
    assert row["Who"] == "Ana⟨U+202E⟩evil"
    assert row["On"] == "rubric Refunds⟨U+202E⟩txt.exe"
