"""Freed memory handed back to the operating system, and the threads of a process kept on
one heap.

glibc's allocator keeps the pages of freed heap memory for later allocations: after a big
computation (tens of thousands of small arrays and rows read, then let go) the process goes
on holding them, and the next big allocation comes on top. ``give_back`` returns the free
pages of the heap (glibc's ``malloc_trim``, a few milliseconds); where the C library has no
such call (macOS, musl) it does nothing. Issue 41: at 100,000 responses the trust report's
shared product started with ~40 MB of such pages held, on top of its 170 MB of columns and
counts.

``one_heap`` keeps every thread's allocations on the process's one heap (glibc's
``mallopt(M_ARENA_MAX, 1)``): glibc gives a new thread a heap of its own (an arena, up to 8
per core), and the app's server runs each page's script on a thread of its own, so what one
page freed sat in its thread's heap while the next page's thread grew another; trimming hands
back only whole free pages of each. Python holds its lock while it allocates, so one heap
costs the server no waiting. ``benchmarks/one_heap.py`` (the Agreement page's readers on
threads one after the other at 100,000 responses, both ways in turns): 11-30 MB less
resident after each page; the peaks about the same (within -12 / +5 MB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import cache

# mallopt's parameter for the most arenas (glibc's malloc.h)
M_ARENA_MAX = -8


@cache
def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        try:
            return ctypes.CDLL("libc.so.6")  # glibc's name: no search needed
        except OSError:
            return ctypes.CDLL(ctypes.util.find_library("c"))
    except (OSError, TypeError):  # no C library
        return None


@cache
def _trim():
    try:
        trim = _libc().malloc_trim
    except AttributeError:  # no C library, or one without the call (musl)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


@cache
def one_heap() -> bool:
    """Threads started from now on allocate from the process's one heap (see the module's
    text); True when the C library took it. Left alone when ``MALLOC_ARENA_MAX`` is set
    (the person running the process chose), and where the C library has no such call."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = _libc().mallopt
    except AttributeError:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_ARENA_MAX, 1) == 1


def give_back() -> bool:
    """Return the heap's free pages to the system; True if the C library has the call."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
