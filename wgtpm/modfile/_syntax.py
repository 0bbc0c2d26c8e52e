"""The syntax of wgt.mod: lines, blocks and comments, parsed and printed losslessly.

wgt.mod is line-oriented, like go.mod::

    // Comment lines attach to the statement below them.
    module github.com/acme/xor-classifier
    wgt 0.1

    require (
        github.com/acme/xor-base v0.1.0
        hf.co/acme/qwen3-tiny v0.0.0-20261101120000-3f9a2b7c1d0e // indirect
    )

A statement is a verb and its arguments on one line, or a verb followed by
``(`` and then one argument list per line until ``)``. Tokens are separated by
spaces or tabs; a token holding spaces or special characters is written as a
double-quoted string with backslash escapes. ``//`` starts a comment that runs
to the end of the line, except right after a ``:`` within a token: a URL's
``://`` (``trust ... issuer=https://token.actions.githubusercontent.com``).

This module knows nothing of what verbs mean (that is :mod:`._rules`). It
keeps every comment, where it was: the comment lines before a statement, a
comment after a statement on its line, comments before a block's ``)``, and
free-standing comment blocks; it keeps one blank line where the source had one
or more. :func:`format_syntax` prints the tree in canonical form: one space
between tokens, blocks indented with one tab, quotes only where needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .._errors import Position, PositionedError

__all__ = [
    "Block",
    "Comment",
    "CommentBlock",
    "FileSyntax",
    "Line",
    "Stmt",
    "format_syntax",
    "parse_syntax",
    "quote",
]

_SPECIAL = "()[],"


@dataclass
class Comment:
    """A ``//`` comment; ``text`` includes the slashes."""

    text: str
    pos: Position = field(compare=False, default=Position("", 0))


@dataclass
class Line:
    """One argument list: a statement (``tokens[0]`` is the verb) or a line inside a block."""

    tokens: list[str]
    pos: Position = field(compare=False, default=Position("", 0))
    cols: list[int] = field(compare=False, default_factory=list)
    before: list[Comment] = field(default_factory=list)
    suffix: Comment | None = None
    blank_before: bool = False

    def col(self, i: int) -> Position:
        """The position of token ``i`` (the line's start when unknown)."""
        c = self.cols[i] if i < len(self.cols) else 0
        return Position(self.pos.file, self.pos.line, c)


@dataclass
class Block:
    """``verb (`` ... ``)``: lines that share one verb."""

    verb: str
    lines: list[Line] = field(default_factory=list)
    pos: Position = field(compare=False, default=Position("", 0))
    before: list[Comment] = field(default_factory=list)
    suffix: Comment | None = None
    after: list[Comment] = field(default_factory=list)
    close_suffix: Comment | None = None
    blank_before: bool = False


@dataclass
class CommentBlock:
    """Comment lines that belong to no statement (a blank line follows them)."""

    comments: list[Comment]
    blank_before: bool = False


Stmt = Line | Block | CommentBlock


@dataclass
class FileSyntax:
    """A whole wgt.mod as a list of statements."""

    name: str
    stmts: list[Stmt] = field(default_factory=list)

    def __eq__(self, other: object) -> bool:  # the name is not part of the content
        return isinstance(other, FileSyntax) and self.stmts == other.stmts


def _unquote(s: str, i: int, pos: Position, errors: list[PositionedError]) -> tuple[str, int]:
    """Read a quoted string starting at ``s[i] == '"'``; return (value, index after it)."""
    out: list[str] = []
    j = i + 1
    escapes = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}
    while j < len(s):
        ch = s[j]
        if ch == '"':
            return "".join(out), j + 1
        if ch == "\\":
            if j + 1 < len(s) and s[j + 1] in escapes:
                out.append(escapes[s[j + 1]])
                j += 2
                continue
            errors.append(
                PositionedError(
                    Position(pos.file, pos.line, j + 1), "unknown escape in quoted string"
                )
            )
            j += 2
            continue
        out.append(ch)
        j += 1
    errors.append(
        PositionedError(Position(pos.file, pos.line, i + 1), "unterminated quoted string")
    )
    return "".join(out), len(s)


def _tokenize(
    text: str, pos: Position, errors: list[PositionedError]
) -> tuple[list[str], list[int], list[bool], Comment | None]:
    """Split one physical line into tokens, their columns, whether each was quoted, and a comment."""
    toks: list[str] = []
    cols: list[int] = []
    quoted: list[bool] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in " \t\r\f\v":
            i += 1
            continue
        if text.startswith("//", i):
            c = Comment(text[i:].rstrip(), Position(pos.file, pos.line, i + 1))
            return toks, cols, quoted, c
        cols.append(i + 1)
        if ch in _SPECIAL:
            toks.append(ch)
            quoted.append(False)
            i += 1
        elif text.startswith("=>", i):
            toks.append("=>")
            quoted.append(False)
            i += 2
        elif ch == '"':
            val, i = _unquote(text, i, pos, errors)
            toks.append(val)
            quoted.append(True)
        else:
            j = i
            while (
                j < len(text)
                and text[j] not in ' \t\r\f\v"' + _SPECIAL
                and not (text.startswith("//", j) and text[j - 1] != ":")  # a URL's ://
                and not text.startswith("=>", j)
            ):
                j += 1
            toks.append(text[i:j])
            quoted.append(False)
            i = j
    return toks, cols, quoted, None


