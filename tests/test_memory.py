"""A download holds a bounded window of a file in memory, whatever the file's size
(issue 15: a get stays under 200 MB; ``benchmarks/bench_memory.py`` measures 4 GiB).

The bytes between the thread that reads a large file and the thread that writes and
hashes it wait in a queue bounded in bytes (:data:`wgtpm.modfetch.QUEUE_BYTES`): a
queue bounded in chunks held 512 MiB when the source was read 1 MiB at a time
(``file://``, range files being merged), since reading outruns hashing.

A repository of many small files holds, per file, only its listing and index entry
(compact records), not its bytes (kept from indexing within a budget, then on disk),
nor a future or a fetch task made up front."""

from __future__ import annotations

import functools
import os
import queue
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from wgtpm import modfetch
from wgtpm.cache import Cache
from wgtpm.modfetch import _ByteQueue
from wgtpm.proxytree import ProxyTree
from wgtpm.sources._hosted import BodyKeeper
from wgtpm.sources.huggingface import _map_ahead

MiB = 1 << 20


def test_byte_queue_is_bounded_in_bytes_not_chunks() -> None:
    q = _ByteQueue(4 * MiB)
    for _ in range(4):
        q.put_nowait(b"x" * MiB)
    with pytest.raises(queue.Full):
        q.put_nowait(b"x")  # 4 MiB held: no more, not even a small chunk
    assert q.get_nowait() == b"x" * MiB
    q.put_nowait(b"y" * (3 * MiB))  # 3 MiB held: a chunk may go past the bound once
    with pytest.raises(queue.Full):
        q.put_nowait(None)
    while q.get_nowait() != b"y" * (3 * MiB):
        pass
    assert q.empty()
    q.put_nowait(b"z" * (8 * MiB))  # a chunk larger than the bound still goes into an empty queue
    assert q.get_nowait() == b"z" * (8 * MiB)


def test_end_of_stream_and_empty_chunks_are_seen() -> None:
    q = _ByteQueue(MiB)
    q.put_nowait(b"")
    q.put_nowait(None)
    assert q.qsize() == 2
    assert q.get_nowait() == b""
    assert q.get_nowait() is None
    assert q.empty()


def test_get_from_a_file_tree_holds_a_window_not_the_file(
    tree: ProxyTree, project: Path, wgtpm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``file://`` reads 1 MiB at a time, faster than a second thread can hash and write
    them: what waits in memory must stay within the queue's bound, not grow with the file."""
    size = 160 * MiB
    module = "example.com/big"
    data = os.urandom(size)
    tree.add(module, "v0.1.0", {"weights.bin": data})
    del data
    monkeypatch.setenv("WGTPROXY", tree.url)
    tracemalloc.start()
    try:
        r = wgtpm("get", "-q", f"{module}@v0.1.0", cwd=project)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.code == 0, r.err
    assert (Cache().mod_dir(module, "v0.1.0") / "weights.bin").stat().st_size == size
    bound = modfetch.QUEUE_BYTES + 16 * MiB  # the queue, a chunk in each thread, the rest
    assert peak < bound, f"peak {peak / MiB:.0f} MiB traced while getting a {size // MiB} MiB file"


# ---- a repository of many small files (issue 15: 50,000 files of 1-3 KB from the Hub) ----


def test_bodies_beyond_the_memory_budget_wait_on_disk() -> None:
    """The small files Hugging Face indexing downloaded are kept for the fetcher in memory
    up to a budget, then in a temporary file; beyond both, not at all."""
    keeper = BodyKeeper(4 * MiB, spill=8 * MiB)
    bodies = {i: os.urandom(MiB) for i in range(14)}
    tracemalloc.start()
    try:
        kept = [keeper.keep(i, bodies[i]) for i in range(14)]
        bodies = {i: b for i, b in bodies.items() if not kept[i]}  # as a source drops them
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept == [True] * 12 + [False] * 2  # 4 MiB in memory, 8 on disk, then none
    assert held < 4 * MiB + MiB // 2, f"{held / MiB:.1f} MiB held for 4 MiB of budget"
    assert keeper.keep(3, b"again") is False  # kept once
    for i in range(12):
        body = keeper.take(i)
        assert body is not None and len(body) == MiB
        assert keeper.take(i) is None  # taken once
    assert keeper.take(13) is None


def test_bodies_are_kept_in_memory_only_without_a_spill_budget() -> None:
    keeper = BodyKeeper(10)
    assert keeper.keep("a", b"x" * 6) and not keeper.keep("b", b"y" * 6)
    assert keeper.take("a") == b"x" * 6 and keeper.take("b") is None
    assert keeper.keep("b", b"y" * 6)  # the budget is free again


def test_fetch_tasks_are_made_as_the_threads_take_them() -> None:
    """One task per file of a release (up to 100,000) is not built up front."""
    lock = threading.Lock()
    made, finished, ahead = [0], [0], [0]

    def run() -> None:
        with lock:
            finished[0] += 1

    def tasks() -> Iterator[Callable[[], None]]:
        for _ in range(2000):
            with lock:
                made[0] += 1
                ahead[0] = max(ahead[0], made[0] - finished[0])
            yield run

    modfetch._run_all(tasks(), 4)
    assert finished[0] == 2000
    assert ahead[0] <= 4, f"{ahead[0]} tasks made before they ran"


def test_fetch_tasks_stop_at_the_first_error() -> None:
    ran: list[int] = []

    def task(i: int) -> None:
        ran.append(i)
        if i == 5:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        modfetch._run_all((functools.partial(task, i) for i in range(10_000)), 1)
    assert ran == list(range(6))


def test_index_synthesis_submits_a_window_of_files_not_all() -> None:
    """``Executor.map`` holds a future for each of a repository's files at once."""
    lock = threading.Lock()
    pulled, done, ahead = [0], [0], [0]

    def items() -> Iterator[int]:
        for i in range(2000):
            with lock:
                pulled[0] += 1
                ahead[0] = max(ahead[0], pulled[0] - done[0])
            yield i

    def square(i: int) -> int:
        return i * i

    with ThreadPoolExecutor(4) as pool:
        out = []
        for r in _map_ahead(pool, square, items(), 16):
            with lock:
                done[0] += 1
            out.append(r)
    assert out == [i * i for i in range(2000)]  # in order
    assert ahead[0] <= 16, f"{ahead[0]} files submitted ahead"


def test_index_synthesis_raises_the_first_error_and_cancels_the_rest() -> None:
    started: list[int] = []

    def fn(i: int) -> int:
        started.append(i)
        if i == 3:
            raise ValueError("bad file")
        return i

    with ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="bad file"):
        list(_map_ahead(pool, fn, range(10_000), 8))
    assert len(started) < 20
