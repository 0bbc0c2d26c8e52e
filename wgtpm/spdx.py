"""SPDX license expressions: parse them, and tell whether a ``deny-license`` list refuses one.

The grammar is SPDX 2.3's (annex D), which wgt.mod's ``license`` line and
Hugging Face's card ``license`` field both use::

    expression  = or-expr
    or-expr     = and-expr *("OR" and-expr)
    and-expr    = term *("AND" term)
    term        = "(" or-expr ")" / simple ["WITH" exception-id]
    simple      = license-id ["+"] / ["DocumentRef-" idstring ":"] "LicenseRef-" idstring
    idstring    = 1*(ALPHA / DIGIT / "-" / ".")

``AND`` binds tighter than ``OR``; the operators may be written in lower case
(``apache-2.0 or mit``) and are printed in upper case. No list of known
identifiers is checked here: the SPDX list changes every few months and the
Hub takes names of its own (``llama3``, ``openrail``); an identifier is any
idstring, compared without regard to case, as the SPDX spec says.

Whether a deny list refuses an expression::

    >>> refused(parse("MIT OR GPL-3.0-only"), [parse("GPL-3.0-only")])   # MIT may be chosen
    >>> refused(parse("MIT AND GPL-3.0-only"), [parse("GPL-3.0-only")])
    License(id='GPL-3.0-only', exception=None)

An expression is refused when every way of satisfying it (each choice of
an ``OR``) takes a denied license. A denied ``X`` covers ``X`` with any
exception; a denied ``X WITH E`` covers only that pair. ``NOASSERTION``
stands for "no license declared": ``deny-license NOASSERTION`` refuses a
module that states none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MAX_EXPRESSION",
    "NOASSERTION",
    "And",
    "Expression",
    "License",
    "Or",
    "SpdxError",
    "licenses",
    "parse",
    "refused",
]

#: Characters of an expression parsed; a license is a few words, and a card is not trusted.
MAX_EXPRESSION = 1000
#: The SPDX value for "no license information"; what a module that declares none is under.
NOASSERTION = "NOASSERTION"

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([A-Za-z0-9.\-+:]+))")
_IDSTRING = r"[A-Za-z0-9.\-]+"
_SIMPLE = re.compile(rf"(?:(?:DocumentRef-{_IDSTRING}:)?LicenseRef-{_IDSTRING}|{_IDSTRING}\+?)\Z")
_EXCEPTION = re.compile(rf"{_IDSTRING}\Z")
_OPERATORS = {"AND", "OR", "WITH"}


class SpdxError(ValueError):
    """An expression that does not parse; ``offset`` is the 0-based index of the problem."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass(frozen=True)
class License:
    """One license: an SPDX id (``MIT``, ``GPL-2.0+``) or ``LicenseRef-…``, with its exception."""

    id: str
    exception: str | None = None

    def __str__(self) -> str:
        return self.id + (f" WITH {self.exception}" if self.exception else "")

    def covers(self, other: License) -> bool:
        """Whether denying ``self`` denies ``other`` (see the module docstring)."""
        if self.id.casefold() != other.id.casefold():
            return False
        if self.exception is None:
            return True
        return (other.exception or "").casefold() == self.exception.casefold()


@dataclass(frozen=True)
class And:
    left: Expression
    right: Expression

    def __str__(self) -> str:
        return f"{_nested(self.left, Or)} AND {_nested(self.right, Or)}"


@dataclass(frozen=True)
class Or:
    left: Expression
    right: Expression

    def __str__(self) -> str:
        return f"{self.left} OR {self.right}"


Expression = License | And | Or


def _nested(e: Expression, kind: type) -> str:
    return f"({e})" if isinstance(e, kind) else str(e)


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token, offset) pairs: ``(``, ``)`` and words."""
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if m is None:
            j = len(text) - len(text[i:].lstrip())
            raise SpdxError(f"unexpected {text[j]!r}", j)
        out.append((m.group(m.lastindex or 0), m.start(m.lastindex or 0)))
        i = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def offset(self) -> int:
        return self.toks[self.i][1] if self.i < len(self.toks) else len(self.text)

    def op(self, name: str) -> bool:
        t = self.peek()
        if t is not None and t.upper() == name:
            self.i += 1
            return True
        return False

    def or_expr(self) -> Expression:
        e = self.and_expr()
        while self.op("OR"):
            e = Or(e, self.and_expr())
        return e

    def and_expr(self) -> Expression:
        e = self.term()
        while self.op("AND"):
            e = And(e, self.term())
        return e

    def term(self) -> Expression:
        t, at = self.peek(), self.offset()
        if t is None:
            raise SpdxError("expression ends where a license was expected", at)
        if t == "(":
            self.i += 1
            e = self.or_expr()
            if self.peek() != ")":
                raise SpdxError("missing ')'", self.offset())
            self.i += 1
            return e
        if t == ")" or t.upper() in _OPERATORS:
            raise SpdxError(f"expected a license, found {t!r}", at)
        if not _SIMPLE.match(t):
            raise SpdxError(f"{t!r} is not a license identifier (letters, digits, '-', '.')", at)
        self.i += 1
        if not self.op("WITH"):
            return License(t)
        exc, at = self.peek(), self.offset()
        if exc is None or exc in "()" or exc.upper() in _OPERATORS or not _EXCEPTION.match(exc):
            raise SpdxError("WITH must be followed by an exception identifier", at)
        self.i += 1
        return License(t, exc)


def parse(text: str) -> Expression:
    """Parse an SPDX license expression; raises :class:`SpdxError` saying where it is wrong."""
    if len(text) > MAX_EXPRESSION:
        raise SpdxError(f"longer than {MAX_EXPRESSION} characters", MAX_EXPRESSION)
    p = _Parser(text)
    e = p.or_expr()
    if p.peek() is not None:
        raise SpdxError(f"unexpected {p.peek()!r} after a complete expression", p.offset())
    return e


def licenses(e: Expression) -> list[License]:
    """Every license an expression names, in order, each once."""
    if isinstance(e, License):
        return [e]
    out = licenses(e.left)
    out += [x for x in licenses(e.right) if x not in out]
    return out


def refused(e: Expression | None, deny: list[License]) -> License | None:
    """The denied license that every choice of ``e`` takes (``None``: ``e`` is allowed).

    ``e`` is ``None`` for a module that declares no license: it counts as
    :data:`NOASSERTION`.
    """
    if e is None:
        e = License(NOASSERTION)
    if isinstance(e, License):
        return next((d for d in deny if d.covers(e)), None)
    left = refused(e.left, deny)
    if isinstance(e, And):
        return left or refused(e.right, deny)
    return left if left is not None and refused(e.right, deny) is not None else None
