"""wgtpm: a package manager for neural-network artifacts.

Importing ``wgtpm`` costs next to nothing: the error classes load from
:mod:`wgtpm._errors` when first named (``wgtpm.UsageError``, ``from wgtpm
import UsageError``), and the model APIs (:func:`load`, :func:`load_layer`)
import torch only when called. A no-op ``wgtpm get`` (:mod:`wgtpm.cli`) needs
none of them. :func:`load` takes a WeightLang artifact or a PAW program
(:func:`wgtpm.adapters.load`); :func:`adapter` opens a LoRA adapter pinned to
its base (:func:`wgtpm.adapters.open_adapter`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
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
    from .adapters import adapter, load
    from .pinned import graft, open, save
    from .weightlang import load_layer

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
    "adapter",
    "graft",
    "load",
    "load_layer",
    "open",
    "save",
]


def __getattr__(name: str) -> object:
    if name == "load_layer":  # torch loads when a model does
        from . import weightlang

        return weightlang.load_layer
    if name in ("adapter", "load"):  # WeightLang artifacts, PAW programs, adapters
        from . import adapters

        return getattr(adapters, name)
    if name in ("open", "graft", "save"):  # pinned tensors: torch loads when one is read
        from . import pinned

        return getattr(pinned, name)
    if name in __all__:  # an error class
        from . import _errors

        value = getattr(_errors, name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module 'wgtpm' has no attribute {name!r}")
