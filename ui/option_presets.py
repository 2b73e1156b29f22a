"""How a criterion is judged (MET/UNMET, a rating, a category) and the option sets the
Rubrics editor offers as starting points. Pure data, no Streamlit."""

from __future__ import annotations

from grading.options import CriterionOption

BINARY = "MET/UNMET"
RATING = "rating"
CATEGORY = "category"
KINDS: tuple[str, ...] = (BINARY, RATING, CATEGORY)
SCALE_OF_KIND = {RATING: "ordinal", CATEGORY: "nominal"}


def _options(*rows: tuple[str, float] | tuple[str, float, bool]) -> tuple[CriterionOption, ...]:
    return tuple(CriterionOption(label=r[0], value=r[1], na=len(r) > 2 and r[2]) for r in rows)


PRESETS: dict[str, tuple[CriterionOption, ...]] = {
    "Likert 1-5": _options(("1 - Very poor", 0.0), ("2 - Poor", 0.25), ("3 - Fair", 0.5),
                           ("4 - Good", 0.75), ("5 - Excellent", 1.0)),
    "Likert 1-4": _options(("1 - Poor", 0.0), ("2 - Fair", 1 / 3), ("3 - Good", 2 / 3),
                           ("4 - Excellent", 1.0)),
    "Pass / partial / fail": _options(("Fail", 0.0), ("Partial", 0.5), ("Pass", 1.0)),
    "Categories (nominal)": _options(("Resolves the request", 1.0),
                                     ("Redirects to the right place", 0.5),
                                     ("Refuses or ignores it", 0.0),
                                     ("Not applicable", 0.0, True)),
}
DEFAULT_PRESET = {RATING: "Likert 1-5", CATEGORY: "Categories (nominal)"}


def kind_of(options: object, scale_type: str | None) -> str:
    if options is None:
        return BINARY
    return CATEGORY if scale_type == "nominal" else RATING


def option_rows(options: tuple[CriterionOption, ...]) -> list[dict]:
    return [{"label": o.label, "value": o.value, "na": o.na} for o in options]
