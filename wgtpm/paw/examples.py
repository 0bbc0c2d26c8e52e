"""Training examples: ``{"input", "output"}`` pairs, read from JSONL and hashed.

A JSONL file holds one JSON object per line with string ``input`` and
``output`` (other keys are ignored; blank lines are skipped)::

    {"input": "Server down, customers cannot pay!", "output": "immediate"}
    {"input": "Can we move Friday's sync?", "output": "wait"}

:func:`examples_sha256` is the hash a build records: the sha256 of the
examples, in training order, as canonical JSONL (one ``{"input","output"}``
object per line, keys sorted, no spaces, UTF-8, ``\\n`` after each line).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import _json
from .._errors import ParseError, Position, PositionedError

__all__ = ["Example", "examples_sha256", "read_jsonl"]


@dataclass(frozen=True)
class Example:
    """One training pair: the program's input and the output it should give."""

    input: str
    output: str


def read_jsonl(path: Path, *, display: str | None = None) -> list[Example]:
    """Read examples from ``path``; raises :class:`ParseError` listing every bad line."""
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(
            [PositionedError(Position(name, 1), f"cannot read examples: {exc}")]
        ) from exc
    examples: list[Example] = []
    errors: list[PositionedError] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = _json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(
                PositionedError(Position(name, number, exc.colno), f"not JSON: {exc.msg}")
            )
            continue
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("input"), str)
            or not isinstance(value.get("output"), str)
        ):
            errors.append(
                PositionedError(
                    Position(name, number),
                    'want an object with string "input" and "output", e.g. {"input": "hi", "output": "hello"}',
                )
            )
            continue
        examples.append(Example(value["input"], value["output"]))
    if errors:
        raise ParseError(errors)
    if not examples:
        raise ParseError([PositionedError(Position(name, 1), "holds no examples")])
    return examples


def canonical_jsonl(examples: Iterable[Example]) -> bytes:
    lines = (
        json.dumps(
            {"input": e.input, "output": e.output},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        + "\n"
        for e in examples
    )
    return "".join(lines).encode("utf-8")


def examples_sha256(examples: Sequence[Example]) -> str:
    """The sha256 of ``examples`` as canonical JSONL (see the module docstring)."""
    return hashlib.sha256(canonical_jsonl(examples)).hexdigest()
