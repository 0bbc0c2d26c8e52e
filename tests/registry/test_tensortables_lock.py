"""registry/tensortables.py: one computation of a version's tables at a time in a process.

A request that waited for another's computation and a request that comes after
share one lock: the second computation (after the first's answer was lost, say)
never runs beside a third.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from registry import tensortables


def test_a_newcomer_waits_for_the_computation_a_waiter_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    v = SimpleNamespace(module="example.com/m", version="v1.0.0", private=False)
    reg: Any = SimpleNamespace(
        version=lambda *a: v,
        meta=SimpleNamespace(get_tensor_tables=lambda *a: None),  # never recorded
        blobs=SimpleNamespace(size=lambda sha: 1),
    )
    lock = threading.Lock()
    inside, most, calls = [0], [0], []
    go = [threading.Event() for _ in range(3)]

    def compute(reg: Any, v: Any) -> str:
        with lock:
            n = len(calls)
            calls.append(n)
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        go[n].wait(10)
        with lock:
            inside[0] -= 1
        return "0" * 64

    monkeypatch.setattr(tensortables, "_compute", compute)

    def until(cond: Any) -> None:
        for _ in range(500):
            if cond():
                return
            time.sleep(0.01)
        raise AssertionError("timed out")

    threads = [threading.Thread(target=tensortables.tables_of, args=(reg, v.module, v.version))]
    threads[0].start()
    until(lambda: len(calls) == 1)  # A computes
    threads.append(threading.Thread(target=tensortables.tables_of, args=(reg, v.module, v.version)))
    threads[1].start()
    time.sleep(0.2)  # B waits for A's lock
    go[0].set()
    until(lambda: len(calls) == 2)  # A is done; B computes
    threads.append(threading.Thread(target=tensortables.tables_of, args=(reg, v.module, v.version)))
    threads[2].start()
    time.sleep(0.2)  # C must wait for B, not compute beside it
    seen = len(calls)
    for e in go:
        e.set()
    for t in threads:
        t.join(10)
    assert seen == 2
    assert most[0] == 1
