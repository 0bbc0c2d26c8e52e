"""The early start of the files a source knows before a version's index is made
(:meth:`~wgtpm.sources.Source.known_files`), run on their own threads meanwhile."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import ClassVar

from .. import _interrupt
from ..index import IndexEntry
from ._jobs import run_files
from ._unit import Unit

__all__ = ["Early"]


class Early:
    """Downloads of the files a source knew of before its index was made.

    Each file's blob is downloaded and verified as any other (``fetch_blob``, the
    fetcher's) but not linked: the unit links it once the index lists it. Its error is
    kept and raised by :meth:`raise_for` when the index lists the file, since the
    unit's download of that file is the one that failed.
    """

    NONE: ClassVar[Early]

    def __init__(
        self,
        fetch_blob: Callable[[IndexEntry], None] | None,
        entries: list[IndexEntry],
        unit: Unit | None,
        jobs: int,
    ) -> None:
        self._keys = {Early._key(e) for e in entries}
        self._errors: dict[tuple[str, int, str], BaseException] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._unit = unit
        if fetch_blob is None or not entries:
            return

        def one(e: IndexEntry) -> None:
            try:
                fetch_blob(e)
            except BaseException as exc:  # raised by raise_for(), if the index lists it
                with self._lock:
                    self._errors[Early._key(e)] = exc

        def run() -> None:
            with contextlib.suppress(BaseException):  # Ctrl-C: the unit's thread reports it
                run_files(entries, one, jobs)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    @staticmethod
    def _key(e: IndexEntry) -> tuple[str, int, str]:
        return (e.path, e.size, e.sha256)

    def __contains__(self, e: IndexEntry) -> bool:
        return Early._key(e) in self._keys

    def wait(self) -> None:
        """Return once every early download has ended (at once on Ctrl-C)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.1)
            _interrupt.check()

    def raise_for(self, e: IndexEntry) -> None:
        """Raise the error the early download of ``e`` ended with, if it failed."""
        with self._lock:
            err = self._errors.get(Early._key(e))
        if err is not None:
            raise err

    def stop(self) -> None:
        """Stop the early downloads at their next chunk (the unit failed) and wait for them;
        what they wrote stays for resuming."""
        if self._thread is None or self._unit is None:
            return
        self._unit.stop()
        if not _interrupt.CANCEL.is_set():
            self._thread.join()


Early.NONE = Early(None, [], None, 1)
