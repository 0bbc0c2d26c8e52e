"""How library code tells the user what is happening: one interface, rendered by the CLI.

Library code never prints. It is handed a :class:`Reporter` (or uses
:data:`SILENT`) and calls:

- ``notice(message)``: one line of what is being done (``paw fruit: step 3/40 loss 0.41``);
- ``warning(message)``: something the user should act on, that does not stop the command
  (a retracted version in the build list);
- ``start(label, total)``, ``advance(label, n)``, ``finish(label)``: byte progress of one
  unit of work (a module version's download), ``total`` in bytes. A unit that failed
  or was interrupted ends with :func:`end` ``(reporter, label, ok=False)``: reporters
  that can tell the two apart have ``fail(label)`` (:class:`ReportsFailure`), and
  say nothing like "downloaded" for it. A unit is a download unless it is begun
  with :func:`begin` ``(reporter, label, total, upload=True)`` (a publish's file
  going up): reporters that word the two differently have
  ``start_upload(label, total)`` (:class:`ReportsUploads`), and say "uploaded".

The network code reports to the process's :func:`network` reporter (the CLI
sets it with :func:`set_network`): a notice when a server is slow to answer, one
per retry, and with :func:`tracing` (``wgtpm -x``) one line per request.

The CLI decides what a person sees (``wgtpm/cli/_render.py``): a live bar on a
terminal, one quiet line per finished download on a pipe, nothing with ``-q``.
Messages are plain text with no ``wgtpm:`` prefix; the renderer adds it.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

__all__ = [
    "SILENT",
    "Reporter",
    "ReportsFailure",
    "ReportsUploads",
    "Silent",
    "begin",
    "end",
    "human_size",
    "network",
    "set_network",
    "tracing",
]


class Reporter(Protocol):
    """What library code reports to; see the module docstring."""

    def notice(self, message: str) -> None: ...

    def warning(self, message: str) -> None: ...

    def start(self, label: str, total: int) -> None: ...

    def advance(self, label: str, n: int) -> None: ...

    def finish(self, label: str) -> None: ...


@runtime_checkable
class ReportsFailure(Protocol):
    """A reporter that can end a unit of work as failed (no "downloaded" line for it)."""

    def fail(self, label: str) -> None: ...


@runtime_checkable
class ReportsUploads(Protocol):
    """A reporter that words an upload as one ("uploaded", not "downloaded")."""

    def start_upload(self, label: str, total: int) -> None: ...


def begin(reporter: Reporter, label: str, total: int, *, upload: bool = False) -> None:
    """Start unit ``label`` of ``total`` bytes: ``start``, or ``start_upload`` for an upload
    where the reporter has it."""
    if upload and isinstance(reporter, ReportsUploads):
        reporter.start_upload(label, total)
    else:
        reporter.start(label, total)


def end(reporter: Reporter, label: str, ok: bool = True) -> None:
    """End unit ``label``: ``finish`` when ``ok``, else ``fail`` where the reporter has it."""
    if ok:
        reporter.finish(label)
    elif isinstance(reporter, ReportsFailure):
        reporter.fail(label)


def human_size(n: int) -> str:
    """``n`` bytes in binary units: ``512 B``, ``16.7 MiB``."""
    f = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if f < 1024 or unit == "GiB":
            return f"{f:.0f} {unit}" if unit == "B" else f"{f:.1f} {unit}"
        f /= 1024
    return f"{n} B"


class Silent:
    """A reporter that drops everything (library default; ``-q``)."""

    def notice(self, message: str) -> None:
        pass

    def warning(self, message: str) -> None:
        pass

    def start(self, label: str, total: int) -> None:
        pass

    def start_upload(self, label: str, total: int) -> None:
        pass

    def advance(self, label: str, n: int) -> None:
        pass

    def finish(self, label: str) -> None:
        pass

    def fail(self, label: str) -> None:
        pass


SILENT: Reporter = Silent()

_NETWORK_LOCK = threading.Lock()
_network: Reporter = SILENT
_trace = False


def set_network(reporter: Reporter, trace: bool | None = None) -> None:
    """Where the network code of this process reports; ``trace``: a line per request (``-x``)."""
    global _network, _trace
    with _NETWORK_LOCK:
        _network = reporter
        if trace is not None:
            _trace = trace


def network() -> Reporter:
    """The reporter of the network code (:data:`SILENT` until :func:`set_network`)."""
    return _network


def tracing() -> bool:
    """Whether each HTTP request is reported as it ends (``wgtpm -x``)."""
    return _trace
