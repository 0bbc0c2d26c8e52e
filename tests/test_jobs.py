"""Files fetched in two lanes by size (wgtpm/modfetch/_jobs.py ``run_files``)."""

from __future__ import annotations

import threading

import pytest

from wgtpm import modfetch
from wgtpm.index import IndexEntry
from wgtpm.modfetch._jobs import run_files

BIG = modfetch.RANGED_MIN


def _entry(name: str, size: int) -> IndexEntry:
    return IndexEntry(name, size, "0" * 64)


def test_small_files_do_not_wait_behind_large_ones() -> None:
    """One job: each large file waits until every small file has come, which only a lane
    of their own allows (in one lane the first large file would hold the only thread)."""
    small_done = threading.Event()
    order: list[str] = []
    lock = threading.Lock()
    entries = [_entry("a.bin", BIG), _entry("b.bin", BIG * 2), _entry("c.json", 10)]
    entries += [_entry("d.json", BIG - 1)]

    def fetch(e: IndexEntry) -> None:
        if e.size >= BIG:
            assert small_done.wait(10), "the small files were kept waiting"
        with lock:
            order.append(e.path)
            if {"c.json", "d.json"} <= set(order):
                small_done.set()

    run_files(entries, fetch, 1)
    assert set(order[:2]) == {"c.json", "d.json"}  # two small files at once (SMALL_JOBS)
    assert order[2:] == ["a.bin", "b.bin"]  # one large one at a time, in the order given


def test_the_small_lane_has_twice_the_threads() -> None:
    running, peak = [0], [0]
    lock = threading.Lock()
    gate = threading.Barrier(2 * modfetch.SMALL_JOBS, timeout=10)

    def fetch(e: IndexEntry) -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        gate.wait()  # all of them at once, or a BrokenBarrierError
        with lock:
            running[0] -= 1

    run_files([_entry(f"s{i}", 1) for i in range(2 * modfetch.SMALL_JOBS)], fetch, 2)
    assert peak[0] == 2 * modfetch.SMALL_JOBS


def test_the_first_error_of_either_lane_is_raised_and_stops_both() -> None:
    started: list[str] = []
    entries = [_entry(f"big{i}", BIG) for i in range(3)] + [_entry("small", 1)]

    def fetch(e: IndexEntry) -> None:
        started.append(e.path)
        if e.path == "small":
            raise ValueError("refused")
        threading.Event().wait(1.0)

    with pytest.raises(ValueError, match="refused"):
        run_files(entries, fetch, 1)
    assert "big2" not in started  # no new task after the error


def test_no_files_is_nothing_to_do() -> None:
    run_files([], lambda e: None, 4)
