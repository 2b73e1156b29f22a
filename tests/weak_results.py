"""What a function of ours returns, watched without being kept: each call's result as a weak
reference, to see whether the app still holds it later (issue 41: the app's memory). The
function itself runs as before."""

from __future__ import annotations

import weakref


def watch_results(monkeypatch, module, name: str) -> list[weakref.ref]:
    """``module.name`` wrapped for the test: returns what it returned, and appends a weak
    reference to it to the list returned here."""
    made: list[weakref.ref] = []
    real = getattr(module, name)

    def watched(*args, **kwargs):
        found = real(*args, **kwargs)
        made.append(weakref.ref(found))
        return found

    monkeypatch.setattr(module, name, watched)
    return made
