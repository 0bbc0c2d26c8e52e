"""Pinned pieces of any module, in torch: read verified tensors, graft them, save with origins.

>>> import wgtpm
>>> qwen = wgtpm.open("hf.co/Qwen/Qwen3-0.6B")          # doctest: +SKIP
>>> wgtpm.graft(model, {"tok.weight": qwen.tensor("model.embed_tokens.weight")})
>>> wgtpm.save(model, "build/encoder")                   # `wgtpm inspect build/encoder`

- :func:`open` (:mod:`._pinned`): a module of the build list, verified;
- :func:`graft` (:mod:`._graft`): tensors into a model's parameters, checked, frozen;
- :func:`save` (:mod:`._save`, format in :mod:`._manifest`): weights and origins;
- :func:`load_saved` (:mod:`._load`): a saved model read back, verified, origins kept;
- :class:`Origin`, :class:`BaseIdentity`, :func:`origin_of` (:mod:`._origin`).

Importing this package loads no torch; reading, grafting and saving do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._manifest import SavedModelError
from ._origin import BaseIdentity, Origin, origin_of, weights_sha256
from ._pinned import Pinned, open_module

if TYPE_CHECKING:
    from ._graft import GraftError, graft
    from ._load import SavedModel, load_saved
    from ._save import save

__all__ = [
    "BaseIdentity",
    "GraftError",
    "Origin",
    "Pinned",
    "SavedModel",
    "SavedModelError",
    "graft",
    "load_saved",
    "open",
    "open_module",
    "origin_of",
    "save",
    "weights_sha256",
]

open = open_module  # wgtpm.open, as the issue names it (shadows the builtin here only)


def __getattr__(name: str) -> object:
    if name in ("graft", "GraftError"):  # torch loads here
        from . import _graft

        return getattr(_graft, name)
    if name == "save":
        from ._save import save

        return save
    if name in ("load_saved", "SavedModel"):
        from . import _load

        return getattr(_load, name)
    raise AttributeError(f"module 'wgtpm.pinned' has no attribute {name!r}")
