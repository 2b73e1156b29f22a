"""Where the database is: ``RUBRIC_WORKBENCH_DATABASE_URL``, else a SQLite file per user."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DATABASE_URL_VARIABLE = "RUBRIC_WORKBENCH_DATABASE_URL"
DATA_DIR_VARIABLE = "RUBRIC_WORKBENCH_DATA_DIR"
DEFAULT_FILENAME = "workbench.db"


def data_dir() -> Path:
    """The per-user data directory (``RUBRIC_WORKBENCH_DATA_DIR`` overrides it)."""
    configured = os.environ.get(DATA_DIR_VARIABLE, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("rubric-workbench", appauthor=False))


def database_url() -> str:
    """The database URL, read at call time so tests and the UI can change it."""
    configured = os.environ.get(DATABASE_URL_VARIABLE, "").strip()
    if configured:
        return as_database_url(configured, where=DATABASE_URL_VARIABLE)
    return f"sqlite:///{data_dir() / DEFAULT_FILENAME}"


URL_HELP = ("a database URL (sqlite:///path/to/file.db, postgresql+psycopg://user@host:5432/name) "
            "or the path of an SQLite file")


class DatabaseUrlError(ValueError):
    """What a person gave as the database is neither a URL nor a file path."""


def as_database_url(value: str, *, where: str = "--db") -> str:
    """A database URL from what a person gave: a URL, or the path of an SQLite file (which is
    what most people type first). The value is never repeated back: it may hold a password."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    text = value.strip()
    if not text:
        raise DatabaseUrlError(f"{where} is empty; give {URL_HELP}")
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    try:
        make_url(text)
    except (ArgumentError, ValueError):  # a port that is no number is a ValueError
        raise DatabaseUrlError(f"{where} is not a database URL; give {URL_HELP}") from None
    return text


def add_db_argument(parser) -> None:
    """The ``--db`` option every command shares (a URL or an SQLite file path)."""
    import argparse

    def parse(value: str) -> str:
        try:
            return as_database_url(value)
        except DatabaseUrlError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("--db ")) from None

    parser.add_argument("--db", type=parse, metavar="URL_OR_FILE",
                        help=f"{URL_HELP} (default: ${DATABASE_URL_VARIABLE} or the SQLite "
                             "file in the data directory)")


def describe_url(url: str) -> str:
    """The URL without its password, fit to show a user."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
