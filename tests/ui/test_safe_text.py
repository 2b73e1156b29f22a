"""ui.safe_text: user and model text shown as the characters they are (issue 9 item 8)."""

from __future__ import annotations

import re

import pytest

from tests.ui.pages import unescape
from ui import safe_text

WJ = safe_text.WORD_JOINER
# What Streamlit's markdown turns into icons, emoji and coloured text *after* undoing escapes.
SHORTCODE = re.compile(r":[\w/+-]+:|:material_\w+:|:streamlit:")


@pytest.mark.parametrize("raw", [
    pytest.param(":material/home:", id="material-icon"),
    pytest.param(":smile: and :+1:", id="emoji-shortcodes"),
    pytest.param(":streamlit:", id="streamlit-logo"),
    pytest.param(":red[alarm] :blue-badge[x]", id="colour-directives"),
    pytest.param("**bold** _it_ `code` # heading", id="emphasis-and-heading"),
    pytest.param("[link](http://example.invalid) <b>tag</b> $x^2$", id="link-html-maths"),
    pytest.param("- item\n1. item\n> quote", id="block-markup-on-one-line"),
    pytest.param("back\\slash \\:material/home\\:", id="pre-escaped"),
])
def test_markdown_text_reads_back_as_typed_and_cannot_form_a_shortcode(raw):
    shown = safe_text.md(raw)
    assert unescape(shown) == " ".join(raw.split())
    # After the markdown parser undoes the escapes, no shortcode pattern is left.
    assert not SHORTCODE.search(re.sub(r"\\(.)", r"\1", shown))
    assert "\n" not in shown


def test_every_colon_is_followed_by_a_word_joiner():
    assert safe_text.md("a:b") == f"a\\:{WJ}b"


@pytest.mark.parametrize("control, name", [
    ("\u202e", "U+202E"), ("\u202d", "U+202D"), ("\u2067", "U+2067"), ("\u200f", "U+200F"),
    ("\u061c", "U+061C"), ("\u2069", "U+2069"),
])
def test_direction_controls_are_shown_not_obeyed(control, name):
    text = f"total: 10{control}01 dollars"
    assert safe_text.text(text) == f"total: 10⟨{name}⟩01 dollars"
    assert control not in safe_text.md(text) and f"⟨{name}⟩" in unescape(safe_text.md(text))


def test_plain_text_keeps_everything_else_and_none_is_empty():
    text = "line one\n  **not bold** :material/home: <b>"
    assert safe_text.text(text) == text
    assert safe_text.text(None) == ""
    # a colon that could open a shortcode gets the joiner; one before a space or the end not
    assert safe_text.md_lines("a\n:b:") == f"a  \n\\:{WJ}b\\:"
    assert safe_text.md("Note: :x: here") == f"Note\\: \\:{WJ}x\\: here"


@pytest.mark.parametrize("raw", [
    pytest.param("ana@example.org is now reviewer.", id="email"),
    pytest.param("see www.example.org or WWW.Example.org", id="www-host"),
    pytest.param("https://example.org/x", id="url"),
])
def test_addresses_read_back_as_typed_but_cannot_become_links(raw):
    shown = safe_text.md(raw)
    assert unescape(shown) == raw
    parsed = re.sub(r"\\(.)", r"\1", shown)  # the text in which remark-gfm looks for links
    assert not re.search(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+", parsed)
    assert not re.search(r"https?://|www(?=\.)", parsed, re.IGNORECASE)
