"""A page's view in its URL (``st.query_params``), so a reload or a copied link shows the same
view, and in the session, so leaving the page and coming back does too.

A page lists its fields: the query parameter, the session_state key its widget uses, and a
codec (text <-> value). ``restore`` runs once at the top of the page: it applies the URL when
the URL is not one this session wrote (a reload, an opened link), else the view the
page had when it was left (Streamlit empties the URL and drops widget values on a page
change). Values that cannot be read are dropped with a note (``notes``), never a traceback.
``save`` runs at the end of the page: the values now in session_state, written to the URL
(defaults left out, so a plain view has a plain URL). Ids that no longer exist are the
page's to drop (it knows the options): it calls ``note``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui.state import DEFAULTS

MAX_TEXT = 500  # characters of a typed value kept from a URL
# Each rerun carries the URL the browser shows, and a rerun asked for (a key typed, a widget
# changed) before the browser applied the page's last write carries an older URL of this
# session's own. The URLs this session wrote lately are remembered so that such an echo is
# never taken for a link (it would put back the view of a moment ago and lose the change).
WRITTEN_KEPT = 32


class Unreadable(ValueError):
    """A URL value that does not fit its field."""


@dataclass(frozen=True)
class Field:
    param: str  # the query parameter
    key: str  # the session_state key (a widget's key)
    read: Callable[[str], Any]  # text -> value; raises Unreadable (or ValueError)
    write: Callable[[Any], str] = str
    label: str = ""  # what the note calls it

    @property
    def name(self) -> str:
        return self.label or self.param


def integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def read(text: str) -> int:
        value = int(text)
        if (low is not None and value < low) or (high is not None and value > high):
            raise Unreadable(text)
        return value
    return read


def number(low: float, high: float) -> Callable[[str], float]:
    def read(text: str) -> float:
        value = float(text)
        if not low <= value <= high:
            raise Unreadable(text)
        return value
    return read


def flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise Unreadable(text)
    return text == "1"


def write_flag(value: Any) -> str:
    return "1" if value else "0"


def choice(options: Iterable[Any]) -> Callable[[str], Any]:
    """One of ``options``, written as ``str(option)``."""
    by_text = {str(o): o for o in options}

    def read(text: str) -> Any:
        if text not in by_text:
            raise Unreadable(text)
        return by_text[text]
    return read


def text(value: str) -> str:
    return value[:MAX_TEXT]


def id_list(value: str) -> list[int]:
    ids = [int(part) for part in value.split(",") if part]
    if any(i < 1 for i in ids):
        raise Unreadable(value)
    return list(dict.fromkeys(ids))


def write_ids(value: Any) -> str:
    return ",".join(str(i) for i in value)


def int_pair(value: str) -> tuple[int, int]:
    first, second = value.split("-")
    return int(first), int(second)


def write_pair(value: Any) -> str:
    return f"{value[0]}-{value[1]}"


def score_range(value: str) -> tuple[float, float]:
    low, high = (float(part) for part in value.split("-"))
    if not 0.0 <= low <= high <= 1.0:
        raise Unreadable(value)
    return low, high


def int_or_text(value: str) -> int | str:
    """A run id (an int) or a panel option (``panel:<id>``) of the Results pickers."""
    if value.startswith("panel:"):
        integer(1)(value.removeprefix("panel:"))
        return value
    return integer(0)(value)


def _state(page: str) -> dict:
    """{"written": params this session last wrote, "kept": the page's values when left,
    "history": the params it wrote lately, newest last}."""
    return st.session_state.setdefault(f"url_state_{page}",
                                       {"written": None, "kept": None, "history": []})


def _apply(fields: Sequence[Field], params: dict[str, str]) -> list[str]:
    s, notes = st.session_state, []
    for field in fields:
        if field.param not in params:
            s[field.key] = DEFAULTS.get(field.key, s.get(field.key))
            continue
        try:
            s[field.key] = field.read(params[field.param])
        except (ValueError, TypeError):
            notes.append(f"the {field.name} “{params[field.param][:40]}”")
    return notes


def entering(page_path: str) -> None:
    """Called by the entry script on every run with the page about to run: whether this run
    enters that page (the session's first run, or the one after another page's)."""
    s = st.session_state
    s["url_state_entered"] = s.get("url_state_page") != page_path
    s["url_state_page"] = page_path


def forget(page: str) -> None:
    """A hand-off from another page set the page's values: the next visit shows those, not
    the view the page had when it was left."""
    _state(page)["kept"] = None


def restore(page: str, fields: Sequence[Field]) -> None:
    """At the top of the page, before any of its widgets."""
    memory = _state(page)
    st.session_state[f"url_state_{page}_notes"] = []
    mine = {f.param for f in fields}
    current = {k: st.query_params[k] for k in st.query_params if k in mine}
    entered = st.session_state.get("url_state_entered", True)
    if current and current != memory["written"] and current not in memory["history"]:
        unread = _apply(fields, current)  # a reload or a link
        memory["from_url"] = True
        if unread:
            note(page, "The link's " + ", ".join(unread) + " could not be read: "
                 "left at the default.")
    elif entered and memory["kept"] is not None:
        _apply(fields, memory["kept"])  # back from another page
        memory["from_url"] = False
    else:
        memory["from_url"] = False


def from_url(page: str) -> bool:
    """Whether this run's values came from the URL (a link or a reload)."""
    return bool(_state(page).get("from_url"))


def note(page: str, message: str) -> None:
    st.session_state.setdefault(f"url_state_{page}_notes", []).append(message)


def notes(page: str) -> list[str]:
    return list(st.session_state.get(f"url_state_{page}_notes", []))


def _is_default(value: Any, default: Any) -> bool:
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return tuple(value) == tuple(default)
    return bool(value == default)


def save(page: str, fields: Sequence[Field]) -> None:
    """At the end of the page: the values in session_state, into the URL and the session."""
    s = st.session_state
    params: dict[str, str] = {}
    for field in fields:
        if field.key not in s:
            continue
        value = s[field.key]
        if value is None or _is_default(value, DEFAULTS.get(field.key, object())):
            continue
        params[field.param] = field.write(value)
    memory = _state(page)
    memory["written"] = memory["kept"] = params
    history = memory.setdefault("history", [])
    if params not in history:
        history.append(params)
        del history[:-WRITTEN_KEPT]
    current = {k: st.query_params[k] for k in st.query_params}
    if current != params:
        st.query_params.from_dict(params)
