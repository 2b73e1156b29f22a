"""The sources ``rubric-workbench compare`` ranks: each responses file is one source, or, with
``--split-by COLUMN``, each value of that column in a file is one (the ``model`` column of one
upload holding several models' answers, say), or, with ``--columns A,B``, each of those
columns of one file is one (two answers to the same query side by side in one row).

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
    path: str = ""  # the file it was read from
    # split by a column (the value is ``name``), or one of --columns: that column
    column: str | None = None
    whole_file: bool = True  # the file's rows as they are (not split, not one column)


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
    return [Source(name, items, path, column, whole_file=False)
            for name, items in groups.items()]


_PEEK_ROWS = 50


def _by_columns(path: str, columns: list[str]) -> list[Source]:
    """One source per column: every row's id and query, the column's text."""
    import itertools

    from storage.response_files import ColumnMapping, RowReader, iter_responses

    try:
        data = Path(path).read_bytes()
        peek = RowReader(data, Path(path).name)
        rows = [row for _where, row in itertools.islice(iter(peek), _PEEK_ROWS)]
        peek.close()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read the file: {exc.strerror}; fix the path and run "
                          "again (nothing was compared)") from None
    except ImportProblemsError as exc:
        raise SourceError(_one_line(exc, path)) from None
    found = list(peek.columns)
    missing = [c for c in columns if c not in found]
    if missing:
        raise SourceError(
            f"{path}: no column {', '.join(repr(c) for c in missing)} for --columns (the file "
            f"has {', '.join(found)[:200] or 'no columns'}); name two or more of its columns")
    guessed = ColumnMapping.guess(found, rows)

    def free(column: str | None) -> str | None:  # a compared column is text, nothing else
        return None if column in columns else column

    mapping = ColumnMapping(text=columns[0], query=free(guessed.query), id=free(guessed.id),
                            thinking=None, reference=free(guessed.reference))
    sources: list[Source] = [Source(column, [], path, column, whole_file=False)
                             for column in columns]
    try:
        for response in iter_responses(data, Path(path).name, mapping=mapping):
            for source in sources[1:]:
                text = response.metadata.get(source.name)
                if text is None or not str(text).strip():
                    raise SourceError(
                        f"{path}: {response.location} has no text in the column "
                        f"{source.name!r}; give every row a text in each --columns column "
                        "(nothing was compared)")
            sources[0].items.append(_item(response))
            for source in sources[1:]:
                source.items.append(Item(location=response.location, id=response.external_id,
                                         query=response.query,
                                         text={"thinking": "",
                                               "output": str(response.metadata[source.name])}))
    except ImportProblemsError as exc:
        raise SourceError(_one_line(exc, path)) from None
    return sources


def _named(spec: str) -> tuple[str | None, str]:
    """``NAME=FILE`` or ``FILE`` (a path that itself holds '=' exists as given)."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        if name.strip() and path:
            return name.strip(), path
    return None, spec


def read_sources(specs: list[str], *, split_by: str | None = None,
                 columns: list[str] | None = None) -> list[Source]:
    """The sources in the order given; at least two, each named once."""
    if columns is not None:
        if len(specs) != 1 or split_by or _named(specs[0])[0]:
            raise SourceError("--columns names the sources within one file: give that file "
                              "alone (with --a or one --source), without --split-by")
        if len(columns) < 2 or len(set(columns)) != len(columns) or not all(columns):
            raise SourceError(f"--columns needs two or more different column names separated "
                              f"by commas, got {','.join(columns)!r}")
        return _by_columns(specs[0], columns)
    sources: list[Source] = []
    for spec in specs:
        name, path = _named(spec)
        if split_by:
            if name:
                raise SourceError(f"{spec}: with --split-by the column's values name the "
                                  "sources; give the file alone")
            found = _split(path, split_by)
        else:
            found = [Source(name or path, [_item(r) for r in _responses(path, split=False)],
                            path)]
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
