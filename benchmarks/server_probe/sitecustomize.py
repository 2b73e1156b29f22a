"""Where the app's server holds its memory: put this folder on ``PYTHONPATH`` for a run of
``benchmarks/app_pages.py`` (its server inherits the environment) and name the output files.

    PYTHONPATH=benchmarks/server_probe PROBE_PEAKS=/tmp/peaks PROBE_CACHES=/tmp/caches.txt \\
        .venv/bin/python benchmarks/app_pages.py --keep DIR --size 100000 --after-grade

In the Streamlit process only (the other processes that read this file do nothing):

- ``PROBE_PEAKS``: a thread reads the process's resident memory every 10 ms and, at each new
  high (8 MB above the last), writes the time, the MB and every thread's stack (this
  project's frames) to ``<PROBE_PEAKS>.<pid>``: what was running when the memory grew.
- ``PROBE_CACHES``: when the server stops, the deep size (objects reachable, each counted
  once, in the caches' order) of each Streamlit cache's entries, to that file.

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
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


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
    with open(path, "w") as out:
        for size, kind, name in sorted(sizes, reverse=True):
            out.write(f"{size / 1e6:8.1f} MB  {kind:8s} {name}\n")


if os.environ.get("PROBE_PEAKS"):
    threading.Thread(target=_sample, args=(os.environ["PROBE_PEAKS"],), daemon=True).start()
if os.environ.get("PROBE_CACHES"):
    import atexit

    atexit.register(_cache_sizes, os.environ["PROBE_CACHES"])
