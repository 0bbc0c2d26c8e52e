"""A ``.wgt`` source checked as ``wgtpm check`` does, without torch when it imports nothing.

Parsing, type-checking and reading the data are pure Python
(:mod:`~wgtpm.weightlang.syntax`, :mod:`~wgtpm.weightlang.check`,
:mod:`~wgtpm.weightlang.data`); resolving an ``import`` verifies the imported
artifact's weights, which needs the weightlang extra (torch, safetensors), so
only a source with imports asks for it (:func:`wgtpm._extras.require`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .._errors import ParseError, Position, PositionedError
from .._extras import require
from ..deps import ModuleResolver
from .check import check, raise_errors
from .data import Dataset, load_data
from .syntax import ModuleSource, Program, parse_bytes

__all__ = ["check_file"]


def check_file(
    source: Path, *, name: str | None = None, resolver: ModuleResolver | None = None
) -> tuple[Program, dict[str, Dataset], int]:
    """Everything ``wgtpm check`` does, every error of the file reported at once.

    Parses ``source`` (a syntax error stops there: nothing else can be
    checked), then type-checks it, reads its data and resolves its imports,
    collecting the errors of all three into one :class:`ParseError` in line
    order. Module imports are resolved only with a ``resolver`` (in a
    package); path imports always. Returns the program, its data sets and the
    number of imports resolved.
    """
    shown = name or str(source)
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ParseError(
            [PositionedError(Position(shown, 1, 0), f"cannot read: {exc.strerror}")]
        ) from exc
    program = parse_bytes(data, shown)
    errors: list[PositionedError] = []
    try:
        check(program)
    except ParseError as exc:
        errors += exc.errors
    datasets: dict[str, Dataset] = {}
    try:
        datasets = load_data(program, source.parent)
    except ParseError as exc:
        errors += exc.errors
    wanted = program.imports
    # Tensors are imported from modules of the build list: only in a package.
    tensors = program.tensor_imports if resolver is not None else ()
    if resolver is None:
        wanted = tuple(i for i in wanted if not isinstance(i.source, ModuleSource))
    if wanted or tensors:
        require("weightlang", "torch", "safetensors", purpose=f"checking the imports of {shown}")
        from .errors import LayerImportError
        from .imports import resolve_all

        try:
            resolve_all(
                replace(program, imports=wanted, tensor_imports=tensors),
                source.parent,
                resolver,
                read=False,
            )
        except LayerImportError as exc:
            errors += exc.errors
    raise_errors(errors)
    return program, datasets, len(wanted) + len(tensors)
