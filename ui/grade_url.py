"""Grade: the launch form's choices in the URL (ui/url_state.py), so a reload — a new
session, which empties every widget — shows the form as it was: rubric, version, dataset,
which responses, graders, models and the run's name."""

from __future__ import annotations

import json
from typing import Any

from ui import url_state as url
from ui.verdict_view import GRADER_LABELS

# "results" (a Results filter's responses) lives in the session only: a reload without it
# falls back to "all" (the page keeps only the modes it can offer).
SELECTION_MODES = ("all", "first", "pick", "results")


def text_list(value: str) -> list[str]:
    """A JSON list of texts (model labels may hold any character)."""
    found = json.loads(value)
    if not isinstance(found, list) or not all(isinstance(v, str) for v in found):
        raise url.Unreadable(value)
    return [v[:url.MAX_TEXT] for v in found]


def write_text_list(value: Any) -> str:
    return json.dumps(list(value), ensure_ascii=False)


def graders(value: str) -> list[str]:
    found = value.split(",") if value else []
    if not all(g in GRADER_LABELS for g in found):
        raise url.Unreadable(value)
    return found


URL_FIELDS = (
    url.Field("rubric", "grade_rubric_id", url.integer(1), label="rubric"),
    url.Field("version", "grade_version_id", url.integer(1), label="rubric version"),
    url.Field("dataset", "grade_dataset_id", url.integer(1), label="dataset"),
    url.Field("responses", "grade_selection_mode", url.choice(SELECTION_MODES),
              label="responses"),
    url.Field("first", "grade_first_n", url.integer(1), label="how many"),
    url.Field("graders", "grade_graders", graders, ",".join, "graders"),
    url.Field("models", "grade_presets", text_list, write_text_list, "models"),
    url.Field("other", "grade_custom_models", url.text, label="other models"),
    url.Field("api_base", "grade_api_base", url.text, label="api_base"),
    url.Field("name", "grade_run_name", url.text, label="run name"),
)
