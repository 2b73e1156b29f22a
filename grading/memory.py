"""Freed memory handed back to the operating system.

glibc's allocator keeps the pages of freed heap memory for later allocations: after a big
computation (tens of thousands of small arrays and rows read, then let go) the process goes
on holding them, and the next big allocation comes on top. ``give_back`` returns the free
pages of the heap (glibc's ``malloc_trim``, a few milliseconds); where the C library has no
such call (macOS, musl) it does nothing. Issue 41: at 100,000 responses the trust report's
shared product started with ~40 MB of such pages held, on top of its 170 MB of columns and
counts.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache


@cache
def _trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        try:
            libc = ctypes.CDLL("libc.so.6")  # glibc's name: no search needed
        except OSError:
            libc = ctypes.CDLL(ctypes.util.find_library("c"))
        trim = libc.malloc_trim
    except (OSError, TypeError, AttributeError):  # no C library, or one without the call
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back() -> bool:
    """Return the heap's free pages to the system; True if the C library has the call."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
