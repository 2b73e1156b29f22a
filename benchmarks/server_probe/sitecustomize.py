"""Where the app's server holds its memory: put this folder on ``PYTHONPATH`` for a run of
``benchmarks/app_pages.py`` (its server inherits the environment) and name the output files.

    PYTHONPATH=benchmarks/server_probe PROBE_PEAKS=/tmp/peaks PROBE_CACHES=/tmp/caches.txt \\
        .venv/bin/python benchmarks/app_pages.py --keep DIR --size 100000 --after-grade

In the Streamlit process only (the other processes that read this file do nothing):

- ``PROBE_PEAKS``: a thread reads the process's resident memory every 10 ms and, at each new
  high (8 MB above the last), writes the time, the MB and every thread's stack (this
  project's frames) to ``<PROBE_PEAKS>.<pid>``: what was running when the memory grew.
- ``PROBE_CACHES``: when the server stops, the deep size (objects reachable, each counted
  once, in the caches' order) of each Streamlit cache's entries, of the runtime's parts,
  the objects reachable from none of them (by type, and the largest with their holders),
  and the heap: glibc's pages in use and free before and after ``malloc_trim``, Python's
  small-object arenas (session 46: at the end of the tour, ~190 MB of Python objects of
  which ~92 MB are the imports', and ~165 MB of the C heap in use), to that file.

A measuring aid, not part of the app: Python runs ``sitecustomize`` at start-up when it is
on the path (issue 41, session 45).
"""

import os
import sys
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _is_server() -> bool:
    with open("/proc/self/cmdline", "rb") as cmdline:
        return b"streamlit" in cmdline.read()


def _resident_mb() -> float:
    reader = _readers.get("resident")
    if reader is None:  # benchmarks/proc_memory.py, beside this folder (not left on the path)
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            from proc_memory import resident_mb
        finally:
            del sys.path[0]
        reader = _readers["resident"] = resident_mb
    return reader()


_readers: dict = {}


def _stacks() -> list[str]:
    found = []
    for frame in sys._current_frames().values():
        ours = [f"{s.filename[len(ROOT):]}:{s.lineno} {s.name}"
                for s in traceback.extract_stack(frame)
                if s.filename.startswith(ROOT) and ".venv" not in s.filename]
        if ours:
            found.append(" <- ".join(reversed(ours[-8:])))
    return found


def _sample(path: str) -> None:
    time.sleep(3)  # the command line is the server's once it runs
    if not _is_server():
        return
    highest = 0.0
    with open(f"{path}.{os.getpid()}", "a") as out:
        while True:
            now = _resident_mb()
            if now > highest + 8:
                highest = now
                out.write(f"{time.strftime('%H:%M:%S')} {now:.0f} MB\n   "
                          + "\n   ".join(_stacks()) + "\n")
                out.flush()
            time.sleep(0.01)


def _cache_sizes(path: str) -> None:
    if not _is_server():
        return
    import gc
    from types import FunctionType, ModuleType

    from streamlit.runtime.caching import cache_data_api, cache_resource_api

    seen: set[int] = set()

    def deep(value) -> int:
        total, stack = 0, [value]
        while stack:
            item = stack.pop()
            if id(item) in seen or isinstance(item, (type, ModuleType, FunctionType)):
                continue
            seen.add(id(item))
            total += sys.getsizeof(item)
            stack.extend(gc.get_referents(item))
        return total

    sizes = []
    for caches in cache_resource_api._resource_caches._function_caches.values():
        for key, cache in caches.items():
            sizes.append((deep(cache), "resource", getattr(cache, "display_name", key)))
    for key, cache in cache_data_api._data_caches._function_caches.items():
        sizes.append((deep(cache), "data", getattr(cache, "display_name", None) or key))
    from streamlit.runtime import Runtime

    if Runtime.exists():
        runtime = Runtime.instance()
        for name in ("_session_mgr", "_media_file_mgr", "_dataframe_source_mgr",
                     "_script_cache", "_uploaded_file_mgr", "_stats_mgr"):
            sizes.append((deep(getattr(runtime, name, None)), "runtime", name))
    census: dict[str, list[int]] = {}
    for item in gc.get_objects():
        if id(item) in seen or item is seen:
            continue
        entry = census.setdefault(type(item).__name__, [0, 0])
        entry[0] += 1
        entry[1] += sys.getsizeof(item)
    big = sorted((item for item in gc.get_objects() if id(item) not in seen
                  and item is not seen),
                 key=sys.getsizeof, reverse=True)[:8]
    for item in big:
        holders = []
        for ref in gc.get_referrers(item):
            if ref is big or isinstance(ref, type(sys._getframe())):
                continue
            label = type(ref).__name__
            if isinstance(ref, dict):
                label += ":" + ",".join(str(k) for k, v in list(ref.items())[:40]
                                        if v is item)[:80]
            holders.append(label)
        sizes.append((sys.getsizeof(item), "largest", f"{type(item).__name__} of "
                      f"{len(item) if hasattr(item, '__len__') else '?'} held by "
                      f"{holders[:4]}"))
    for name, (count, size) in sorted(census.items(), key=lambda kv: -kv[1][1])[:12]:
        sizes.append((size, "elsewhere", f"{name} x {count} (not the contents)"))
    with open(path, "w") as out:
        for size, kind, name in sorted(sizes, reverse=True):
            out.write(f"{size / 1e6:8.1f} MB  {kind:8s} {name}\n")
        out.write(_heap())


def _heap() -> str:
    """Where the resident memory is at the end: the C heap's pages in use and free (glibc's
    mallinfo2, before and after handing the free ones back) and Python's small-object
    arenas (``sys._debugmallocstats``, its summary lines)."""
    import ctypes
    import tempfile

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Info
    lines = []
    for when in ("at exit", "after malloc_trim"):
        if when != "at exit":
            libc.malloc_trim(0)
        info = libc.mallinfo2()
        lines.append(f"{when}: resident {_resident_mb():.0f} MB; heap {info.arena / 1e6:.0f} MB "
                     f"(in use {info.uordblks / 1e6:.0f}, free {info.fordblks / 1e6:.0f}), "
                     f"mmapped blocks {info.hblkhd / 1e6:.0f} MB")
    with tempfile.TemporaryFile("w+") as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
        err.seek(0)
        stats = err.read()
    lines += [line for line in stats.splitlines()
              if any(word in line for word in ("arenas allocated current", "bytes in allocated",
                                                "bytes in available", "Total ", "# arenas"))]
    return "\n".join(lines) + "\n"


if os.environ.get("PROBE_PEAKS"):
    threading.Thread(target=_sample, args=(os.environ["PROBE_PEAKS"],), daemon=True).start()
if os.environ.get("PROBE_CACHES"):
    import atexit

    atexit.register(_cache_sizes, os.environ["PROBE_CACHES"])
