"""wgtpm: a package manager for neural-network artifacts.

Importing ``wgtpm`` is cheap: the model APIs (:func:`load`,
:func:`load_layer`) import torch only when called.
"""

from __future__ import annotations

from typing import Any

from ._errors import (
    BuildError,
    CacheError,
    ChecksumMismatchError,
    FetchError,
    InvalidPathError,
    InvalidVersionError,
    ModuleError,
    NotFoundError,
    ParseError,
    Position,
    PositionedError,
    ReadonlyError,
    ResolveError,
    SumdbConflictError,
    SumdbError,
    SumdbSecurityError,
    SumdbVerifyError,
    UsageError,
    VerifyError,
    WgtpmError,
)

__version__ = "0.1.0"

__all__ = [
    "BuildError",
    "CacheError",
    "ChecksumMismatchError",
    "FetchError",
    "InvalidPathError",
    "InvalidVersionError",
    "ModuleError",
    "NotFoundError",
    "ParseError",
    "Position",
    "PositionedError",
    "ReadonlyError",
    "ResolveError",
    "SumdbConflictError",
    "SumdbError",
    "SumdbSecurityError",
    "SumdbVerifyError",
    "UsageError",
    "VerifyError",
    "WgtpmError",
    "__version__",
    "load",
    "load_layer",
]


def __getattr__(name: str) -> Any:
    # Lazy, so that "import wgtpm" stays light; torch loads when a model does.
    if name in ("load", "load_layer"):
        from . import weightlang

        return getattr(weightlang, name)
    raise AttributeError(f"module 'wgtpm' has no attribute {name!r}")
