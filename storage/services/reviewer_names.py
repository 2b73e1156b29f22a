"""Reviewer names typed into a sheet, matched to the people the workbench knows.

A name in a verdict sheet must be someone known: a person in the people table (signed in or
given a role), an admin named in ``RUBRIC_WORKBENCH_ADMINS``, a reviewer who already has
verdicts, or the person importing. Names are compared normalised — Unicode NFKC, invisible
format characters (zero-width spaces and joiners, the word joiner, a byte-order mark, soft
hyphens) removed, runs of spaces made one, case folded — so ``ANN``, ``ann`` and ``a\u200bnn``
are one person, never three.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage import models as m
from storage.services.people import environment_admins, person_key


def clean(name: str) -> str:
    """The name as a person meant it: NFKC, no invisible format characters, single spaces."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


def normalise(name: str) -> str:
    """What two spellings of one name have in common: :func:`clean`, then case-folded."""
    return clean(name).casefold()


@dataclass(frozen=True)
class Known:
    """The known reviewers: key -> name shown, and normalised name -> keys."""

    names: dict[str, str]
    by_normal: dict[str, tuple[str, ...]] = field(default_factory=dict)


def known_reviewers(session: Session, also: Iterable[str] = ()) -> Known:
    """Everyone who may appear as a reviewer: people, the environment's admins, everyone with
    a verdict (the newest name they saved with), and ``also`` (the importer)."""
    names: dict[str, str] = {}
    for key, name in session.execute(select(m.PersonRow.key, m.PersonRow.name)):
        names[key] = name or key
    for key in environment_admins():
        names.setdefault(key, key)
    hv = m.HumanVerdictRow
    newest = (select(hv.reviewer_key, hv.reviewer, func.max(hv.id).label("newest"))
              .where(hv.stream != m.ADJUDICATION_STREAM)
              .group_by(hv.reviewer_key, hv.reviewer).order_by("newest"))
    for key, name, _newest in session.execute(newest):
        names[key] = name or key
    for key in also:
        if key:
            names.setdefault(key, key)
    by_normal: dict[str, list[str]] = defaultdict(list)
    for key in sorted(names):
        by_normal[normalise(key)].append(key)
    return Known(names, {k: tuple(v) for k, v in by_normal.items()})


@dataclass(frozen=True)
class Match:
    key: str | None  # the known reviewer; None: unknown (or ambiguous)
    ambiguous: tuple[str, ...] = ()


def match(known: Known, name: str) -> Match:
    """The known reviewer a sheet's name means: the very key, else the one key with the same
    normalised name; several such keys are ambiguous."""
    if name in known.names:
        return Match(name)
    found = known.by_normal.get(normalise(name), ())
    if len(found) == 1:
        return Match(found[0])
    return Match(None, found)


def new_key(name: str) -> str:
    """The key a reviewer created by an import gets: the cleaned name (an e-mail lower-case)."""
    return person_key(clean(name))
