"""storage.gc_pause: the collector is off inside a pause and back after the last one ends,
only if it was on before; an error inside still ends the pause."""

from __future__ import annotations

import gc
import threading

import pytest

from storage.gc_pause import collection_paused


@pytest.fixture(autouse=True)
def _collector_restored():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_off_inside_and_back_after_nested_pauses():
    gc.enable()
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with collection_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_error_inside_ends_the_pause():
    gc.enable()
    with pytest.raises(ValueError), collection_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_pauses_in_two_threads_end_when_both_ended():
    gc.enable()
    inside, leave = threading.Event(), threading.Event()

    def other():
        with collection_paused():
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(5)
    with collection_paused():
        pass
    assert not gc.isenabled()  # the other thread's pause still holds
    leave.set()
    thread.join(5)
    assert gc.isenabled()
