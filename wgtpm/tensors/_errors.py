"""The errors of :mod:`wgtpm.tensors`.

::

    WgtpmError
    └── TensorError               anything about a weights file's tensors
        ├── TensorFormatError     a weights file or tensor table that breaks its format
        └── TensorNotFoundError   a tensor name that a file's table does not hold

A tensor's bytes that disagree with its table raise
:class:`wgtpm.ChecksumMismatchError` (a SECURITY ERROR), like any other hash
that disagrees with what was locked.
"""

from __future__ import annotations

from .._errors import WgtpmError

__all__ = ["TensorError", "TensorFormatError", "TensorNotFoundError"]


class TensorError(WgtpmError):
    """Anything about the tensors of a weights file."""


class TensorFormatError(TensorError):
    """A ``.safetensors`` or ``.gguf`` file, or a ``wgt.tensors.json``, that breaks its format.

    The message is one line: ``WHERE: what is wrong``, where ``WHERE`` names the file
    (and the module@version when known).
    """

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}")


class TensorNotFoundError(TensorError, LookupError):
    """A tensor name that a file's table does not hold; ``hint`` lists close names."""

    def __init__(self, file: str, tensor: str, hint: list[str]) -> None:
        self.file = file
        self.tensor = tensor
        self.hint = hint
        msg = f"{file}: no tensor named {tensor!r}"
        if hint:
            msg += "; did you mean " + " or ".join(repr(h) for h in hint) + "?"
        else:
            msg += "; 'wgtpm inspect MODULE/FILE' lists its tensors"
        super().__init__(msg)

    def __str__(self) -> str:  # LookupError would quote the message like a KeyError
        return str(self.args[0])
