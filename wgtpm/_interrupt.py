"""Ctrl-C for a command whose work runs on many threads.

Python delivers SIGINT to the main thread only, as a ``KeyboardInterrupt``;
download threads would go on until their files are done (a 200 MiB file at
5 MB/s: 40 s). :func:`handling` (the CLI wraps each command in it) installs a
SIGINT handler that also sets :data:`CANCEL`; every byte loop, retry wait and
thread of the download path checks it (:func:`check`, :func:`sleep`) and
stops with :class:`Interrupted` within one chunk::

    with handling():          # in the main thread
        run_command()         # threads call check() per chunk and sleep() between tries

Partial files are kept as they are (they resume with HTTP Range on the next
run); nothing unverified gets a final name, as on any other failure.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["CANCEL", "Interrupted", "check", "handling", "sleep"]

#: Set by the SIGINT handler of :func:`handling`; cleared when a command starts.
CANCEL = threading.Event()


class Interrupted(KeyboardInterrupt):
    """Raised by a thread that saw :data:`CANCEL`: the user pressed Ctrl-C.

    A ``KeyboardInterrupt`` so that no ``except Exception`` (a source falling
    through to the next, a retry loop) mistakes it for a failure to work around.
    """


def check() -> None:
    """Raise :class:`Interrupted` if the command was interrupted."""
    if CANCEL.is_set():
        raise Interrupted()


def sleep(seconds: float) -> None:
    """``time.sleep(seconds)`` that ends early, with :class:`Interrupted`, on Ctrl-C."""
    if CANCEL.wait(max(0.0, seconds)):
        raise Interrupted()


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Run the block with a SIGINT handler that sets :data:`CANCEL` and raises
    ``KeyboardInterrupt`` in the main thread (as Python's own does).

    Outside the main thread (where handlers cannot be installed) the block runs as is.
    """
    CANCEL.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        CANCEL.set()
        raise KeyboardInterrupt()

    try:
        old = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
