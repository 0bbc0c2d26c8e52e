"""Where a tensor came from: :class:`Origin`, the weak registry of origins, :class:`BaseIdentity`.

Every tensor that :meth:`wgtpm.pinned.Pinned.tensor` returns is recorded
here with the :class:`Origin` of its bytes (module@version, file, tensor
name, the sha256 the tensor table locks, the stored dtype, and the dtype it
was converted to, if any). :func:`wgtpm.pinned.graft` moves the record to
the parameter it copies into, and :func:`wgtpm.pinned.save` writes it into
the saved artifact's manifest. The registry holds its tensors weakly: a
record lives exactly as long as its tensor does.

A record also keeps the sha256 of the bytes the tensor held when it was
recorded (:attr:`Tracked.held_sha256`), so that ``save`` can tell a tensor
kept as imported from one trained after it was grafted
(``"imported+trained"``).

Pure and torch-free: tensors are handled as opaque weak-referenceable objects.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "BaseIdentity",
    "Origin",
    "Tracked",
    "forget",
    "origin_of",
    "record",
    "tracked",
    "weights_sha256",
]


@dataclass(frozen=True)
class Origin:
    """The pinned source of one tensor's bytes.

    ``dtype`` is the tensor's dtype as stored in ``file`` (the tensor
    table's name: ``"BF16"``, ``"F32"``, a GGML type for GGUF);
    ``converted_to`` the torch dtype it was converted to by ``dtype=``
    (``"float32"``), or ``None`` when the bytes are as stored. ``sha256`` is
    that of the stored bytes, as the module's tensor table locks them.
    ``version`` is ``""`` for a module replaced by a local directory.
    """

    module: str
    version: str
    file: str
    tensor: str
    sha256: str
    dtype: str
    converted_to: str | None = None

    @property
    def label(self) -> str:
        """``module@version/file#tensor``, as messages and ``wgtpm inspect`` show it."""
        if not self.version:
            return f"{self.module}/{self.file}#{self.tensor} (local directory)"
        return f"{self.module}@{self.version}/{self.file}#{self.tensor}"

    def to_json(self) -> dict[str, str | None]:
        return {
            "module": self.module,
            "version": self.version,
            "file": self.file,
            "tensor": self.tensor,
            "sha256": self.sha256,
            "dtype": self.dtype,
            "converted_to": self.converted_to,
        }


@dataclass(frozen=True)
class BaseIdentity:
    """The exact base model a module version holds: what an adapter is pinned to.

    ``weights_sha256`` is :func:`weights_sha256` of the module's weights
    files. :meth:`wgtpm.pinned.Pinned.load` sets it on the model it returns
    as ``model._wgtpm_base``.
    """

    module: str
    version: str
    weights_sha256: str

    def __str__(self) -> str:
        return f"{self.module}@{self.version} (weights sha256 {self.weights_sha256[:12]})"


def weights_sha256(files: Mapping[str, str]) -> str:
    """The sha256 of a module's weights files, ``{path: sha256}``, as one hex digest.

    It is the sha256 of one line ``PATH SHA256\n`` per file, sorted by path
    (every ``.safetensors`` and ``.gguf`` file of the release, with the sha256
    its verified index gives): for ``{"model.safetensors": "3f9a…"}`` the
    bytes hashed are ``model.safetensors 3f9a…\n``.
    """
    lines = "".join(f"{path} {files[path]}\n" for path in sorted(files))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


class Tracked(NamedTuple):
    """A registry record: the tensor's origin and the sha256 of the bytes it held when recorded."""

    origin: Origin
    held_sha256: str


_lock = threading.Lock()
_records: dict[int, tuple[weakref.ref[object], Tracked]] = {}


def record(tensor: object, origin: Origin, held_sha256: str) -> None:
    """Record ``origin`` for ``tensor`` (replacing any earlier record) until it is collected."""
    key = id(tensor)

    def drop(ref: weakref.ref[object]) -> None:
        with _lock:
            if key in _records and _records[key][0] is ref:
                del _records[key]

    ref = weakref.ref(tensor, drop)
    with _lock:
        _records[key] = (ref, Tracked(origin, held_sha256))


def tracked(tensor: object) -> Tracked | None:
    """The record of ``tensor``, or ``None`` when it has none."""
    with _lock:
        entry = _records.get(id(tensor))
    if entry is None or entry[0]() is not tensor:  # an id reused by another object
        return None
    return entry[1]


def origin_of(tensor: object) -> Origin | None:
    """The :class:`Origin` of ``tensor``, or ``None`` for a tensor of no pinned module."""
    found = tracked(tensor)
    return found.origin if found is not None else None


def forget(tensor: object) -> None:
    """Drop the record of ``tensor`` (a parameter grafted over with an untracked tensor)."""
    with _lock:
        entry = _records.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            del _records[id(tensor)]
