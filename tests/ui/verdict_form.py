"""Drive the Review page's verdict form in AppTest: read what the browser form is given, and
send a save the way the browser does (its JavaScript is covered by tests/e2e/test_review_keys.py;
AppTest runs no JavaScript)."""

from __future__ import annotations

import json
from itertools import count

from streamlit.testing.v1 import AppTest

_ids = count(1)


def parts(at: AppTest) -> list[dict]:
    """The data of every part of the verdict form on the page, in page order."""
    found = []
    for element in at.get("bidi_component"):
        proto = element.proto
        raw = proto.mixed.json if proto.WhichOneof("data") == "mixed" else proto.json
        data = json.loads(raw)
        if data.get("part"):
            found.append(data)
    return found


def form(at: AppTest) -> dict:
    [keys] = [p for p in parts(at) if p["part"] == "keys"]
    return keys


def answer(at: AppTest, criterion_id: int) -> str | None:
    """The answer the form shows for a criterion (what it starts from)."""
    [criterion] = [c for c in form(at)["criteria"] if c["id"] == criterion_id]
    return criterion["initial"]


def submit(at: AppTest, answers: dict[int, str | tuple[str, str]], *,
           advance: bool = False) -> AppTest:
    """Save as the browser does: the whole form (what it started from, with ``answers``
    changed), one submission, then the rerun it causes."""
    data = form(at)
    given = {c["id"]: (c["initial"], c["note"]) for c in data["criteria"] if c["initial"]}
    for cid, value in answers.items():
        given[cid] = value if isinstance(value, tuple) else (value, "")
    at.session_state["review_submitted"] = {
        "id": f"{data['form']}#{next(_ids)}", "form": data["form"], "advance": advance,
        "answers": [{"criterion": cid, "answer": a, "note": n} for cid, (a, n) in given.items()],
    }
    return at.run()
