"""Tasks run on a few threads, taken one at a time, stopped at the first error."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from .. import _interrupt

__all__ = ["run_all"]


def run_all(tasks: Iterable[Callable[[], None]], jobs: int) -> None:
    """Run ``tasks`` on ``jobs`` daemon threads; return when all are done, raise the first error.

    The threads take the tasks from the iterable one at a time, so a generator costs
    memory for the tasks running, not for all of them (a release may list 100,000 files).
    Daemon threads, and a wait that wakes for Ctrl-C: an interrupted command
    returns (and exits) at once, even while a thread is still blocked on a
    server that sends nothing; the threads stop at their next chunk (partial
    files on disk are only ever appended to, so wherever a thread stops, what
    is there resumes). After the first error no new task starts.
    """
    todo = iter(tasks)
    errors: list[BaseException] = []
    running = [jobs]
    done = threading.Event()
    lock = threading.Lock()

    def worker() -> None:
        try:
            while True:
                try:
                    with lock:  # a generator is not safe for threads
                        task = None if errors else next(todo, None)
                    if task is None:
                        return
                    task()
                except BaseException as exc:  # handed to the waiting thread
                    with lock:
                        errors.append(exc)
                    done.set()
                    return
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    done.set()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(jobs)]
    for th in threads:
        th.start()
    while not done.wait(0.1):
        if _interrupt.CANCEL.is_set():
            # give the threads a moment to stop at their next chunk and close their files
            done.wait(0.5)
            raise _interrupt.Interrupted()
    if errors:
        if not _interrupt.CANCEL.is_set():
            for th in threads:  # nothing may still write once the caller goes on
                th.join()
        raise errors[0]
