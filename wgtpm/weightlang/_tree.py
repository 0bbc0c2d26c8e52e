"""The WeightLang syntax tree: what :func:`wgtpm.weightlang.syntax.parse` returns.

One frozen dataclass per statement, each with the :class:`~wgtpm._errors.Position`
it was written at, so that :mod:`wgtpm.weightlang.check` can point at it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._errors import Position
from .ops import Number

__all__ = [
    "DataDecl",
    "FileData",
    "Import",
    "InlineData",
    "Layer",
    "ModuleSource",
    "PathSource",
    "Program",
    "Row",
    "TensorDecl",
    "TensorImport",
    "Train",
]


@dataclass(frozen=True)
class TensorDecl:
    """``input x: f32[2]``: a named vector of ``width`` f32 values (``i64``: token ids)."""

    name: str
    dtype: str
    width: int
    pos: Position


@dataclass(frozen=True)
class Layer:
    """``layer h1 = linear(in=2, out=8)``; ``args`` has every parameter by name."""

    name: str
    op: str
    args: Mapping[str, Number]
    pos: Position
    op_pos: Position
    arg_pos: Mapping[str, Position]


@dataclass(frozen=True)
class Row:
    """One training example ``[0, 1] -> [1]``; ``pos`` is where it was written."""

    inputs: tuple[float, ...]
    targets: tuple[float, ...]
    pos: Position


@dataclass(frozen=True)
class InlineData:
    """``data xor { ... }``: rows written in the source."""

    name: str
    rows: tuple[Row, ...]
    pos: Position


@dataclass(frozen=True)
class FileData:
    """``data more from "data/more.csv" targets=1``; ``path`` is relative to the .wgt file."""

    name: str
    path: str
    targets: int | None
    pos: Position
    path_pos: Position


DataDecl = InlineData | FileData


@dataclass(frozen=True)
class Train:
    """``train data=xor loss=bce optimizer=adam lr=0.05 epochs=500 [batch=N]``."""

    data: str
    loss: str
    optimizer: str
    lr: float
    epochs: int
    batch: int | None
    pos: Position
    key_pos: Mapping[str, Position]


@dataclass(frozen=True)
class ModuleSource:
    """``MODULE/ARTIFACT`` of the build list, as written (no version)."""

    ref: str

    def __str__(self) -> str:
        return self.ref


@dataclass(frozen=True)
class PathSource:
    """A quoted artifact directory, relative to the .wgt file."""

    path: str

    def __str__(self) -> str:
        return f'"{self.path}"'


@dataclass(frozen=True)
class Import:
    """``import h1 from SOURCE.h1 [freeze] [sha256=HEX]``; ``sha256`` is lower-case or None."""

    layer: str
    source: ModuleSource | PathSource
    source_layer: str
    freeze: bool
    sha256: str | None
    pos: Position
    source_pos: Position


@dataclass(frozen=True)
class TensorImport:
    """``import tok.weight from MODULE/FILE#TENSOR [freeze] [sha256=HEX]``.

    ``ref`` is ``MODULE/FILE`` as written (the build list splits it);
    ``sha256`` (lower-case or None) pins the tensor's stored bytes.
    """

    layer: str
    tensor: str
    ref: str
    source_tensor: str
    freeze: bool
    sha256: str | None
    pos: Position
    source_pos: Position

    @property
    def target(self) -> str:
        """The full name of the tensor written: ``tok.weight``."""
        return f"{self.layer}.{self.tensor}"


@dataclass(frozen=True)
class Program:
    """A parsed .wgt file. ``file`` is the name used in messages."""

    file: str
    version: str
    model: str
    seed: int
    input: TensorDecl
    output: TensorDecl
    layers: tuple[Layer, ...]
    data: tuple[DataDecl, ...] = ()
    train: Train | None = None
    imports: tuple[Import, ...] = ()
    tensor_imports: tuple[TensorImport, ...] = ()

    def layer(self, name: str) -> Layer | None:
        return next((layer for layer in self.layers if layer.name == name), None)

    def dataset(self, name: str) -> DataDecl | None:
        return next((d for d in self.data if d.name == name), None)
