"""Freed heap pages go back to the system when asked (grading.memory.give_back)."""

import sys

import pytest

from grading.memory import give_back


def _resident_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, glibc's call")
def test_freed_heap_pages_held_by_the_allocator_are_given_back():
    # 120 MB of 2 KB blocks (malloc's heap, not pymalloc's arenas nor mmap), then all but
    # one in 64 freed: the ones kept pin the heap, so glibc keeps the freed pages between
    # them resident until they are trimmed
    blocks = [bytes(2048) for _ in range(60_000)]
    kept = blocks[::64]
    del blocks
    held = _resident_mb()
    assert give_back() is True
    given = _resident_mb()
    assert held - given > 60, (held, given)
    assert len(kept) == 938  # still alive: what they pin was not what was given back

