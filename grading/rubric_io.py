"""Reading and writing rubric files (dict, JSON, YAML) with messages that say where it is wrong.

Accepted shapes: a flat list of criteria; a list of sections; ``{"criteria": [...]}``;
``{"sections": [{"name"/"title"/"id": ..., "criteria": [...]}]}``; and ``{"rubric": <any of
those>}`` — every shape the ``rubric`` package loads. Unknown keys are ignored with an
``IgnoredFieldsWarning`` that names them.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from typing import Any

import yaml

from grading.errors import RubricValidationError
from grading.nesting import MAX_NESTING, deep_line, depth, too_deep_message
from grading.option_io import options_problems, options_to_data
from grading.types import Criterion
from grading.verifiers_rubric import from_verifiers_item, is_verifiers_item
from grading.yaml_aliases import AliasBombError, check_aliases

_CRITERION_FIELDS = ("name", "weight", "requirement", "section", "options", "scale_type",
                     "required", "choices")


class _LineDict(dict):
    """A mapping read from YAML that remembers the line it started on (1-based)."""

    line: int | None = None


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_line_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    mapping = _LineDict(loader.construct_mapping(node, deep=True))
    mapping.line = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_line_mapping
)


def _too_deep(text: str) -> RubricValidationError:
    line = deep_line(text)
    return RubricValidationError(f"the rubric is {too_deep_message()}"
                                 + (f" (from line {line})" if line else ""))


def _within_depth(text: str, data: Any) -> Any:
    if depth(data) > MAX_NESTING:
        raise _too_deep(text)
    return data


def _load_yaml(text: str) -> Any:
    """``yaml.load`` with the SafeLoader, refusing alias bombs before building anything."""
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_aliases(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml_text(text: str) -> Any:
    try:
        return _within_depth(text, _load_yaml(text))
    except AliasBombError as exc:
        raise RubricValidationError(f"the rubric is refused at line {exc.line}: {exc}") from None
    except RecursionError:
        raise _too_deep(text) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "not valid YAML"
        raise RubricValidationError(f"invalid YAML at {where}{problem}") from None
    except yaml.YAMLError as exc:
        raise RubricValidationError(f"invalid YAML: {exc}") from None


def load_json_text(text: str) -> Any:
    try:
        return _within_depth(text, json.loads(text))
    except RecursionError:
        raise _too_deep(text) from None
    except json.JSONDecodeError as exc:
        raise RubricValidationError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return repr(value) if isinstance(value, str | int | float | bool) else type(value).__name__


def _unwrap(data: Any, ignored: list[str]) -> Any:
    if isinstance(data, dict) and "rubric" in data:
        _note_ignored(ignored, "the rubric", data, {"rubric"})
        return data["rubric"]
    return data


def declared_name(data: Any) -> str | None:
    """The rubric's own name in a file (its ``name``, else ``title``; under ``rubric:`` too),
    or None when the file gives none."""
    inner = data.get("rubric") if isinstance(data, dict) else None
    for mapping in (data, inner):
        if isinstance(mapping, dict):
            for key in ("name", "title"):
                value = mapping.get(key)
                if isinstance(value, str) and value.strip():
                    return " ".join(value.split())
    return None


def _note_ignored(ignored: list[str], where: str, mapping: dict, known: set[str]) -> None:
    extra = [str(k) for k in mapping if k not in known]
    if extra:
        ignored.append(f"{where}: {', '.join(repr(k) for k in extra)}")


def _section_name(section: dict) -> str | None:
    """A section's label: its ``name``, else ``title``, else ``id`` (rubric files use both)."""
    for key in ("name", "title", "id"):
        value = section.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def _iter_sections(
    sections: list, ignored: list[str], first: int = 1
) -> Iterator[tuple[Any, str | None]]:
    for number, section in enumerate(sections, start=first):
        if not isinstance(section, dict):
            raise RubricValidationError(f"section {number} must be a mapping with 'criteria'")
        name = _section_name(section)
        label = f"section {number}" + (f" ('{name}')" if name else "")
        items = section.get("criteria")
        if not isinstance(items, list):
            raise RubricValidationError(f"{label}: 'criteria' must be a list")
        # 'title' and 'id' label the section when there is no 'name'; the rest is ignored.
        _note_ignored(ignored, label, section, {"name", "title", "id", "criteria"})
        for item in items:
            yield item, name