def parse_syntax(data: bytes, name: str) -> tuple[FileSyntax, list[PositionedError]]:
    """Parse wgt.mod text into its syntax tree, collecting every error."""
    errors: list[PositionedError] = []
    f = FileSyntax(name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f, [PositionedError(Position(name, 1), f"not UTF-8 text: {exc}")]
    if text.startswith("\ufeff"):
        text = text[1:]
    pending: list[Comment] = []  # comment lines not yet attached
    blank = False  # a blank line came before the next statement
    pending_blank = False  # a blank line came before the pending comments
    block: Block | None = None

    def flush_comments() -> None:
        nonlocal pending, pending_blank
        if pending:
            if block is not None:
                block.lines.append(Line([], before=pending, blank_before=pending_blank))
            else:
                f.stmts.append(CommentBlock(pending, pending_blank))
            pending, pending_blank = [], False

    def take() -> tuple[list[Comment], bool]:
        """The comments waiting for the next statement, and whether a blank line preceded them."""
        nonlocal pending, blank, pending_blank
        out = (pending, pending_blank if pending else blank)
        pending, blank, pending_blank = [], False, False
        return out

    for n, raw in enumerate(text.split("\n"), start=1):
        pos = Position(name, n, 1)
        toks, cols, quoted, comment = _tokenize(raw, pos, errors)
        bare = [t if not q else None for t, q in zip(toks, quoted)]
        if not toks and comment is None:
            if pending:
                flush_comments()
                blank = True
            elif f.stmts or (block is not None and block.lines):
                blank = True
            continue
        if comment is not None and not toks:
            if not pending:
                pending_blank = blank
                blank = False
            pending.append(comment)
            continue
        if block is not None:
            if bare == [")"]:
                block.after, _ = take()
                block.close_suffix = comment
                f.stmts.append(block)
                block = None
                continue
            if ")" in bare or "(" in bare:
                idx = bare.index(")") if ")" in bare else bare.index("(")
                errors.append(
                    PositionedError(
                        Position(name, n, cols[idx]),
                        f"unexpected {bare[idx]!r} inside a {block.verb} block",
                    )
                )
                continue
            before, bl = take()
            block.lines.append(Line(toks, pos, cols, before, comment, bl))
            continue
        if len(toks) >= 2 and bare[1] == "(":
            before, bl = take()
            if len(toks) == 3 and bare[2] == ")":  # verb ()
                f.stmts.append(Block(toks[0], [], pos, before, comment, blank_before=bl))
                continue
            if len(toks) > 2:
                # Not a block: most likely a value with parentheses, like an SPDX expression.
                errors.append(
                    PositionedError(
                        Position(name, n, cols[1]),
                        "nothing may follow '(' on the line that opens a block; "
                        'write a value that holds parentheses in quotes: "(A OR B) AND C"',
                    )
                )
                take()
                continue
            if bare[0] is None:
                errors.append(PositionedError(pos, "a block must start with a verb"))
            block = Block(toks[0], [], pos, before, comment, blank_before=bl)
            continue
        bad = [i for i, t in enumerate(bare) if t in ("(", ")")]
        if bad:
            errors.append(
                PositionedError(Position(name, n, cols[bad[0]]), f"unexpected {bare[bad[0]]!r}")
            )
            take()
            continue
        before, bl = take()
        f.stmts.append(Line(toks, pos, cols, before, comment, bl))
    if block is not None:
        errors.append(PositionedError(block.pos, f"{block.verb} block is never closed: add ')'"))
        f.stmts.append(block)
        block = None
    flush_comments()
    return f, errors


_BARE = re.compile(r"^[^\s\"()\[\],]+\Z")


def quote(tok: str) -> str:
    """The token as written: bare when it can be, else a double-quoted string."""
    if _BARE.match(tok) and "//" not in tok.replace("://", "") and "=>" not in tok:
        return tok
    out = tok.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


_PUNCT = {"(", ")", "[", "]", ",", "=>"}


def _join(tokens: list[str], verbatim: set[int]) -> str:
    """Tokens joined by spaces; ``[``, ``]`` and ``,`` hug their neighbours as in ``[v1, v2]``."""
    out = ""
    for i, t in enumerate(tokens):
        s = t if i in verbatim else quote(t)
        if i == 0:
            out = s
        elif (t in ("]", ",") and i in verbatim) or (
            i > 0 and tokens[i - 1] == "[" and (i - 1) in verbatim
        ):
            out += s
        else:
            out += " " + s
    return out


def _line_text(tokens: list[str]) -> str:
    # Punctuation never occurs as a quoted value in a valid wgt.mod, so print it bare.
    return _join(tokens, {i for i, t in enumerate(tokens) if t in _PUNCT})


def format_syntax(f: FileSyntax) -> bytes:
    """Print the tree canonically; ``parse_syntax(format_syntax(t)) == t``."""
    out: list[str] = []

    def comments(cs: list[Comment], indent: str) -> None:
        for c in cs:
            out.append(indent + c.text)

    def line(ln: Line, indent: str) -> None:
        comments(ln.before, indent)
        if ln.tokens:
            s = indent + _line_text(ln.tokens)
            if ln.suffix:
                s += " " + ln.suffix.text
            out.append(s)

    for i, st in enumerate(f.stmts):
        if i > 0 and st.blank_before:
            out.append("")
        if isinstance(st, CommentBlock):
            comments(st.comments, "")
        elif isinstance(st, Line):
            line(st, "")
        else:
            comments(st.before, "")
            head = quote(st.verb) + " ("
            if not st.lines and not st.after:
                head += ")" + (" " + st.close_suffix.text if st.close_suffix else "")
                if st.suffix:
                    head += " " + st.suffix.text
                out.append(head)
                continue
            out.append(head + (" " + st.suffix.text if st.suffix else ""))
            for j, ln in enumerate(st.lines):
                if j > 0 and ln.blank_before:
                    out.append("")
                line(ln, "\t")
            comments(st.after, "\t")
            out.append(")" + (" " + st.close_suffix.text if st.close_suffix else ""))
    return ("\n".join(out) + "\n").encode() if out else b""
