"""User and model text shown as the characters they are, wherever the app draws it.

Two dangers, one helper each:

- Markdown. Streamlit renders titles, captions, messages, toasts, labels and popovers as
  markdown, with its own extensions on top. Backslash escapes stop markup (``**``, ``#``,
  links, ``:red[...]`` directives, HTML, ``$`` maths), but shortcodes (``:material/home:``,
  ``:smile:``, ``:streamlit:``) are replaced in the *text* after the escapes are undone, so
  an escaped colon still becomes an icon. A WORD JOINER (U+2060, invisible, no width) after
  every colon that could open a shortcode keeps the pattern from matching.
- Autolinks. GitHub-flavoured markdown turns bare e-mail addresses and ``www.`` names into
  links, again in the text after the escapes are undone: "ana@example.org is now reviewer."
  would show a mailto link. A WORD JOINER after every ``@`` and after a ``www`` before a dot
  keeps those patterns from matching (``http://`` is already broken by the colon's joiner).
  People who copy such an address get the joiner too: the services that take an e-mail
  drop it (storage.services.people.person_key).
- Bidirectional controls. A right-to-left override (U+202E) in a model's output reverses the
  rest of its line on screen; the isolates and embeddings do the same more quietly. They are
  shown as a visible marker, e.g. ``⟨U+202E⟩``, in markdown and in plain text (``st.text``,
  ``st.code``, table cells) alike.
"""

from __future__ import annotations

import re

# Embeddings, overrides, isolates and the implicit marks: every character that changes the
# direction of the text around it (Unicode TR9).
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Every ASCII punctuation character may be backslash-escaped in CommonMark.
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
WORD_JOINER = "\u2060"
# A colon that could open a shortcode: followed by something other than a space or the end
# ("Nothing was written: x" keeps its plain colon, so people can copy and find the text).
_OPENING_COLON = re.compile(r"\\:(?=\S)")
# Where remark-gfm's autolink-literal search could start a link in the unescaped text: the
# "@" of an e-mail address, the "www" of a host name.
_AUTOLINK_START = re.compile(r"(\\@|www(?=\\\.))", re.IGNORECASE)


def _marker(match: re.Match[str]) -> str:
    return f"⟨U+{ord(match.group(0)):04X}⟩"


def text(value: object) -> str:
    """For places that do not read markdown (st.text, st.code, table cells, options):
    direction controls made visible, everything else untouched."""
    return _BIDI.sub(_marker, "" if value is None else str(value))


def md(value: object) -> str:
    """For places that read markdown: one line of literal text (whitespace runs become one
    space), no markup, no icons, no direction controls."""
    flat = " ".join(text(value).split())
    escaped = _PUNCTUATION.sub(r"\\\1", flat)
    joined = _OPENING_COLON.sub("\\\\:" + WORD_JOINER, escaped)
    return _AUTOLINK_START.sub(lambda found: found.group(0) + WORD_JOINER, joined)


def md_lines(value: object) -> str:
    """Like ``md`` but keeps line breaks (for a note of several lines inside markdown)."""
    return "  \n".join(md(line) for line in text(value).splitlines())