def _iter_raw_criteria(data: Any, ignored: list[str]) -> Iterator[tuple[Any, str | None]]:
    """Yield (raw criterion, section name) in file order, raising on a wrong overall shape.

    Every shape the ``rubric`` package loads is accepted: a list of criteria, a list of
    sections (``{..., criteria: [...]}``) or a mix, ``{sections: [...]}``, ``{criteria:
    [...]}``, and any of them under ``rubric:``. Keys we do not use are collected in
    ``ignored`` (the caller warns) rather than refused.
    """
    data = _unwrap(data, ignored)
    if isinstance(data, list):
        for number, item in enumerate(data, start=1):
            if isinstance(item, dict) and "criteria" in item:
                yield from _iter_sections([item], ignored, first=number)
            else:
                yield item, None
        return
    if not isinstance(data, dict):
        raise RubricValidationError(
            "a rubric must be a list of criteria, or a mapping with 'criteria' or 'sections', "
            f"got {_describe(data)}"
        )
    keys = set(data)
    if "criteria" in keys and "sections" in keys:
        raise RubricValidationError("a rubric has either 'criteria' or 'sections', not both")
    if "criteria" in keys:
        criteria = data["criteria"]
        if not isinstance(criteria, list):
            raise RubricValidationError(
                f"'criteria' must be a list, got {_describe(criteria)}"
            )
        _note_ignored(ignored, "the rubric", data, {"criteria", "name", "title", "id"})
        for item in criteria:
            yield item, None
        return
    if "sections" in keys:
        sections = data["sections"]
        if not isinstance(sections, list):
            raise RubricValidationError(f"'sections' must be a list, got {_describe(sections)}")
        _note_ignored(ignored, "the rubric", data, {"sections", "name", "title", "id"})
        yield from _iter_sections(sections, ignored)
        return
    raise RubricValidationError(
        "a rubric mapping needs a 'criteria' list or a 'sections' list "
        f"(found keys: {', '.join(sorted(map(str, keys))) or 'none'})"
    )


