"""Readers keyed by a data stamp keep the newest stamp's entry of each view only.

A stamp moves with every grade and every verdict; the cached readers of a page keep an entry
per stamp until their time to live runs out or their room is full. At 100,000 responses an
entry is tens of megabytes (the Agreement report, the judges' inputs, the trust report's
judges' share), and the app process kept every stamp's beside the newest (issue 41: the app in
a browser held 870 MB after a grade and a verdict, not 500). So a reader calls ``newest_only``
when it computes (a cache miss: a stamp it has not seen): the entry it kept for the same view
at another stamp is dropped first, before the new one is made. A page still reading an older
stamp (a run that began before the stamp moved) makes that entry again, and the next reader
at the newest stamp drops it: nothing is wrong, something is read twice.
"""

from __future__ import annotations

import threading

from grading.memory import give_back

_lock = threading.Lock()
_held: dict[tuple, tuple] = {}  # (reader, the view's arguments) -> its kept entry's arguments
_computed = [False]  # a reader computed since the heap was last trimmed


def newest_only(reader, args: tuple, stamp_at: int, defaults_from: int | None = None) -> None:
    """``reader`` (a Streamlit-cached function) is computing ``args`` (all its arguments,
    each one Streamlit does not hash given as None), whose ``stamp_at``-th is the stamp: the
    entry it kept for the same other arguments at another stamp is cleared. Arguments from
    ``defaults_from`` on have defaults: Streamlit keys a call by the arguments given, so the
    entry is cleared as called with and without them."""
    view = (reader.__qualname__, args[:stamp_at] + args[stamp_at + 1:])
    with _lock:
        before = _held.get(view)
        _held[view] = args
        _computed[0] = True
    if before is not None and before != args:
        _clear(reader, before, defaults_from)


def drop_moved(reader, before: tuple, stamp_at: int, stamp, defaults_from: int | None = None
               ) -> None:
    """Clear every entry ``reader`` computed (through ``newest_only``) whose first
    arguments are ``before`` and whose stamp (its ``stamp_at``-th) is not ``stamp``: what a
    reader keyed by the judges' stamp kept when that stamp has moved, dropped when the
    report of the new stamp is made rather than when its own tab is next opened (the trust
    report's judges' share is ~20 MB at 100,000 responses, and was held beside the new
    report's making). ``defaults_from`` as ``newest_only``."""
    with _lock:
        moved = [(view, args) for view, args in _held.items()
                 if view[0] == reader.__qualname__ and args[:len(before)] == before
                 and args[stamp_at] != stamp]
        for view, _args in moved:
            del _held[view]
    for _view, args in moved:
        _clear(reader, args, defaults_from)


def _clear(reader, args: tuple, defaults_from: int | None) -> None:
    """Clear ``reader``'s entry of ``args``, as called with and without the arguments from
    ``defaults_from`` on (Streamlit keys a call by the arguments given)."""
    for given in range(len(args), (defaults_from or len(args)) - 1, -1):
        reader.clear(*args[:given])


def trim_after_computing() -> None:
    """At the end of a page's run: when a reader computed in it (or another's since), the
    heap's freed pages go back to the system (``grading.memory.give_back``, a few ms): a
    report's making frees tens of megabytes that the process would go on holding."""
    with _lock:
        computed, _computed[0] = _computed[0], False
    if computed:
        give_back()
