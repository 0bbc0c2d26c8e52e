"""How library code tells the user what is happening: one interface, rendered by the CLI.

Library code never prints. It is handed a :class:`Reporter` (or uses
:data:`SILENT`) and calls:

- ``notice(message)``: one line of what is being done (``paw fruit: step 3/40 loss 0.41``);
- ``warning(message)``: something the user should act on, that does not stop the command
  (a retracted version in the build list);
- ``start(label, total)``, ``advance(label, n)``, ``finish(label)``: byte progress of one
  unit of work (a module version's download), ``total`` in bytes.

The CLI decides what a person sees (``wgtpm/cli/_render.py``): a live bar on a
terminal, one quiet line per finished download on a pipe, nothing with ``-q``.
Messages are plain text with no ``wgtpm:`` prefix; the renderer adds it.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SILENT", "Reporter", "Silent"]


class Reporter(Protocol):
    """What library code reports to; see the module docstring."""

    def notice(self, message: str) -> None: ...

    def warning(self, message: str) -> None: ...

    def start(self, label: str, total: int) -> None: ...

    def advance(self, label: str, n: int) -> None: ...

    def finish(self, label: str) -> None: ...


class Silent:
    """A reporter that drops everything (library default; ``-q``)."""

    def notice(self, message: str) -> None:
        pass

    def warning(self, message: str) -> None:
        pass

    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, label: str, n: int) -> None:
        pass

    def finish(self, label: str) -> None:
        pass


SILENT: Reporter = Silent()