def _criterion_problems(
    item: Any, section: str | None, ignored_fields: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """Check one raw criterion; return the cleaned fields and a list of 'field: problem'."""
    if isinstance(item, str):
        item = {"requirement": item}
    if not isinstance(item, dict):
        return {}, [f"must be a mapping with 'requirement' and 'weight', got {_describe(item)}"]
    if is_verifiers_item(item):
        item = from_verifiers_item(item)
    problems: list[str] = []
    fields: dict[str, Any] = {}
    ignored_fields.extend(str(k) for k in item if k not in _CRITERION_FIELDS)
    requirement = item.get("requirement")
    if requirement is None:
        problems.append("requirement is missing")
    elif not isinstance(requirement, str):
        problems.append(f"requirement must be text, got {_describe(requirement)}")
    elif not requirement.strip():
        problems.append("requirement must not be empty")
    else:
        fields["requirement"] = requirement
    if "weight" in item:
        weight = _number(item["weight"])
        if weight is None:
            problems.append(f"weight must be a number, got {_describe(item['weight'])}")
        elif not math.isfinite(weight):
            problems.append(f"weight must be a finite number, got {weight}")
        else:
            fields["weight"] = weight
    for key in ("name", "section"):
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            problems.append(f"{key} must be text, got {_describe(value)}")
        elif str(value).strip():
            fields[key] = str(value).strip()
    problems.extend(options_problems(item, fields))
    if "required" in item:
        if not isinstance(item["required"], bool):
            problems.append(f"required must be true or false, got {_describe(item['required'])}")
        elif item["required"]:
            if fields.get("weight", 10.0) == 0:
                problems.append("a required criterion needs a weight other than 0")
            fields["required"] = True
    if section is not None:
        own = fields.get("section")
        if own is not None and own != section:
            problems.append(f"section {own!r} contradicts the enclosing section {section!r}")
        fields["section"] = section
    return fields, problems


def _number(value: Any) -> float | None:
    """A weight as a float: a number, or a string holding one (``rubric`` accepts "5")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def criteria_from_data(data: Any, *, source: str | None = None) -> list[Criterion]:
    """Validate raw rubric data; raise one RubricValidationError listing every problem.

    Fields the rubric does not use are ignored with an ``IgnoredFieldsWarning`` naming them."""
    criteria, ignored = read_criteria(data, source=source)
    warn_ignored(ignored, source, stacklevel=3)
    return criteria


def read_criteria(data: Any, *, source: str | None = None) -> tuple[list[Criterion], list[str]]:
    """The criteria, and where fields were ignored ("criterion 2 ('tone') at line 7: 'id'")."""
    ignored: list[str] = []
    try:
        raw = list(_iter_raw_criteria(data, ignored))
    except RubricValidationError as exc:
        raise RubricValidationError(exc.problems, source=source) from None
    if not raw:
        raise RubricValidationError("the rubric has no criteria", source=source)
    problems: list[str] = []
    criteria: list[Criterion] = []
    seen_names: dict[str, int] = {}
    for index, (item, section) in enumerate(raw, start=1):
        ignored_fields: list[str] = []
        fields, item_problems = _criterion_problems(item, section, ignored_fields)
        name = fields.get("name")
        label = f"criterion {index}" + (f" ('{name}')" if name else "")
        line = getattr(item, "line", None)
        where = f"{label} at line {line}" if line else label
        if ignored_fields:
            ignored.append(f"{where}: {', '.join(repr(k) for k in ignored_fields)}")
        if name is not None:
            if name in seen_names:
                item_problems.append(
                    f"name {name!r} is already used by criterion {seen_names[name]}"
                )
            else:
                seen_names[name] = index
        problems.extend(f"{where}: {p}" for p in item_problems)
        if not item_problems:
            criteria.append(Criterion(**fields))
    if problems:
        raise RubricValidationError(problems, source=source)
    return criteria, ignored


def ignored_fields_message(ignored: list[str], source: str | None = None) -> str:
    """One sentence naming the ignored fields (the first ten places, then a count)."""
    shown = "; ".join(ignored[:10]) + (f"; and {len(ignored) - 10} more" if len(ignored) > 10
                                       else "")
    return (f"{source + ': ' if source else ''}fields not used by the rubric were ignored "
            f"(a criterion uses {', '.join(_CRITERION_FIELDS)}): {shown}")


def warn_ignored(ignored: list[str], source: str | None, *, stacklevel: int) -> None:
    if ignored:
        warnings.warn(ignored_fields_message(ignored, source), IgnoredFieldsWarning,
                      stacklevel=stacklevel + 1)


class IgnoredFieldsWarning(UserWarning):
    """A rubric file had fields this library does not use; they were ignored."""


def criterion_to_dict(criterion: Criterion, *, with_section: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if criterion.name is not None:
        out["name"] = criterion.name
    out["weight"] = criterion.weight
    out["requirement"] = criterion.requirement
    if with_section and criterion.section is not None:
        out["section"] = criterion.section
    if criterion.required:
        out["required"] = True
    out.update(options_to_data(criterion))
    return out


def criteria_to_data(criteria: list[Criterion]) -> list[dict[str, Any]] | dict[str, Any]:
    """The shape that reads back to the same criteria, sections and order included.

    No sections: a flat list (the ``rubric`` package's format). Every criterion in a
    section: ``{"sections": [...]}``, one entry per run of consecutive criteria. Mixed:
    ``{"criteria": [...]}`` with a ``section`` field where one is set.
    """
    sections = [c.section for c in criteria]
    if all(s is None for s in sections):
        return [criterion_to_dict(c, with_section=False) for c in criteria]
    if any(s is None for s in sections):
        return {"criteria": [criterion_to_dict(c, with_section=True) for c in criteria]}
    groups: list[dict[str, Any]] = []
    for criterion in criteria:
        if not groups or groups[-1]["name"] != criterion.section:
            groups.append({"name": criterion.section, "criteria": []})
        groups[-1]["criteria"].append(criterion_to_dict(criterion, with_section=False))
    return {"sections": groups}


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def detect_format(text: str, filename: str | None = None) -> str:
    """'json' or 'yaml', from the file extension, else from the content."""
    if filename:
        lowered = filename.lower()
        if lowered.endswith(".json"):
            return "json"
        if lowered.endswith((".yaml", ".yml")):
            return "yaml"
    # YAML flow style also starts with '[' or '{', so only valid JSON counts as JSON.
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return "yaml"
    return "json"
