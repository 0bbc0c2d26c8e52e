"""The WeightLang lexer: source text to :class:`Token` values, one line at a time.

A token is a word (names, numbers, versions and references such as
``github.com/acme/xor-base/xor.h1`` or ``m/model.safetensors#t``), a quoted
string, ``->``, one of ``{}[](),:=``, the end of a line or the end of the
file. ``//`` starts a comment that runs to the end of the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .._errors import Position, PositionedError

__all__ = ["Token", "tokenize"]

_PUNCT = frozenset("{}[](),:=")
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-/#")


@dataclass(frozen=True)
class Token:
    """``kind`` is ``word``, ``string``, ``->``, a punctuation character, ``newline`` or ``eof``."""

    kind: str
    text: str
    pos: Position

    def describe(self) -> str:
        if self.kind == "newline":
            return "end of line"
        if self.kind == "eof":
            return "end of file"
        if self.kind == "string":
            return f'"{self.text}"'
        return f"{self.text!r}"


def tokenize(text: str, file: str) -> tuple[list[Token], list[PositionedError]]:
    """Split ``text`` into tokens; lexical errors are returned, not raised."""
    tokens: list[Token] = []
    errors: list[PositionedError] = []
    lines = text.removeprefix("\ufeff").split("\n")
    for lineno, line in enumerate(lines, 1):
        tokens.extend(_tokenize_line(line.removesuffix("\r"), Position(file, lineno, 1), errors))
        tokens.append(Token("newline", "", Position(file, lineno, len(line) + 1)))
    tokens.append(Token("eof", "", Position(file, len(lines), 1)))
    return tokens, errors


def _tokenize_line(line: str, start: Position, errors: list[PositionedError]) -> Iterator[Token]:
    i = 0
    while i < len(line):
        c = line[i]
        pos = Position(start.file, start.line, i + 1)
        if c in " \t":
            i += 1
        elif line.startswith("//", i):
            return
        elif line.startswith("->", i):
            yield Token("->", "->", pos)
            i += 2
        elif c in _PUNCT:
            yield Token(c, c, pos)
            i += 1
        elif c == '"':
            j, value = _scan_string(line, i)
            if j < 0:
                errors.append(PositionedError(pos, 'unterminated string, expected a closing "'))
                return
            yield Token("string", value, pos)
            i = j
        elif c in _WORD and c != "#":  # '#' only inside a word (FILE#TENSOR): no comment
            j = i
            while j < len(line) and line[j] in _WORD:
                if line.startswith("->", j) or line.startswith("//", j):
                    break
                j += 1
            yield Token("word", line[i:j], pos)
            i = j
        else:
            errors.append(PositionedError(pos, f"unexpected character {c!r}"))
            i += 1


def _scan_string(line: str, start: int) -> tuple[int, str]:
    """Scan the string opening at ``start``; returns (index after it, value) or (-1, "")."""
    out: list[str] = []
    i = start + 1
    while i < len(line):
        c = line[i]
        if c == '"':
            return i + 1, "".join(out)
        if c == "\\" and i + 1 < len(line) and line[i + 1] in '"\\':
            out.append(line[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return -1, ""
