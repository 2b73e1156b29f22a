"""A large results export written by two processes (issue 41: 100,000 x 3 runs + a panel in
under 30 s on a machine of two cores): this one writes the first runs, a second Python
process the later runs and panels, into a temporary file that this one then copies after its
own, byte for byte. Both read the database at once (SQLite in WAL mode and PostgreSQL serve
concurrent readers); the formatting, which a single process pays alone, is shared.

Why the file is the same as one process writes (tests/storage/test_export_parts.py compares
them byte for byte, on SQLite and PostgreSQL):

- the records are written per run or panel (``export_rows.records``), each in response
  order, in the order the runs and panels were given; the split falls between two of them,
  and the second part's bytes are copied whole after the first's: the order is kept;
- each record depends only on its own run or panel (and the responses, reviews): the
  second process writes the same lines for them with the same columns, which are decided
  here, once, from every run and panel and handed to it;
- a record is written by exactly one of the two.

Streamed, memory flat: the second process writes into an unlinked temporary file (nothing on
disk to leave behind; the same file the export is written to takes the bytes in any case),
and the copy goes a megabyte at a time. If this process fails or is stopped (an exception,
Streamlit stopping the script) the second is killed and its file closed; if this process dies
outright, the second sees its stdin close and exits at once.

Small exports (under ``SPLIT_AT`` records, a single run or panel, an in-memory SQLite that a
second process cannot open) are written by this process alone: starting another costs about
a second; so is any export while the machine has no idle core (``free_core``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sqlalchemy import func, select

from storage import models as m
from storage.engine import SessionFactory
from storage.services.blindness import Sight
from storage.services.panel_upkeep import GRADES

# records (grades of the runs, stored grades of the panels) from which a second process
# writes the later half. Starting it costs ~1.5 s (Python, imports, a connection); one
# process writes ~80 us of CPU per record (100k SQLite, CSV): halving N records saves
# 40 us x N, even at ~40,000, a clear gain from 60,000
SPLIT_AT = 60_000
_ROOT = str(Path(__file__).resolve().parent.parent)
_CHUNK = 1 << 20


class ExportPartFailed(RuntimeError):
    """The second process writing part of an export failed; its last words say why."""


@dataclass(frozen=True)
class Part:
    """Runs and panels written by one process, in this order: runs, then panels."""

    run_ids: tuple[int, ...]
    panel_ids: tuple[int, ...]


def _sizes(sessions: SessionFactory, run_ids: Sequence[int],
           panel_ids: Sequence[int]) -> list[int]:
    """Records of each run (its grades), then of each panel (its stored grades)."""
    g, p = m.GradeRow, GRADES.c
    with sessions() as session:
        runs = {rid: n for rid, n in session.execute(
            select(g.run_id, func.count()).where(g.run_id.in_(run_ids)).group_by(g.run_id))}
        kept = {pid: n for pid, n in session.execute(
            select(p.panel_id, func.count()).where(p.panel_id.in_(panel_ids))
            .group_by(p.panel_id))}
    return [runs.get(i, 0) for i in run_ids] + [kept.get(i, 0) for i in panel_ids]


def _shareable(sessions: SessionFactory) -> bool:
    """A database another process can open: a server, or an SQLite file."""
    url = sessions.kw["bind"].url
    if url.get_backend_name() != "sqlite":
        return True
    return bool(url.database) and url.database != ":memory:" and "mode=memory" not in str(url)


def _url(sessions: SessionFactory) -> str:
    """The database's URL for the second process (which runs in the code's folder): an
    SQLite file's path made absolute."""
    url = sessions.kw["bind"].url
    if url.get_backend_name() == "sqlite" and not url.database.startswith("file:"):
        url = url.set(database=os.path.abspath(url.database))
    return url.render_as_string(hide_password=False)


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of every core since boot (Linux /proc/stat)."""
    with open("/proc/stat", encoding="ascii") as stat:
        values = [int(v) for v in stat.readline().split()[1:9]]
    return values[3] + values[4], sum(values)  # idle + iowait; user .. steal


def idle_cores(seconds: float = 0.1) -> float:
    """How many cores stood idle over the next ``seconds`` (this process sleeping through
    them, so it counts only the others' work); without /proc/stat, the last minute's load
    average taken from the cores."""
    cores = os.cpu_count() or 1
    try:
        idle, total = _cpu_times()
        time.sleep(seconds)
        idle_after, total_after = _cpu_times()
    except (OSError, ValueError, IndexError):
        try:
            return max(0.0, cores - os.getloadavg()[0])
        except (AttributeError, OSError):  # neither (Windows): no second process
            return 0.0
    spent = total_after - total
    return cores * (idle_after - idle) / spent if spent > 0 else float(cores)


def free_core(idle: float | None = None) -> bool:
    """Is a core idle for the second process besides the one this process works on (of
    ``idle`` idle cores; default: measured now, ``idle_cores``)? On a busy machine the two
    processes share one core: the second's start is paid and nothing is gained (100k CSV
    with another process busy on one of two cores: 45.4 s, 29.0 s of CPU, against 36.8 s
    alone)."""
    return (idle_cores() if idle is None else idle) >= 1.5


def split(sessions: SessionFactory, run_ids: Sequence[int], panel_ids: Sequence[int]
          ) -> tuple[Part, Part | None]:
    """The part this process writes, and the later part a second process writes (None: this
    process writes everything). The two parts are as near in records as the runs' and
    panels' boundaries allow."""
    everything = Part(tuple(run_ids), tuple(panel_ids))
    if (os.name != "posix" or len(run_ids) + len(panel_ids) < 2
            or not _shareable(sessions)):  # (the file descriptor handed over needs POSIX)
        return everything, None
    sizes = _sizes(sessions, run_ids, panel_ids)
    total = sum(sizes)
    # The idle cores last: measuring them sleeps 0.1 s, which an export too small to split
    # (nearly every one) never needs to wait.
    if total < SPLIT_AT or not free_core():
        return everything, None
    best, at, mine = None, 0, 0
    for k in range(1, len(sizes)):
        mine += sizes[k - 1]
        gap = abs(mine - (total - mine))
        if best is None or gap < best:
            best, at = gap, k
    keys = [("run", i) for i in run_ids] + [("panel", i) for i in panel_ids]

    def part(chosen: list[tuple[str, int]]) -> Part:
        return Part(tuple(i for kind, i in chosen if kind == "run"),
                    tuple(i for kind, i in chosen if kind == "panel"))

    return part(keys[:at]), part(keys[at:])


