"""The sources ``rubric-workbench compare`` ranks: each responses file is one source, or, with
``--split-by COLUMN``, each value of that column in a file is one (the ``model`` column of one
upload holding several models' answers, say).

Every problem is a ``SourceError`` whose message names the file, the row and what to do;
nothing is called before every source has been read whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grading.pairwise.matching import Item
from storage.errors import ImportProblemsError, Problem


class SourceError(ValueError):
    """A source cannot be read or named; the message is one line for the terminal."""


@dataclass(frozen=True)
class Source:
    name: str
    items: list[Item]


def _one_line(exc: ImportProblemsError, path: str) -> str:
    first = exc.problems[0] if exc.problems else "cannot be read"
    more = len(exc.problems) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return f"{path}: {first}{extra}; fix the file and run again (nothing was compared)"


def _responses(path: str, *, split: bool):
    from storage.response_files import iter_responses

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SourceError(_one_line(ImportProblemsError(
            [Problem("", f"cannot read the file: {exc.strerror}")], source=path), path)) from None
    try:
        # Split by a column, one file holds each id once per source: the matching finds a
        # repeat within one source (naming both rows) instead.
        return list(iter_responses(data, Path(path).name, remember_ids=not split))
    except ImportProblemsError as exc:
        raise SourceError(_one_line(exc, path)) from None


def _item(response) -> Item:
    return Item(location=response.location, id=response.external_id, query=response.query,
                text={"thinking": response.thinking or "", "output": response.output})


def _split(path: str, column: str) -> list[Source]:
    groups: dict[str, list[Item]] = {}
    for response in _responses(path, split=True):
        value = response.metadata.get(column)
        if value is None or not str(value).strip():
            columns = sorted(response.metadata) or ["none besides the mapped ones"]
            raise SourceError(
                f"{path}: {response.location} has no value in the column {column!r} that "
                f"--split-by names (other columns: {', '.join(columns)[:200]}); give every "
                "row one, or leave --split-by out")
        groups.setdefault(str(value).strip(), []).append(_item(response))
    return [Source(name, items) for name, items in groups.items()]


def _named(spec: str) -> tuple[str | None, str]:
    """``NAME=FILE`` or ``FILE`` (a path that itself holds '=' exists as given)."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        if name.strip() and path:
            return name.strip(), path
    return None, spec


def read_sources(specs: list[str], *, split_by: str | None = None) -> list[Source]:
    """The sources in the order given; at least two, each named once."""
    sources: list[Source] = []
    for spec in specs:
        name, path = _named(spec)
        if split_by:
            if name:
                raise SourceError(f"{spec}: with --split-by the column's values name the "
                                  "sources; give the file alone")
            found = _split(path, split_by)
        else:
            found = [Source(name or path, [_item(r) for r in _responses(path, split=False)])]
        for source in found:
            if any(s.name == source.name for s in sources):
                raise SourceError(
                    f"two sources are named {source.name!r}; name each with NAME=FILE"
                    if not split_by else
                    f"{path}: the value {source.name!r} of {split_by!r} also names a source "
                    "of an earlier file; give one file per value, or rename it")
            sources.append(source)
    if len(sources) < 2:
        only = sources[0].name if sources else "nothing"
        raise SourceError(
            f"only one source ({only!r}) to compare; give two or more files, or one file with "
            "--split-by COLUMN whose column holds two or more values")
    return sources
