"""``rubric-workbench compare --save``: the two files and the rubric are stored in the
database and compared as a stored comparison (storage.services.comparisons), which the
Compare page then shows, and which a second ``--save`` of the same files adds to.

The rubric is stored under its file's name (or reused when a rubric of that name has the
same criteria in its latest version); each responses file becomes a dataset named after the
file. Every name is checked before anything is written, so a clash ends the command with one
line and nothing stored.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from grading.errors import RubricWorkbenchError
from storage import limits
from storage.compare_output import print_summary
from storage.config import database_url
from storage.engine import open_database
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


def save_and_compare(args, rubric, duel) -> int:
    """Store the rubric, both sources and the comparison, judge it, print its table."""
    from storage.compare_command import EXIT_FAILED, EXIT_OK, EXIT_USAGE, _error
    from storage.response_files import iter_responses

    sessions = open_database(database_url())
    actor = command_line_actor()
    rubric_name = Path(args.rubric).stem
    names = (Path(args.a_file).stem, Path(args.b_file).stem)
    taken = {d.name for d in datasets.list_datasets(sessions, include_archived=True)}
    clash = next((n for n in names if n in taken), None)
    if names[0] == names[1] or clash:
        _error(f"the database already has a dataset named {clash or names[0]!r} (--save names "
               "each dataset after its file); rename the file and run again (nothing was "
               "stored)")
        return EXIT_USAGE
    try:  # what create_comparison would refuse, refused before anything is written
        limits.check([("the model name", args.models[0], limits.MODEL_MAX)])
    except RubricWorkbenchError as exc:
        _error(f"{exc} (nothing was stored)")
        return EXIT_USAGE
    version = _rubric_version(sessions, rubric_name, rubric.rubric)
    if isinstance(version, str):
        _error(version + " (nothing was stored)")
        return EXIT_USAGE
    try:
        if version is None:
            version = rubrics.create_rubric(sessions, rubric_name, rubric.rubric,
                                            actor=actor).id
        ids = [datasets.create_dataset(
            sessions, name, responses=iter_responses(Path(path).read_bytes(), Path(path).name),
            actor=actor).id for name, path in zip(names, (args.a_file, args.b_file),
                                                  strict=True)]
        settings = {"api_base": args.api_base, "concurrency": args.concurrency,
                    "call_deadline": args.call_deadline,
                    "structured_output": args.structured_output}
        made = comparisons.create_comparison(
            sessions, rubric_version_id=version, a=Source(ids[0]), b=Source(ids[1]),
            model=args.models[0], match_by=args.match, holistic=args.holistic,
            settings=settings, actor=actor)
    except RubricWorkbenchError as exc:
        _error(f"{exc}")
        return EXIT_USAGE
    from storage.jobs.commands import configure_logging
    from storage.jobs.comparison_runner import run_comparison

    configure_logging(False)
    ended = asyncio.run(run_comparison(sessions, made.id, actor=actor))
    results = comparisons.comparison_results(sessions, made.id)
    if results.summary is not None:
        print_summary(results.summary, args.models[0], holistic=args.holistic,
                      names=(duel.a.name, duel.b.name))
    print(f"stored as comparison #{made.id} ({ended.status}): {ended.done_count} of "
          f"{ended.pair_count} pairs compared; open it on the Compare page")
    if ended.error:
        _error(ended.error)
    return EXIT_FAILED if ended.error or ended.status != "done" else EXIT_OK