class Later:
    """The second process at work; ``copy_to`` waits for it and appends its bytes."""

    def __init__(self, process: subprocess.Popen, output: int, said: IO[bytes],
                 complaint: IO[bytes]):
        self._process, self._output = process, output
        self._said, self._complaint = said, complaint

    def copy_to(self, target: IO[str]) -> int:
        """Wait for the second process, then write what it wrote after ``target``'s text;
        the number of records it wrote."""
        if self._process.wait() != 0:
            self._complaint.seek(0)
            words = self._complaint.read().decode("utf-8", "replace").strip().splitlines()
            raise ExportPartFailed(
                "the second process writing the export's later runs failed "
                f"(exit {self._process.returncode}): {words[-1] if words else 'no message'}")
        self._said.seek(0)
        count = json.loads(self._said.read().decode("utf-8").strip().splitlines()[-1])["count"]
        os.lseek(self._output, 0, os.SEEK_SET)
        buffer = getattr(target, "buffer", None)
        if buffer is not None and str(getattr(target, "encoding", "")).lower() in (
                "utf-8", "utf8"):
            target.flush()  # its own text first, then the bytes as written
            buffer.flush()
            if not _copied_in_kernel(self._output, buffer):
                with open(self._output, "rb", closefd=False) as found:
                    shutil.copyfileobj(found, buffer, _CHUNK)
                buffer.flush()
        else:
            with open(self._output, encoding="utf-8", newline="", closefd=False) as found:
                shutil.copyfileobj(found, target, _CHUNK)
        return count


def _copied_in_kernel(source: int, buffer: IO[bytes]) -> bool:
    """The whole of ``source`` (its offset at 0) appended to ``buffer``'s file by the kernel
    (Linux ``copy_file_range``: no pass through Python), when both are files that allow
    it; False, nothing copied, otherwise. ``buffer`` was flushed and is written to no more
    here."""
    done = 0
    try:
        target, size = buffer.fileno(), os.fstat(source).st_size
        while done < size:
            step = os.copy_file_range(source, target, size - done)
            if step == 0:
                raise ExportPartFailed(
                    f"the export's later part was copied short: {done} of {size} bytes")
            done += step
    except (AttributeError, OSError, io.UnsupportedOperation):
        if done:  # part of it went: the copy cannot start again
            raise
        return False
    return True


@contextmanager
def later(sessions: SessionFactory, part: Part, fmt: str, sight: Sight,
          columns: Sequence[str] | None, uploaded: Sequence[str] | None
          ) -> Iterator[Later]:
    """A second process writing ``part`` of the export (its records only: no header),
    started now; killed if it is still running when this ends (an error, a stop)."""
    fd, path = tempfile.mkstemp(prefix="rubric-workbench-export-part-")
    os.unlink(path)  # nothing left on disk, whatever happens
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, env.get("PYTHONPATH")]))
    job = {"url": _url(sessions),
           "runs": part.run_ids, "panels": part.panel_ids, "fmt": fmt, "fd": fd,
           "sight": {"viewer": sight.viewer, "sees_all": sight.sees_all},
           "columns": columns, "uploaded": uploaded}
    try:
        with tempfile.TemporaryFile() as said, tempfile.TemporaryFile() as complaint, \
                subprocess.Popen([sys.executable, "-m", "storage.export_parts"],
                                 stdin=subprocess.PIPE, stdout=said, stderr=complaint,
                                 pass_fds=(fd,), env=env, cwd=_ROOT) as process:
            try:
                process.stdin.write((json.dumps(job) + "\n").encode("utf-8"))
                process.stdin.flush()  # kept open: the second process exits when it closes
                yield Later(process, fd, said, complaint)
            finally:
                if process.poll() is None:
                    process.kill()
                process.wait()
    finally:
        os.close(fd)


def _exit_when_parent_goes() -> None:
    """Stop this process when the one that started it closes our stdin (or dies). Raw reads
    of descriptor 0: a daemon thread blocked in ``sys.stdin``'s buffered reader aborts the
    interpreter's exit."""
    while os.read(0, _CHUNK):
        pass
    os._exit(3)


def _job() -> dict:
    """The job: stdin's first line (read raw, a byte at a time: nothing else is sent)."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            raise SystemExit("no job on stdin")
        line += byte
    return json.loads(line)


def main() -> int:
    """``python -m storage.export_parts``: the job on stdin's first line; the records
    written to its file descriptor; their count printed."""
    job = _job()
    threading.Thread(target=_exit_when_parent_goes, daemon=True).start()
    from storage import exports
    from storage.engine import open_database

    sessions = open_database(job["url"], migrate=False)
    with open(job["fd"], "w", encoding="utf-8", newline="") as target:
        count = exports.write_records(
            sessions, job["runs"], job["panels"], target, job["fmt"],
            Sight(**job["sight"]), job["columns"], job["uploaded"])
    sessions.kw["bind"].dispose()
    print(json.dumps({"count": count}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
