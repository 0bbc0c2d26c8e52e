"""The base an adapter is pinned to, and the base a loaded model says it is.

A base is identified by :class:`BaseIdentity`: the module path, its version
and ``weights_sha256``, the sha256 of the module's weights files::

    weights_sha256 = sha256("".join(f"{path} {sha256}\\n" for path, sha256 in sorted(weights)))

over the ``(path, sha256)`` pairs of its ``.safetensors`` and ``.gguf`` files
(paths relative to the module, ``/``-separated). Files of a module of the build
list are the verified ones (wgt.sum), so their sha256 equals the index's.

A model knows its base from the attribute ``_wgtpm_base`` (set by
``wgtpm.open(...).load()`` and by :func:`mark_base`); an adapter knows its own
from what it records (:mod:`wgtpm.adapters._adapter`). Applying one to the
other requires the two identities to be equal: module, version and weights.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from .._errors import UsageError
from .._fs import sha256_file
from ..deps import ResolvedModule

__all__ = [
    "BASE_ATTR",
    "WEIGHTS_SUFFIXES",
    "BaseIdentity",
    "BaseMismatchError",
    "base_identity",
    "base_of",
    "mark_base",
    "weights_sha256",
]

#: The attribute of a loaded model that names its base.
BASE_ATTR = "_wgtpm_base"

#: The files whose bytes make a base what it is (its weights); the rest (README, config) does not count.
WEIGHTS_SUFFIXES = (".safetensors", ".gguf")


@dataclass(frozen=True)
class BaseIdentity:
    """A base model: ``module@version`` and the sha256 of its weights files (see the module doc)."""

    module: str
    version: str
    weights_sha256: str

    def __str__(self) -> str:
        at = f"@{self.version}" if self.version else " (a local directory)"
        return f"{self.module}{at} (weights sha256 {self.weights_sha256})"


class BaseMismatchError(UsageError):
    """An adapter applied to a model that is not its pinned base (or to one of unknown base)."""

    def __init__(self, adapter: str, want: BaseIdentity, got: BaseIdentity | None) -> None:
        self.adapter, self.want, self.got = adapter, want, got
        if got is None:
            message = (
                f"adapter {adapter} is pinned to {want}, and the model records no base: "
                f"load the base with wgtpm.open({want.module!r}).load() so that it does"
            )
        else:
            message = (
                f"adapter {adapter} is pinned to {want}, not to the model's base {got}; "
                "apply it to its pinned base"
            )
        super().__init__(message)


def weights_sha256(pairs: dict[str, str]) -> str:
    """The sha256 of the sorted ``path sha256`` lines of ``pairs`` (path -> file sha256)."""
    text = "".join(f"{path} {sha}\n" for path, sha in sorted(pairs.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _weights_files(directory: Path) -> dict[str, str]:
    """path -> sha256 of every weights file under ``directory`` (hidden entries skipped)."""
    out: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        if path.suffix in WEIGHTS_SUFFIXES and path.is_file():
            out[rel] = sha256_file(path)
    return out


def base_identity(module: ResolvedModule) -> BaseIdentity:
    """The identity of a module of the build list, from its verified files."""
    return BaseIdentity(module.path, module.version, weights_sha256(_weights_files(module.dir)))


def base_of(model: object) -> BaseIdentity | None:
    """The base ``model`` records (``_wgtpm_base``), or ``None``."""
    found = getattr(model, BASE_ATTR, None)
    if isinstance(found, BaseIdentity) or found is None:
        return found
    fields = [getattr(found, k, None) for k in ("module", "version", "weights_sha256")]
    if all(isinstance(f, str) for f in fields):  # another class with the same fields
        return BaseIdentity(*(str(f) for f in fields))
    return None


def mark_base(model: object, base: BaseIdentity) -> None:
    """Record ``base`` on ``model``, as ``wgtpm.open(...).load()`` does."""
    setattr(model, BASE_ATTR, base)
