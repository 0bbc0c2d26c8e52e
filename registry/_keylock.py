"""One in-process lock per key, made on first use and dropped after its last holder."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["KeyedLocks"]

K = TypeVar("K", bound=Hashable)


class KeyedLocks(Generic[K]):
    """Locks by key (a version, a page): :meth:`hold` serialises the holders of one key.
    A key's lock lives while someone holds or waits for it, so that a waiter and a
    newcomer share it (one computation per key, however many ask at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[K, tuple[threading.Lock, int]] = {}

    @contextlib.contextmanager
    def hold(self, key: K) -> Iterator[None]:
        """Held while the caller works on ``key``."""
        with self._lock:
            lock, n = self._held.get(key, (threading.Lock(), 0))
            self._held[key] = (lock, n + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                n = self._held[key][1] - 1
                if n:
                    self._held[key] = (lock, n)
                else:
                    del self._held[key]
