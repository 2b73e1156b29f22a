"""What every ``rubric-workbench`` command shares: exit statuses, one-line errors, logging,
and database faults turned into a sentence that names the database."""

from __future__ import annotations

import argparse
import logging
import sys

from storage.config import database_url, describe_url

EXIT_OK, EXIT_FAILED_GRADES, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


# -- grade --------------------------------------------------------------------------------------
def configure_logging(verbose: bool) -> None:
    """Warnings and our own summaries by default; every request with ``--verbose``. Secrets
    are masked in whatever is written."""
    from grading.redact import install_log_redaction

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr,
                        force=True)
    logging.getLogger("storage").setLevel(logging.INFO)
    for name in ("httpx", "httpcore", "LiteLLM", "litellm", "openai"):
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    install_log_redaction()


def database_problem(exc: BaseException, url: str) -> str:
    from storage.db_errors import describe_db_error

    where = describe_url(url)
    cause = describe_db_error(exc)
    if "unable to open database file" in cause and sqlite_folder_read_only(url):
        # SQLite in WAL mode cannot open a file whose folder it cannot write its -shm file in
        # (when no -wal / -shm file was left there): the same fault as a refused write.
        cause = "the database is read-only"
    advice = "check that it is reachable and writable, or give another one with --db"
    if "read-only" in cause:
        advice = ("make the file and its folder writable (the database also writes a -wal "
                  "and -shm file next to it), or give another one with --db")
    elif "full" in cause:
        advice = "free some disk space, then run the same command again"
    elif "locked" in cause:
        advice = ("another program is writing to it (the app, a worker or an import); nothing "
                  "was changed — run the same command again when it has finished")
    return f"the database {where} cannot be used: {cause}; {advice}"


def sqlite_folder_read_only(url: str) -> bool:
    """Whether ``url`` is a SQLite file whose folder cannot be written (a read-only mount, or
    no write permission)."""
    import os

    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:
        return False
    if not parsed.drivername.startswith("sqlite") or not parsed.database:
        return False
    folder = os.path.dirname(os.path.abspath(parsed.database))
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False
    return not os.access(folder, os.W_OK)


def guarded(command):
    """Database faults end a command with a sentence that names the database, not a
    traceback."""
    def run(args: argparse.Namespace) -> int:
        from storage.db_errors import is_storage_fault

        try:
            return command(args)
        except Exception as exc:
            if not is_storage_fault(exc) or isinstance(exc, FileNotFoundError):
                raise
            error(database_problem(exc, args.db or database_url()))
            return EXIT_FAILED_GRADES
    run.__name__ = command.__name__
    run.__doc__ = command.__doc__
    return run


