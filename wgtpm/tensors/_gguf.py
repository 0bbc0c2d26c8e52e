"""GGUF headers, read without the gguf library (filled in by the next commit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

from ._errors import TensorFormatError
from ._table import TensorInfo

__all__ = ["GgufFile", "read_gguf"]


@dataclass
class GgufFile:
    """A GGUF file's header."""

    version: int
    metadata: dict[str, object] = field(default_factory=dict)
    tensors: list[TensorInfo] = field(default_factory=list)

    def metadata_summary(self) -> dict[str, object]:
        return dict(self.metadata)


def read_gguf(f: BinaryIO, size: int, where: str) -> GgufFile:
    raise TensorFormatError(where, "GGUF files are not read yet")
