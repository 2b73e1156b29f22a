"""A throwaway PostgreSQL server for the storage tests (see ../shared/TESTING.md).

initdb/pg_ctl refuse to run as root, so as root they run as the ``postgres`` user via
``runuser``. Data lives in a temp dir; the server listens on 127.0.0.1 only, with fsync off.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    pass


def _find(binary: str) -> str:
    found = shutil.which(binary)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{binary}"), reverse=True)
    if candidates:
        return candidates[0]
    raise PostgresUnavailable(
        f"{binary} not found on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL "
        "(apt-get install -y postgresql) — scripts/test.sh does this"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PostgresServer:
    directory: Path
    port: int
    pg_ctl: str
    as_postgres: list[str]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def pg_ctl_run(self, *args: str) -> None:
        """``pg_ctl ACTION`` on this server (``stop -m fast``, ``start``, ``restart``), with
        the options it was started with."""
        data, log = str(self.directory / "data"), str(self.directory / "server.log")
        action, *rest = args
        extra = [] if action == "stop" else ["-l", log]
        if action == "start":
            extra += ["-o", _options(self.port, self.directory)]
        subprocess.run([*self.as_postgres, self.pg_ctl, action, "-D", data, *extra, *rest,
                        "-w", "-t", "60"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=90)

    def stop(self) -> None:
        subprocess.run(
            [*self.as_postgres, self.pg_ctl, "stop", "-D", str(self.directory / "data"),
             "-m", "immediate", "-w"],
            capture_output=True, timeout=60, check=False,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def _options(port: int, directory: Path) -> str:
    return " ".join([
        "-c listen_addresses=127.0.0.1", f"-p {port}", "-c fsync=off",
        "-c synchronous_commit=off", "-c full_page_writes=off",
        f"-c unix_socket_directories={directory}", "-c max_connections=100",
    ])


def start() -> PostgresServer:
    initdb, pg_ctl = _find("initdb"), _find("pg_ctl")
    directory = Path(tempfile.mkdtemp(prefix="rw-postgres-"))
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise PostgresUnavailable("running as root but runuser is missing")
        as_postgres = [runuser, "-u", "postgres", "--"]
        shutil.chown(directory, "postgres", "postgres")
        os.chmod(directory, 0o700)
    data = directory / "data"
    port = _free_port()

    def run(command: list[str], what: str) -> None:
        result = subprocess.run([*as_postgres, *command], capture_output=True, text=True,
                                timeout=120, check=False)
        if result.returncode != 0:
            log = directory / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise PostgresUnavailable(
                f"{what} failed ({result.returncode}): {result.stderr.strip()}\n{tail}")

    run([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
         "--no-sync"], "initdb")
    run([pg_ctl, "start", "-D", str(data), "-o", _options(port, directory), "-l",
         str(directory / "server.log"), "-w", "-t", "60"], "pg_ctl start")
    server = PostgresServer(directory, port, pg_ctl, as_postgres)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise PostgresUnavailable(f"PostgreSQL did not listen on port {port}") from None
            time.sleep(0.1)
