"""The JSONL lines of the records nobody reviewed (storage/export_rows.py), written from
their columns: the parts every record of a run or panel shares (its ids, names, each
criterion's id, name, requirement and weight) encoded once, each record's own values
encoded as ``json.dumps`` encodes them. The line is ``json.dumps`` of the record the dict
builder gives, byte for byte (tests/storage/test_export_rows.py): same keys, same order,
same separators, ``ensure_ascii=False``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) uses
from typing import Any

from storage.dto import CriterionInfo

# ``json.dumps(item, ensure_ascii=False)`` without building an encoder per call
dumps = json.JSONEncoder(ensure_ascii=False).encode


def value(item: Any) -> str:
    """``json.dumps(item, ensure_ascii=False)``; strings, None, booleans, integers and
    finite floats written as its encoder writes them, without the call."""
    kind = type(item)
    if kind is str:
        return encode_basestring(item)
    if item is None:
        return "null"
    if kind is int:
        return int.__repr__(item)
    if kind is float and item - item == 0.0:  # not NaN nor infinite: json's float.__repr__
        return float.__repr__(item)
    if kind is bool:
        return "true" if item else "false"
    return json.dumps(item, ensure_ascii=False)


def fields(items: dict[str, Any]) -> str:
    """``"key": value, ...`` of these fields, as inside ``json.dumps`` of a record."""
    return json.dumps(items, ensure_ascii=False)[1:-1] if items else ""


def criterion_prefixes(criteria: Sequence[CriterionInfo]) -> list[tuple[int, str]]:
    """Per criterion of the version: its id and its record up to the judge's verdict."""
    return [(c.id, "{" + fields({"criterion_id": c.id, "name": c.label,
                                 "requirement": c.requirement, "weight": c.weight})
             + ', "judge_verdict": ') for c in criteria]


# after the judge's verdict, reason and error of a criterion nobody reviewed
UNREVIEWED = (', "human_verdict": null, "human_note": null, "effective_verdict": ')
NOT_REVIEWED = ', "reviewer": null, "human_status": "not_reviewed"'


def judge_criterion(prefix: str, choice: str | None, reason: Any, error: Any) -> str:
    """A criterion nobody reviewed: the judge's choice is the one in effect."""
    encoded = value(choice)
    return "".join((prefix, encoded, ', "reason": ', value(reason), ', "judge_error": ',
                    value(error), UNREVIEWED, encoded, NOT_REVIEWED, "}"))


def run_line(head: str, key: str, response_id: int, scope: str, score: Any, raw: Any,
             error: str, shown: str, texts: str, upload: dict[str, Any] | None,
             criteria: str) -> str:
    """A run's record nobody reviewed: ``head`` (``{"run_id": ..., "run_name": ...``),
    ``scope`` and ``shown`` (its calibration fields) as ``fields`` writes them; ``key``,
    ``error``, ``texts`` and ``criteria`` as JSON already (storage/export_sql.py)."""
    return "".join((head, ', "response_id": ', key, ', "workbench_response_id": ',
                    int.__repr__(response_id), ", ", scope, _figures(score, raw, error),
                    shown, texts, dumps(dict(upload or {})),
                    ', "criteria": [', criteria, "]}"))


def panel_line(head: str, key: str, response_id: int, scope: str, score: Any, raw: Any,
               error: str, members: str, ties: int, cost: Any, calibration: str, texts: str,
               upload: dict[str, Any] | None, criteria: str) -> str:
    """A panel's record nobody reviewed (its decision settled), as ``run_line``."""
    return "".join((head, ', "response_id": ', key, ', "workbench_response_id": ',
                    int.__repr__(response_id), ", ", scope, _figures(score, raw, error),
                    members, int.__repr__(ties), ', "cost": ', value(cost),
                    ', "complete": true, "pending_members": ""', calibration, texts,
                    dumps(dict(upload or {})), ', "criteria": [',
                    criteria, "]}"))


def _figures(score: Any, raw: Any, error: str) -> str:
    """The scores of a record nobody reviewed (effective = the judge's)."""
    encoded_score, encoded_raw = value(score), value(raw)
    return "".join((
        ', "score": ', encoded_score, ', "raw_score": ', encoded_raw,
        ', "effective_score": ', encoded_score, ', "effective_raw_score": ', encoded_raw,
        ', "error": ', error,
        ', "reviewed_criteria": 0, "disputed_count": 0, "disputed_criteria": []'))
