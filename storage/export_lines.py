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
_UNREVIEWED = (', "human_verdict": null, "human_note": null, "effective_verdict": ')
_NOT_REVIEWED = ', "reviewer": null, "human_status": "not_reviewed"'


def judge_criterion(prefix: str, choice: str | None, reason: Any, error: Any) -> str:
    """A criterion nobody reviewed: the judge's choice is the one in effect."""
    encoded = value(choice)
    return "".join((prefix, encoded, ', "reason": ', value(reason), ', "judge_error": ',
                    value(error), _UNREVIEWED, encoded, _NOT_REVIEWED, "}"))


def panel_criterion(prefix: str, choice: str | None, note: Any, error: str | None,
                    tie: Any, members: str) -> str:
    """A panel's criterion nobody reviewed, with its tie and its members' verdicts."""
    encoded = value(choice)
    return "".join((prefix, encoded, ', "reason": ', value(note), ', "judge_error": ',
                    value(error), _UNREVIEWED, encoded, _NOT_REVIEWED, ', "tie": ',
                    value(tie), ', "members": ', value(members), "}"))


def texts(query: Any, output: Any, thinking: Any, reference: Any,
          metadata: dict[str, Any] | None) -> str:
    """The response as uploaded, between the record's figures and its criteria."""
    return "".join((', "query": ', value(query), ', "response_text": ', value(output),
                    ', "thinking": ', value(thinking), ', "reference": ', value(reference),
                    ', "upload": ', json.dumps(dict(metadata or {}), ensure_ascii=False)))


def figures(response_key: str, response_id: int, score: Any, raw: Any, error: Any
            ) -> tuple[str, str]:
    """The ids, and the scores, of a record nobody reviewed (effective = the judge's)."""
    encoded_score, encoded_raw = value(score), value(raw)
    return "".join((', "response_id": ', value(response_key), ', "workbench_response_id": ',
                    value(response_id), ", ")), "".join((
        ', "score": ', encoded_score, ', "raw_score": ', encoded_raw,
        ', "effective_score": ', encoded_score, ', "effective_raw_score": ', encoded_raw,
        ', "error": ', value(error),
        ', "reviewed_criteria": 0, "disputed_count": 0, "disputed_criteria": []'))
