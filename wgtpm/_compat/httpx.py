"""httpx's internals that wgtpm uses: the module ``httpx._main``, kept out of an import.

The httpx package imports ``httpx._main`` (click, pygments, rich) whenever those
happen to be installed, which costs about 40 ms a start; wgtpm never runs that
client, so :func:`import_httpx` puts a stand-in in its place unless the real one
is already loaded. Should httpx stop importing ``httpx._main``, the stand-in is
taken out again, and httpx is imported as it is (:func:`wgtpm._compat.fallback`).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from . import fallback

__all__ = ["MAIN", "import_httpx"]

#: The module of httpx's command-line client, which httpx imports when it can.
MAIN = "httpx._main"


def _stand_in() -> types.ModuleType:
    stub = types.ModuleType(MAIN)

    def main() -> None:
        raise SystemExit("the httpx command-line client is not available inside wgtpm")

    stub.main = main  # type: ignore[attr-defined]
    return stub


def import_httpx() -> Any:
    """``import httpx`` (and httpcore) without the parts wgtpm never uses.

    Besides ``httpx._main`` (above): httpcore imports ``trio`` when it is
    installed (selenium brings it), about 130 ms, only to support trio's event
    loop, which wgtpm's synchronous client never runs: while httpcore is first
    imported, ``trio`` is kept out unless something has imported it already.
    """
    stub = None
    if "httpx" not in sys.modules and MAIN not in sys.modules:
        stub = sys.modules[MAIN] = _stand_in()
    keep_out = "httpcore" not in sys.modules and "trio" not in sys.modules
    if keep_out:
        sys.modules["trio"] = None  # type: ignore[assignment]  # makes `import trio` fail
    try:
        import httpcore  # noqa: F401
        import httpx
    finally:
        if keep_out:
            del sys.modules["trio"]
    if stub is not None and getattr(httpx, "main", None) is not stub.main:
        if sys.modules.get(MAIN) is stub:
            del sys.modules[MAIN]
        fallback("httpx", "module httpx._main to stand in for", "imported as it is")
    return httpx
