"""Where each key of a TOML document is written: the line of every table and key.

``tomllib`` parses TOML but reports no positions for what it accepts, so a
checker of the parsed values needs this second, smaller reader to say on
which line a value was given. It understands the TOML that names keys:
bare, ``"quoted"`` and ``'literal'`` keys, dotted keys (``a . "b.c" . d``),
``[tables]`` and ``[[arrays of tables]]``, and it skips values of every
form (basic, literal and multi-line strings, arrays and inline tables over
several lines, comments) without being fooled by a ``=``, ``#`` or ``[``
inside them::

    >>> key_lines('a = 1\\n[t]\\nb.c = "x = [y]"\\n')
    {('a',): 1, ('t',): 2, ('t', 'b'): 3, ('t', 'b', 'c'): 3}

Paths map to the line of their first appearance: a table header, or the
first key that creates the table implicitly (``b`` above). Keys inside
inline tables are not listed; their table's key is. The text is assumed to
be valid TOML (parse it with ``tomllib`` first); on anything unexpected the
reader stops and returns what it has found so far.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 needs tomli ("tomli; python_version < '3.11'")
    import tomli as tomllib

__all__ = ["KeyPath", "key_lines"]

KeyPath = tuple[str, ...]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Stop(Exception):
    """Text the reader does not understand: stop, keep what was found."""


def key_lines(text: str) -> dict[KeyPath, int]:
    """Every table and key path of ``text`` -> the 1-based line where it first appears."""
    reader = _Reader(text.replace("\r\n", "\n"))
    try:
        reader.document()
    except _Stop:
        pass
    return reader.lines


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.lines: dict[KeyPath, int] = {}

    # ---- characters ------------------------------------------------------

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.text[j] if j < len(self.text) else ""

    def advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.i >= len(self.text):
                raise _Stop
            if self.text[self.i] == "\n":
                self.line += 1
            self.i += 1

    def blanks(self, newlines: bool) -> None:
        """Skip spaces and tabs, comments, and (when ``newlines``) line ends."""
        while self.i < len(self.text):
            c = self.peek()
            if c in " \t" or (newlines and c == "\n"):
                self.advance()
            elif c == "#":
                while self.peek() not in ("\n", ""):
                    self.advance()
            else:
                return

    # ---- the document ----------------------------------------------------

    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.blanks(newlines=True)
            if self.i >= len(self.text):
                return
            line = self.line
            if self.peek() == "[":
                double = self.peek(1) == "["
                self.advance(2 if double else 1)
                table = self.key()
                self.expect("]]" if double else "]")
                self.record(table, line)
            else:
                path = self.key()
                self.expect("=")
                self.record(table + path, line)
                self.value()

    def record(self, path: KeyPath, line: int) -> None:
        for n in range(1, len(path) + 1):
            self.lines.setdefault(path[:n], line)

    def expect(self, token: str) -> None:
        self.blanks(newlines=False)
        if not self.text.startswith(token, self.i):
            raise _Stop
        self.advance(len(token))

    # ---- keys ------------------------------------------------------------

    def key(self) -> KeyPath:
        """A dotted key: simple keys joined by ``.``, blanks allowed around each dot."""
        parts = [self.simple_key()]
        while True:
            self.blanks(newlines=False)
            if self.peek() != ".":
                return tuple(parts)
            self.advance()
            parts.append(self.simple_key())

    def simple_key(self) -> str:
        self.blanks(newlines=False)
        c = self.peek()
        if c in ('"', "'"):
            start = self.i
            self.string()
            try:
                return str(tomllib.loads("k = " + self.text[start : self.i])["k"])
            except tomllib.TOMLDecodeError as exc:
                raise _Stop from exc
        start = self.i
        while self.peek() in _BARE and self.peek():
            self.advance()
        if self.i == start:
            raise _Stop
        return self.text[start : self.i]

    # ---- values ----------------------------------------------------------

    def value(self) -> None:
        """Skip one value and the rest of its line."""
        self.blanks(newlines=False)
        self.skip_value()
        self.blanks(newlines=False)
        if self.peek() not in ("\n", ""):
            raise _Stop

    def skip_value(self) -> None:
        c = self.peek()
        if c in ('"', "'"):
            self.string()
        elif c in ("[", "{"):
            self.bracketed("]" if c == "[" else "}")
        else:  # a number, date or boolean (a date may hold a space): up to a comma, closer or comment
            while self.peek() not in ("", "\n", "#", ",", "]", "}"):
                self.advance()

    def bracketed(self, close: str) -> None:
        """An array or inline table, with what it holds, over any number of lines."""
        self.advance()
        while True:
            self.blanks(newlines=True)
            c = self.peek()
            if c == close:
                self.advance()
                return
            if c == "":
                raise _Stop
            if c in (",", "=", "."):
                self.advance()
            elif close == "}" and c not in ('"', "'", "[", "{") and c in _BARE:
                self.simple_key()  # a key of the inline table
            else:
                self.skip_value()

    def string(self) -> None:
        """A basic, literal or multi-line string, quotes included."""
        quote = self.peek()
        if self.text.startswith(quote * 3, self.i):
            self.advance(3)
            while not self.text.startswith(quote * 3, self.i):
                if quote == '"' and self.peek() == "\\":
                    self.advance()
                self.advance()
            self.advance(3)
            while self.peek() == quote:  # up to two quotes may end the content itself
                self.advance()
            return
        self.advance()
        while self.peek() != quote:
            if self.peek() in ("\n", ""):
                raise _Stop
            if quote == '"' and self.peek() == "\\":
                self.advance()
            self.advance()
        self.advance()
