"""The data sets of a WeightLang program: inline rows, CSV and JSONL files.

A file data set is named relative to the .wgt file and read once: its bytes
are hashed and parsed from the same buffer, so the sha256 in the manifest is
the sha256 of exactly the rows trained on.

CSV (``data more from "more.csv" targets=1``): comma-separated numbers, one
row per line; the last ``targets`` columns are the targets; an optional first
line of column names (no cell a number); blank lines are skipped::

    a,b,y
    0,1,1
    1,1,0

JSONL (``data rows from "rows.jsonl"``): one JSON object per line with an
``input`` list and a ``target`` list (or one number)::

    {"input": [0, 1], "target": [1]}

Every malformed cell or line is reported with its ``file:line:col``, together
with the rows that do not fit the model (:func:`wgtpm.weightlang.check.check_rows`).
The manifest records each data set as::

    {"kind": "csv", "file": "data/more.csv", "rows": 4, "sha256": "…", "targets": 1}
    {"kind": "inline", "rows": 4, "sha256": "… of the canonical JSON [[inputs], [targets]] rows"}
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _json
from .._contain import escape_problem
from .._errors import Position, PositionedError
from .check import check_rows, raise_errors
from .syntax import FileData, InlineData, Program, Row

__all__ = ["MAX_DATA_FILE", "Dataset", "load_data"]

#: The largest data file a build reads.
MAX_DATA_FILE = 256 << 20

_NUMBER = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*\Z")


@dataclass(frozen=True)
class Dataset:
    """The rows of one data set and its manifest record (see the module docstring)."""

    name: str
    rows: tuple[Row, ...]
    record: dict[str, Any]


def load_data(program: Program, base_dir: Path, *, root: Path | None = None) -> dict[str, Dataset]:
    """Read every data set of ``program`` (files relative to ``base_dir``) and check its rows.

    With ``root`` (the package directory of an artifact build), a data file must
    be a regular file inside it, links followed (:func:`wgtpm._contain.escape_problem`):
    a committed ``data.csv -> /proc/self/environ`` is refused before it is read.
    Raises ParseError listing every unreadable or refused file, malformed line
    and row that does not fit the model.
    """
    sets: dict[str, Dataset] = {}
    errors: list[PositionedError] = []
    for decl in program.data:
        if isinstance(decl, InlineData):
            sets[decl.name] = _inline(decl)
            continue
        dataset = _from_file(program, decl, base_dir, root, errors)
        if dataset is not None:
            errors += check_rows(program, decl.name, dataset.rows)
            sets[decl.name] = dataset
    raise_errors(errors)
    return sets


def _inline(decl: InlineData) -> Dataset:
    canonical = json.dumps([[list(r.inputs), list(r.targets)] for r in decl.rows])
    record = {
        "kind": "inline",
        "rows": len(decl.rows),
        "sha256": hashlib.sha256(canonical.encode()).hexdigest(),
    }
    return Dataset(decl.name, decl.rows, record)


def _from_file(
    program: Program,
    decl: FileData,
    base_dir: Path,
    root: Path | None,
    errors: list[PositionedError],
) -> Dataset | None:
    kind = Path(decl.path).suffix.lower().lstrip(".")
    if kind not in ("csv", "jsonl"):
        errors.append(
            PositionedError(
                decl.path_pos, f'"{decl.path}" is not a data file, expected .csv or .jsonl'
            )
        )
        return None
    if (kind == "csv") != (decl.targets is not None):
        need = (
            "targets=N, the number of target columns at the end of each row"
            if kind == "csv"
            else "no targets= (a JSONL row names its target)"
        )
        errors.append(
            PositionedError(decl.path_pos, f'data {decl.name} from "{decl.path}": expected {need}')
        )
        return None
    raw = _read(decl, base_dir, root, errors)
    if raw is None:
        return None
    shown = str(Path(program.file).parent / decl.path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        errors.append(
            PositionedError(Position(shown, line, 0), "not valid UTF-8, expected UTF-8 text")
        )
        return None
    lines = text.removeprefix("\ufeff").split("\n")
    before = len(errors)
    if kind == "csv":
        assert decl.targets is not None
        rows = list(_csv_rows(shown, lines, decl.targets, errors))
    else:
        rows = list(_jsonl_rows(shown, lines, errors))
    if not rows and len(errors) == before:
        errors.append(PositionedError(Position(shown, 1, 0), "no rows, expected at least one"))
    record: dict[str, Any] = {
        "kind": kind,
        "file": decl.path,
        "rows": len(rows),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }
    if decl.targets is not None:
        record["targets"] = decl.targets
    # Returned also after errors, so that the rows that did parse are checked too.
    return Dataset(decl.name, tuple(rows), record)


def _read(
    decl: FileData, base_dir: Path, root: Path | None, errors: list[PositionedError]
) -> bytes | None:
    path = base_dir / decl.path
    why = escape_problem(root, path) if root is not None else None
    if why is not None:
        errors.append(PositionedError(decl.path_pos, f'data {decl.name}: "{decl.path}" {why}'))
        return None
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_DATA_FILE + 1)
    except OSError as exc:
        errors.append(
            PositionedError(
                decl.path_pos,
                f'data {decl.name}: cannot read "{decl.path}" ({exc.strerror}), '
                "expected a file relative to the .wgt file",
            )
        )
        return None
    if len(raw) > MAX_DATA_FILE:
        errors.append(
            PositionedError(decl.path_pos, f'"{decl.path}" is larger than {MAX_DATA_FILE} bytes')
        )
        return None
    return raw


def _csv_rows(
    file: str, lines: list[str], targets: int, errors: list[PositionedError]
) -> Iterator[Row]:
    width: int | None = None
    for lineno, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        cells = _split_cells(line)
        numbers = [_number(text) for _, text in cells]
        if width is None and all(n is None for n in numbers):
            continue  # a header line of column names
        pos = Position(file, lineno, 1)
        if width is None:
            width = len(cells)
            if targets >= width:
                errors.append(
                    PositionedError(
                        pos, f"row has {width} columns, expected more than targets={targets}"
                    )
                )
                return
        if len(cells) != width:
            errors.append(PositionedError(pos, f"row has {len(cells)} columns, expected {width}"))
            continue
        bad = [(col, text) for (col, text), n in zip(cells, numbers, strict=True) if n is None]
        for col, text in bad:
            errors.append(
                PositionedError(
                    Position(file, lineno, col),
                    f"{text.strip()!r} is not a number, expected a number",
                )
            )
        if not bad:
            values = [n for n in numbers if n is not None]
            yield Row(tuple(values[:-targets]), tuple(values[-targets:]), pos)


def _split_cells(line: str) -> list[tuple[int, str]]:
    """Split a CSV line at commas: (1-based column, cell text) pairs."""
    cells, col = [], 1
    for text in line.split(","):
        cells.append((col, text))
        col += len(text) + 1
    return cells


def _number(text: str) -> float | None:
    if not _NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _jsonl_rows(file: str, lines: list[str], errors: list[PositionedError]) -> Iterator[Row]:
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        pos = Position(file, lineno, 1)
        try:
            obj = _json.loads(line, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            where = Position(file, lineno, exc.colno)
            errors.append(
                PositionedError(where, f"not valid JSON ({exc.msg}), expected one object per line")
            )
            continue
        except ValueError as exc:  # NaN or Infinity
            errors.append(PositionedError(pos, f"not valid JSON ({exc}), expected finite numbers"))
            continue
        inputs = _vector(obj.get("input")) if isinstance(obj, dict) else None
        target = obj.get("target") if isinstance(obj, dict) else None
        targets = _vector([target] if _is_number(target) else target)
        if inputs is None or targets is None:
            errors.append(
                PositionedError(
                    pos,
                    'malformed row, expected {"input": [numbers], "target": [numbers] or a number}',
                )
            )
            continue
        yield Row(inputs, targets, pos)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _vector(value: object) -> tuple[float, ...] | None:
    if not isinstance(value, list) or not all(_is_number(v) for v in value):
        return None
    floats = tuple(float(v) for v in value)
    return floats if all(math.isfinite(v) for v in floats) else None
