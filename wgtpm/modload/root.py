"""Where the project is: the nearest directory at or above a start with a ``wgt.mod``.

Found as ``go`` finds go.mod; ``wgt.sum`` lies beside it. This module
imports only the standard library: a no-op ``wgtpm get`` finds its project
here before anything else of wgtpm is loaded (:mod:`wgtpm.modload.stamp`).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MOD", "SUM", "find_root", "nearest_root"]

MOD = "wgt.mod"
SUM = "wgt.sum"


def nearest_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` with a wgt.mod (``None`` if none)."""
    start = start.absolute()
    for d in (start, *start.parents):
        if (d / MOD).is_file():
            return d
    return None


def find_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding a wgt.mod."""
    root = nearest_root(start)
    if root is None:
        from .._errors import UsageError

        raise UsageError(
            f"no {MOD} in {start.absolute()} or any parent directory; create one with 'wgtpm init MODULE'"
        )
    return root
