"""Tasks run on a few threads, taken one at a time, stopped at the first error; files
run in two lanes by size (:func:`run_files`)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

from .. import _interrupt
from .. import modfetch as _limits
from ..index import IndexEntry

__all__ = ["run_all", "run_files"]

Lane = tuple[Iterable[Callable[[], None]], int]


def run_files(
    entries: Sequence[IndexEntry], fetch: Callable[[IndexEntry], None], jobs: int
) -> None:
    """``fetch`` each of ``entries``, in two lanes at once: the files of
    :data:`~wgtpm.modfetch.RANGED_MIN` bytes and up on up to ``jobs`` threads, and the
    others on up to :data:`~wgtpm.modfetch.SMALL_JOBS` times as many.

    A large file comes as ranges on threads of its own, and its job thread only hashes
    what they bring, for most of the download; in one lane, a few such files kept the
    small ones, whose time is round trips, waiting behind them to the end (311 MB of
    16 large and 44 small files at 40 ms a request: the small files came last, in
    0.4 s of the 1.2). A small file's time is a request or two; with twice the threads
    the same get took 0.94-1.03 s rather than 1.05-1.16. Files are taken in the order
    given within each lane.
    """
    big = [e for e in entries if e.size >= _limits.RANGED_MIN]
    small = [e for e in entries if e.size < _limits.RANGED_MIN]
    run_lanes(
        ((functools.partial(fetch, e) for e in lane), min(n, len(lane)))
        for lane, n in ((big, jobs), (small, jobs * _limits.SMALL_JOBS))
        if lane
    )


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
    run_lanes([(tasks, jobs)])


def run_lanes(lanes: Iterable[Lane]) -> None:
    """:func:`run_all` of each lane's tasks on its own threads, all lanes at once; return
    when all are done, raise the first error (after which no task starts in any lane)."""
    plan = [(iter(tasks), max(1, jobs)) for tasks, jobs in lanes]
    if not plan:
        return
    errors: list[BaseException] = []
    running = [sum(jobs for _, jobs in plan)]
    done = threading.Event()
    lock = threading.Lock()

    def worker(todo: Iterator[Callable[[], None]]) -> None:
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

    threads = [
        threading.Thread(target=worker, args=(todo,), daemon=True)
        for todo, jobs in plan
        for _ in range(jobs)
    ]
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
