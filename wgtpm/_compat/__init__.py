"""The only modules that touch other libraries' private internals, one per library.

wgtpm's fast paths lean on what httpx, httpcore, h11 and uvicorn do not promise:
a private method to override, an attribute to read or set, a module to stand in
for. Each use is named here, in the module of its library (:mod:`.httpx`,
:mod:`.httpcore`, :mod:`.h11`, :mod:`.uvicorn`), and nowhere else. Each module
checks, when it is first imported, that what it needs is there; where something
is not (a version outside the range pyproject.toml declares), it takes the public
path instead (slower, never wrong) and says so once with ``wgtpm -x``
(:func:`fallback`). tests/test_compat.py fails, naming the attribute, when a
version in the declared range lacks one, and runs each fallback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .._report import network, tracing

__all__ = ["FALLBACKS", "fallback", "missing_attributes"]

#: Every fallback taken in this process: (library, what it lacks, what is done instead).
FALLBACKS: list[tuple[str, str, str]] = []
_lock = threading.Lock()


def fallback(library: str, missing: str, instead: str) -> None:
    """Record that ``library`` lacks ``missing`` and ``instead`` is done; one ``-x`` line
    per such fallback (``wgtpm: compat: httpcore has no ConnectionPool._assign_requests_...``)."""
    with _lock:
        if any(f[:2] == (library, missing) for f in FALLBACKS):
            return
        FALLBACKS.append((library, missing, instead))
    if tracing():
        network().notice(f"compat: {library} has no {missing}; {instead}")


def missing_attributes(init: Callable[..., object], *names: str) -> list[str]:
    """Those of ``names`` that ``init`` (a class's ``__init__``) never names: the instance
    attributes it would set (``self._stream = ...``) are read from its code, without
    making an instance."""
    code = getattr(init, "__code__", None)
    found = set(code.co_names) if code is not None else set()
    return [n for n in names if n not in found]
