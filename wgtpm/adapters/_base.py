"""The base an adapter is pinned to, and the base a loaded model says it is.

A base is a :class:`~wgtpm.pinned.BaseIdentity`: module path, version and
``weights_sha256``, the sha256 of the module's weights files
(:func:`wgtpm.pinned.weights_sha256`: one ``PATH SHA256\\n`` line per
``.safetensors`` and ``.gguf`` file, sorted by path, each sha256 the one its
verified tensor table and index give). :func:`base_identity` computes it for
a module of the build list, as :attr:`wgtpm.pinned.Pinned.base` does.

A model knows its base from its attribute ``_wgtpm_base``, which
``wgtpm.open(MODULE).load()`` sets (and :func:`mark_base`); an adapter knows
its own from what it records (:mod:`wgtpm.adapters._adapter`). Applying one to
the other requires the two identities to be equal: module, version and weights.
"""

from __future__ import annotations

from .._errors import UsageError
from ..deps import ResolvedModule
from ..pinned import BaseIdentity

__all__ = [
    "BASE_ATTR",
    "BaseIdentity",
    "BaseMismatchError",
    "base_identity",
    "base_of",
    "describe",
    "mark_base",
]

#: The attribute of a loaded model that names its base (set by ``Pinned.load``).
BASE_ATTR = "_wgtpm_base"


def describe(base: BaseIdentity) -> str:
    """``module@version (weights sha256 HEX)``, the whole sha256: what a refusal names."""
    at = f"@{base.version}" if base.version else " (a local directory)"
    return f"{base.module}{at} (weights sha256 {base.weights_sha256})"


class BaseMismatchError(UsageError):
    """An adapter applied to a model that is not its pinned base (or to one of unknown base).

    ``adapter`` is the adapter's reference, ``want`` its pinned base, ``got``
    the model's recorded base (``None``: the model records none).
    """

    def __init__(self, adapter: str, want: BaseIdentity, got: BaseIdentity | None) -> None:
        self.adapter, self.want, self.got = adapter, want, got
        if got is None:
            message = (
                f"adapter {adapter} is pinned to {describe(want)}, and the model records no "
                f"base: load the base with wgtpm.open({want.module!r}).load() so that it does"
            )
        else:
            message = (
                f"adapter {adapter} is pinned to {describe(want)}, not to the model's base "
                f"{describe(got)}; apply it to its pinned base"
            )
        super().__init__(message)


def base_identity(module: ResolvedModule) -> BaseIdentity:
    """The identity of a module of the build list: :attr:`wgtpm.pinned.Pinned.base`."""
    from ..pinned import Pinned

    return Pinned(module).base


def base_of(model: object) -> BaseIdentity | None:
    """The base ``model`` records (``_wgtpm_base``), or ``None``."""
    found = getattr(model, BASE_ATTR, None)
    return found if isinstance(found, BaseIdentity) else None


def mark_base(model: object, base: BaseIdentity) -> None:
    """Record ``base`` on ``model``, as ``wgtpm.open(...).load()`` does."""
    setattr(model, BASE_ATTR, base)
