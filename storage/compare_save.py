"""``rubric-workbench compare --save``: the rubric, every source and one comparison per two
sources are stored in the database (storage.services.comparisons) and judged there; the
Compare page then shows them.

Every source form the command accepts is stored: a whole file (``--a``/``--b``, ``--source
[NAME=]FILE``) becomes a dataset named after the file (or NAME); a ``--split-by`` value of a
file becomes the dataset ``<file> · <column> = <value>``; a ``--columns`` column the dataset
``<file> · <column>`` (the row's id and query kept). The rubric is stored under its file's
name (or reused when a rubric of that name has the same criteria in its latest version).
Everything is written in ONE transaction (storage.one_transaction): a name already taken, a
value too long to store, a source the services refuse ends the command with one line and
nothing stored — no rubric or dataset left from a half-done save.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from grading.errors import RubricWorkbenchError
from storage import limits
from storage.compare_output import print_leaderboard, print_summary
from storage.config import database_url
from storage.engine import open_database
from storage.one_transaction import OneTransaction
from storage.response_files import NewResponse
from storage.services import comparisons, datasets, rubrics
from storage.services.comparisons import Source
from storage.services.reviewers import command_line_actor


def _rubric_version(sessions, name: str, criteria) -> int | str | None:
    """The version to reuse, None to create the rubric, or the message saying why not."""
    found = next((r for r in rubrics.list_rubrics(sessions) if r.name == name), None)
    if found is None:
        return None
    latest = rubrics.list_versions(sessions, found.id)[-1]
    stored = [c.to_criterion() for c in rubrics.get_version(sessions, latest.id).criteria]
    if stored != list(criteria):
        return (f"the database already has a rubric named {name!r} with other criteria; "
                "rename the rubric file, or save a new version of that rubric in the app")
    return latest.id


def _dataset_name(source) -> str:
    stem = Path(source.path).stem
    if source.whole_file:
        return stem if source.name == source.path else source.name
    if source.column == source.name:  # one of --columns
        return f"{stem} · {source.column}"
    return f"{stem} · {source.column} = {source.name}"


def _responses(source):
    """The source's rows to store: a whole file as imported (its other columns kept), a
    split value or a column as the rows the comparison read."""
    from storage.response_files import iter_responses

    if source.whole_file:
        return iter_responses(Path(source.path).read_bytes(), Path(source.path).name)
    return [NewResponse(output=item.text["output"], query=item.query,
                        thinking=item.text.get("thinking") or None, external_id=item.id,
                        location=item.location) for item in source.items]


def _store_all(sessions, args, rubric, duels, actor) -> list[int]:
    """Rubric, datasets and comparisons in one transaction; the comparisons' ids."""
    rubric_name = Path(args.rubric).stem
    sources = _sources(duels)
    with sessions.begin() as session:
        one = OneTransaction(session)
        version = _rubric_version(one, rubric_name, rubric.rubric)
        if isinstance(version, str):
            raise _Refused(version)
        if version is None:
            version = rubrics.create_rubric(one, rubric_name, rubric.rubric, actor=actor).id
        ids = {}
        for source in sources:
            ids[source.name] = datasets.create_dataset(
                one, _dataset_name(source), responses=_responses(source), actor=actor).id
        settings = {"api_base": args.api_base, "concurrency": args.concurrency,
                    "call_deadline": args.call_deadline,
                    "structured_output": args.structured_output}
        # --columns pairs the rows of one file: always by their id
        match_by = "id" if args.columns else args.match
        return [comparisons.create_comparison(
            one, rubric_version_id=version, a=Source(ids[duel.a.name]),
            b=Source(ids[duel.b.name]), model=args.models[0], match_by=match_by,
            holistic=args.holistic, settings=settings, actor=actor).id for duel in duels]


class _Refused(RubricWorkbenchError):
    """A save refused before anything is written; the message says why."""


def _why(exc: RubricWorkbenchError) -> str:
    import re

    from storage.errors import NameTakenError

    taken = re.match(r"a dataset named (.+) already exists", str(exc))
    if isinstance(exc, NameTakenError) and taken:
        return (f"the database already has a dataset named {taken.group(1)} (--save names each "
                "dataset after its file, NAME= of --source, or its split value or column); "
                "rename it and run again (nothing was stored)")
    return f"{exc} (nothing was stored)"


def _sources(duels) -> list:
    """Every source of the duels once, in order."""
    found: dict[str, object] = {}
    for duel in duels:
        for source in (duel.a, duel.b):
            found.setdefault(source.name, source)
    return list(found.values())


def save_and_compare(args, rubric, duels) -> int:
    """Store the rubric, every source and a comparison per duel, judge them, print tables."""
    from storage.compare_command import EXIT_FAILED, EXIT_OK, EXIT_USAGE, _error

    sessions = open_database(database_url())
    actor = command_line_actor()
    names = [_dataset_name(s) for s in _sources(duels)]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        _error(f"two sources would be stored as the dataset {twice!r}; name them apart "
               "with --source NAME=FILE, or rename a file (nothing was stored)")
        return EXIT_USAGE
    try:
        limits.check([("the model name", args.models[0], limits.MODEL_MAX)])
        made = _store_all(sessions, args, rubric, duels, actor)
    except RubricWorkbenchError as exc:
        _error(_why(exc))
        return EXIT_USAGE
    from storage.jobs.commands import configure_logging
    from storage.jobs.comparison_runner import run_comparison

    configure_logging(False)
    failed = False
    for duel, comparison_id in zip(duels, made, strict=True):
        ended = asyncio.run(run_comparison(sessions, comparison_id, actor=actor))
        results = comparisons.comparison_results(sessions, comparison_id)
        if results.summary is not None:
            print_summary(results.summary, args.models[0], holistic=args.holistic,
                          names=(duel.a.name, duel.b.name))
        print(f"stored as comparison #{comparison_id} ({ended.status}): {ended.done_count} "
              f"of {ended.pair_count} pairs compared; open it on the Compare page")
        if ended.error:
            _error(ended.error)
        failed = failed or bool(ended.error) or ended.status != "done"
    if len(made) > 1:
        print_leaderboard(_outcomes(sessions, made, duels))
    return EXIT_FAILED if failed else EXIT_OK


def _outcomes(sessions, made: list[int], duels) -> list[tuple[str, str, float]]:
    from sqlalchemy import select

    from storage import models as m

    names = {cid: (duel.a.name, duel.b.name) for cid, duel in zip(made, duels, strict=True)}
    with sessions() as session:
        rows = session.execute(
            select(m.ComparisonPairRow.comparison_id, m.ComparisonPairRow.winner)
            .where(m.ComparisonPairRow.comparison_id.in_(made),
                   m.ComparisonPairRow.winner.is_not(None))).all()
    return [(*names[cid], {"B": 1.0, "TIE": 0.5, "A": 0.0}[winner]) for cid, winner in rows]
