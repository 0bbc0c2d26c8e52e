"""One torch thread for a CPU build: what WeightLang builds and PAW training share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["one_cpu_thread"]


@contextmanager
def one_cpu_thread(device_type: str = "cpu") -> Iterator[None]:
    """Run torch on one thread meanwhile when ``device_type`` is ``cpu`` (else change nothing).

    The sums of a multi-threaded CPU kernel may be split differently on a
    machine with another core count, so one thread is what makes a rebuild
    elsewhere (``wgtpm verify --rebuild``) give the same bytes. It is also
    what keeps a build usable on a busy machine: the tests' ten-step PAW
    program took 9 s on one thread and had not finished after 330 s on two,
    with two cores shared by about 15 runnable processes (OpenMP workers spin
    waiting for each other). On CUDA and MPS nothing changes.
    """
    if device_type != "cpu":
        yield
        return
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
