"""A process's resident memory and its peak, read from Linux's ``/proc/<pid>/status``
(``VmRSS`` and ``VmHWM``), in MB: what the memory benchmarks print (issue 41); and what a full
garbage collection costs in it (``full_collection``). Imported by
the benchmarks as a sibling module (they run as scripts from this folder)."""

from __future__ import annotations

from pathlib import Path


def memory_mb(pid: int | str = "self") -> tuple[float, float]:
    """(resident now, peak resident) of the process, in MB (NaN where the kernel gives none)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()

    def mb(name: str) -> float:
        return int(fields[name].split()[0]) / 1024 if name in fields else float("nan")

    return mb("VmRSS"), mb("VmHWM")


def resident_mb(pid: int | str = "self") -> float:
    return memory_mb(pid)[0]


def peak_mb(pid: int | str = "self") -> float:
    return memory_mb(pid)[1]


def full_collection() -> tuple[float, int]:
    """(seconds, tracked objects) of one full pass of the cyclic garbage collector over
    this process's heap as it stands (what is garbage now collected first, untimed): what
    a read in this process may pay when a full collection falls in it."""
    import gc
    import time

    gc.collect()
    started = time.perf_counter()
    gc.collect()
    return time.perf_counter() - started, len(gc.get_objects())
