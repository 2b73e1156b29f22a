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



_HEAPS = r"""
import ctypes, sys, tempfile, threading
from grading.memory import one_heap

took = one_heap() if sys.argv[1] == "one" else None
started, go = threading.Barrier(5), threading.Event()

def work():
    started.wait()  # every thread alive at once: glibc gives each one a heap of its own
    blocks = [bytearray(1000) for _ in range(5_000)]  # malloc's, not pymalloc's
    go.wait()
    del blocks

threads = [threading.Thread(target=work) for _ in range(4)]
for thread in threads:
    thread.start()
started.wait()
go.set()
for thread in threads:
    thread.join()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(took, open(out.name).read().count("<heap nr="))
"""


def _heaps(mode: str, **env: str) -> tuple[str, int]:
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _HEAPS, mode], cwd=root, check=True,
                          capture_output=True, text=True,
                          env={**{k: v for k, v in os.environ.items()
                                  if k != "MALLOC_ARENA_MAX"}, **env})
    took, heaps = done.stdout.split()
    return took, int(heaps)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_info")
def test_threads_allocate_from_one_heap_once_asked_and_not_when_the_person_chose():
    # four threads allocating at once: a heap each, and the main one
    assert _heaps("default") == ("None", 5)
    assert _heaps("one") == ("True", 1)
    # MALLOC_ARENA_MAX set by whoever runs the process: theirs, not ours
    assert _heaps("one", MALLOC_ARENA_MAX="3") == ("False", 3)
