"""A download holds a bounded window of a file in memory, whatever the file's size
(issue 15: a get stays under 200 MB; ``benchmarks/bench_memory.py`` measures 4 GiB).

The bytes between the thread that reads a large file and the thread that writes and
hashes it wait in a queue bounded in bytes (:data:`wgtpm.modfetch.QUEUE_BYTES`): a
queue bounded in chunks held 512 MiB when the source was read 1 MiB at a time
(``file://``, range files being merged), since reading outruns hashing."""

from __future__ import annotations

import os
import queue
import tracemalloc
from pathlib import Path

import pytest

from wgtpm import modfetch
from wgtpm.cache import Cache
from wgtpm.modfetch import _ByteQueue
from wgtpm.proxytree import ProxyTree

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
