"""The ``grade`` command's inputs: the rubric and responses files read and checked, then
stored as a rubric version, a dataset and the runs to grade (or the ones already made for
exactly this grading, to resume)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from grading.rubric import Rubric
from storage import limits
from storage.errors import ImportProblemsError, Problem
from storage.jobs.grade_arguments import GRADER_NAMES
from storage.response_files import (
    ColumnMapping,
    count_responses,
    iter_responses,
    peek_columns,
)
from storage.services.reviewers import command_line_actor


def read_inputs(args: argparse.Namespace) -> tuple[Rubric, ColumnMapping, int, str]:
    """Read and validate both files before anything touches the database (the responses as
    a stream): (rubric, column mapping, number of responses, the content's fingerprint)."""
    rubric = Rubric.from_file(args.rubric)
    path = Path(args.responses)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImportProblemsError([], source=f"{path}: cannot read the file: {exc.strerror}"
                                  ) from None
    limit_mb = args.max_file_mb if args.max_file_mb is not None else limits.max_file_mb()
    if size > limit_mb * 1024 * 1024:
        raise ImportProblemsError([Problem("", (
            f"the file is {size / 1024 / 1024:.1f} MB; the limit is {limit_mb:g} MB (as in "
            f"the app). Split it, or raise the limit with --max-file-mb or "
            f"{limits.MAX_FILE_VARIABLE}"))], source=path.name)
    guess = ColumnMapping.guess(peek_columns(path))
    mapping = ColumnMapping(
        text=args.text_column or guess.text,
        query=args.query_column or guess.query,
        id=args.id_column or guess.id,
        thinking=args.thinking_column or guess.thinking,
        reference=args.reference_column or guess.reference,
    )
    _check_columns(path, mapping, args)
    from storage.jobs.resume import fingerprint_file

    # The reference joins the fingerprint only when there is one, so a run started before
    # references existed still resumes.
    columns = {"text": mapping.text, "query": mapping.query, "id": mapping.id,
               "thinking": mapping.thinking}
    if mapping.reference is not None:
        columns["reference"] = mapping.reference
    print_ = fingerprint_file(path, columns)
    # Duplicate ids are found when the rows are stored (by the database, all or nothing):
    # remembering every id here grew the memory with the rows (~150 bytes each).
    return rubric, mapping, count_responses(path, mapping=mapping, remember_ids=False), print_


def _check_columns(path: Path, mapping: ColumnMapping, args: argparse.Namespace) -> None:
    """A column named on the command line must exist, and hold one thing only."""
    if args.reference_column is None:
        return
    columns = peek_columns(path)
    if args.reference_column not in columns:
        raise ImportProblemsError([Problem("", (
            f"--reference-column {args.reference_column!r} is not a column of the file; its "
            f"columns are {', '.join(repr(c) for c in columns)}"))], source=path.name)
    others = {"--text-column": mapping.text, "--query-column": mapping.query,
              "--id-column": mapping.id, "--thinking-column": mapping.thinking}
    clash = next((flag for flag, column in others.items()
                  if column == args.reference_column), None)
    if clash is not None:
        raise ImportProblemsError([Problem("", (
            f"the column {args.reference_column!r} cannot be both the reference "
            f"(--reference-column) and {clash.removeprefix('--').removesuffix('-column')}; "
            f"name another column with {clash}"))], source=path.name)


def rubric_version(sessions, name: str, rubric: Rubric) -> int:
    """The latest version of the rubric of this name if it has these criteria, else a new one."""
    from storage.services import rubrics

    existing = next((r for r in rubrics.list_rubrics(sessions, include_archived=True)
                     if r.name == name), None)
    if existing is None:
        return rubrics.create_rubric(sessions, name, rubric, actor=command_line_actor()).id
    latest = rubrics.get_version(sessions, existing.latest_version_id)
    if latest.to_criteria() == rubric.criteria:
        return latest.id
    return rubrics.save_criteria(sessions, latest.id, rubric, note="from the command line",
                                 actor=command_line_actor()).id


DUPLICATE_FOUND_LATE = "already used by an earlier row"


def import_dataset(sessions, path: Path, mapping: ColumnMapping, print_: str) -> int:
    """The dataset already imported from this content, else a new one named after the file
    and the time; the file is read again as a stream and stored a batch at a time, all or
    nothing."""
    from storage.errors import NameTakenError
    from storage.jobs.resume import TAG, find_dataset
    from storage.services import datasets

    existing = find_dataset(sessions, print_)
    if existing is not None:
        return existing
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    stem = path.name if len(path.name) <= 150 else path.name[:149] + "…"
    for attempt in range(1, 100):
        name = f"{stem} {stamp}" + (f" ({attempt})" if attempt > 1 else "")
        try:
            return datasets.create_dataset(
                sessions, name, responses=iter_responses(path, mapping=mapping,
                                                         remember_ids=False),
                description=f"imported by rubric-workbench grade from {path} "
                            f"({TAG}{print_})", actor=command_line_actor()).id
        except NameTakenError:
            continue
        except ImportProblemsError as exc:
            if any(DUPLICATE_FOUND_LATE in p.message for p in exc.problems):
                # Nothing was stored. Only now read the file again remembering the ids, to
                # say which earlier line each duplicate repeats.
                count_responses(path, mapping=mapping)
            raise
    raise NameTakenError(f"could not find a free dataset name for {path.name}")


def runs_get(sessions, run_id: int):
    from storage.services import runs

    return runs.get_run(sessions, run_id)


def runs_for(sessions, args: argparse.Namespace, version_id: int, dataset_id: int,
             settings: dict) -> tuple[list[int], list[int]]:
    """The run of each grader x model: the existing one for this exact grading, else new."""
    from storage.jobs import resume
    from storage.run_settings import RunSettings
    from storage.services import runs

    wanted = RunSettings.model_validate(settings)
    run_ids, resumed = [], []
    for grader in dict.fromkeys(args.grader):
        for model in dict.fromkeys(args.model):
            found = resume.find_run(sessions, dataset_id=dataset_id, version_id=version_id,
                                    grader=GRADER_NAMES[grader], model=model, settings=wanted)
            if found is not None:
                run_ids.append(found.id)
                resumed.append(found.id)
                continue
            run_ids.append(runs.create_run(
                sessions, rubric_version_id=version_id, dataset_id=dataset_id,
                grader=GRADER_NAMES[grader], model=model, name=args.name,
                settings=settings, actor=command_line_actor()).id)
    return run_ids, resumed
