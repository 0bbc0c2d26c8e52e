"""What the statements of wgt.mod mean, and edits that keep the user's comments.

The statements are values (:mod:`._stmts`), read from the syntax by one checker
per verb (:mod:`._interpret`); this module pairs them with the syntax in
:class:`ModFile`, whose edits rewrite the syntax and read it again.

The verbs (DESIGN.md section 3)::

    module PATH
    wgt MAJOR.MINOR                          the wgt.mod language version
    require PATH VERSION [// indirect]
    exclude PATH VERSION
    replace PATH [VERSION] => DIR            a local directory (./, ../ or /)
    replace PATH [VERSION] => PATH VERSION   another module
    retract VERSION | [LOW, HIGH]            with the rationale as a comment
    select PATH PATTERN...                   fetch only the files matching these globs
    artifact NAME SOURCE                     what the package publishes
    license EXPRESSION                       the module's license: an SPDX expression
    deny-license LICENSE...                  refuse dependencies under these licenses
    trust PATTERN key=FILE                   modules matching PATTERN must be signed by FILE's key
    trust PATTERN identity=ID issuer=URL     ... or keylessly (Sigstore) by ID as URL issued it
        [not-after=YYYY-MM-DD] [revoked=FILE]  ... until that day (UTC); not by a key FILE lists
        [trusted-root=FILE]                  ... a private Sigstore's trusted_root.json (keyless)

``require``, ``exclude``, ``replace``, ``retract``, ``select``,
``artifact``, ``deny-license`` and ``trust`` may be written as blocks. Errors name
``file:line:col`` and all errors of a file are reported together.

``license`` takes one SPDX expression (:mod:`wgtpm.spdx`), in quotes when it
has parentheses, since ``(`` opens a block: ``license MIT OR Apache-2.0``,
``license "(MIT OR Apache-2.0) AND CC-BY-4.0"``. ``deny-license`` names
licenses (an id, ``LicenseRef-...``, ``"ID WITH EXCEPTION"`` or
``NOASSERTION`` for "declares none"); like ``exclude`` it counts only in the
main module.

Deprecation is a comment, as in Go's go.mod: a paragraph starting with
``Deprecated:`` in the comment lines above the ``module`` line or in the
comment after it::

    // Deprecated: use hf.co/acme/tiny-v2 instead.
    module hf.co/acme/tiny

The wgt.mod of a module's latest version is the one that counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from .. import module as _module
from .. import spdx
from .._errors import ParseError
from ._interpret import interpret
from ._stmts import (
    BLOCK_VERBS,
    LANGUAGE_VERSION,
    VERBS,
    Artifact,
    DenyLicense,
    Exclude,
    License,
    Module,
    Replace,
    Require,
    Retract,
    Select,
    Statements,
    Trust,
    WgtVersion,
    comment_text,
    is_indirect,
    is_local_path,
)
from ._syntax import Block, Comment, FileSyntax, Line, Stmt, format_syntax, parse_syntax

__all__ = [
    "LANGUAGE_VERSION",
    "Artifact",
    "DenyLicense",
    "Exclude",
    "License",
    "ModFile",
    "Module",
    "Replace",
    "Require",
    "Retract",
    "Select",
    "Trust",
    "WgtVersion",
    "is_indirect",
    "is_local_path",
    "new",
    "parse",
]


@dataclass
class ModFile(Statements):
    """A parsed wgt.mod: the meaning of each statement plus the syntax it came from.

    Edit with the ``add_*``/``drop_*``/``set_*`` methods and print with
    :meth:`format`; comments the user wrote survive every edit.
    """

    syntax: FileSyntax = field(kw_only=True)

    # ---- printing and editing --------------------------------------------

    def format(self) -> bytes:
        """The canonical text of the file."""
        return format_syntax(self.syntax)

    # ---- editing -------------------------------------------------------

    def set_module(self, path: str) -> None:
        _module.check_path(path, main=True)
        if self.module:
            self.module.line.tokens = ["module", path]
        else:
            self._insert(Line(["module", path]))
        self._resync()

    def set_wgt(self, v: str) -> None:
        if self.wgt:
            self.wgt.line.tokens = ["wgt", v]
        else:
            self._insert(Line(["wgt", v]))
        self._resync()

    def add_require(self, path: str, version: str, indirect: bool = False) -> None:
        """Require ``path@version``; an existing requirement is updated in place."""
        _module.check_path_major(path, version)
        r = self.require(path)
        if r is not None:
            _set_args(r.line, [path, version])
            _set_indirect(r.line, indirect)
        else:
            line = Line(["require", path, version])
            _set_indirect(line, indirect)
            self._insert(line)
        self._resync()

    def drop_require(self, path: str) -> None:
        self._drop(lambda r: isinstance(r, Require) and r.path == path)

    def set_requires(self, reqs: list[tuple[str, str, bool]]) -> None:
        """Make the requirements exactly ``reqs`` (path, version, indirect); keeps comments.

        Existing lines are updated in place, lines no longer needed are
        dropped, new ones are added to the last ``require`` block, and each
        ``require`` block is then sorted by module path (as ``go get`` keeps go.mod).
        """
        want = {p: (v, ind) for p, v, ind in reqs}
        for r in list(self.requires):
            if r.path not in want:
                self.drop_require(r.path)
        for p, v, ind in reqs:  # in any order: sort_requires orders the blocks below
            cur = self.require(p)
            if cur is None or cur.version != v or cur.indirect != ind:
                self.add_require(p, v, ind)
        self.sort_requires()

    def sort_requires(self) -> None:
        """Sort the lines of each ``require`` block by module path, then version (Go's
        ``SortBlocks``); each line keeps the comments above it and after it."""
        for st in self.syntax.stmts:
            if isinstance(st, Block) and st.verb == "require":
                st.lines.sort(key=_require_order)
        self._resync()

    def add_exclude(self, path: str, version: str) -> None:
        _module.check_path_major(path, version)
        if not self.is_excluded(path, version):
            self._insert(Line(["exclude", path, version]))
            self._resync()

    def drop_exclude(self, path: str, version: str) -> None:
        self._drop(lambda e: isinstance(e, Exclude) and (e.path, e.version) == (path, version))

    def add_replace(self, old: str, old_v: str | None, new: str, new_v: str | None) -> None:
        """Replace ``old[@old_v]`` with a directory (``new_v`` None) or ``new@new_v``."""
        self.drop_replace(old, old_v)
        toks = (
            ["replace", old] + ([old_v] if old_v else []) + ["=>", new] + ([new_v] if new_v else [])
        )
        self._insert(Line(toks))
        self._resync()

    def drop_replace(self, old: str, old_v: str | None) -> None:
        self._drop(lambda r: isinstance(r, Replace) and (r.old_path, r.old_version) == (old, old_v))

    def add_retract(self, low: str, high: str | None = None, rationale: str = "") -> None:
        toks = (
            ["retract", low] if not high or high == low else ["retract", "[", low, ",", high, "]"]
        )
        self._insert(Line(toks, suffix=Comment("// " + rationale) if rationale else None))
        self._resync()

    def add_select(self, path: str, patterns: list[str]) -> None:
        self._drop(lambda s: isinstance(s, Select) and s.path == path)
        self._insert(Line(["select", path, *patterns]))
        self._resync()

    def drop_select(self, path: str) -> None:
        self._drop(lambda s: isinstance(s, Select) and s.path == path)

    def set_license(self, expression: str | None) -> None:
        """Declare the module's license (an SPDX expression); ``None`` drops the line."""
        if expression is None:
            self._drop(lambda e: isinstance(e, License))
            return
        spdx.parse(expression)  # raises SpdxError saying what is wrong
        toks = ["license", expression]
        if self.license:
            self.license.line.tokens = toks
        else:
            self._insert(Line(toks))
        self._resync()

    def add_deny_license(self, license: str) -> None:
        """Add ``license`` (an id, ``LicenseRef-...`` or ``ID WITH EXC``) to the deny list;
        raises :class:`~wgtpm.spdx.SpdxError` for anything else."""
        if not isinstance(spdx.parse(license), spdx.License):
            raise spdx.SpdxError("name one license, not an AND/OR expression", 0)
        if not any(str(d.license) == license for d in self.deny_licenses):
            self._insert(Line(["deny-license", license]))
            self._resync()

    def drop_deny_license(self, license: str) -> None:
        """Drop every ``deny-license`` line that names exactly ``license``."""
        self._drop(lambda d: isinstance(d, DenyLicense) and str(d.license) == license)

    def add_artifact(self, name: str, source: str) -> None:
        self._drop(lambda a: isinstance(a, Artifact) and a.name == name)
        self._insert(Line(["artifact", name, source]))
        self._resync()

    def drop_artifact(self, name: str) -> None:
        self._drop(lambda a: isinstance(a, Artifact) and a.name == name)

    # ---- the syntax tree ------------------------------------------------

    def _entries(self) -> list[object]:
        return [
            *([self.module] if self.module else []),
            *([self.wgt] if self.wgt else []),
            *self.requires,
            *self.excludes,
            *self.replaces,
            *self.retracts,
            *self.selects,
            *self.artifacts,
            *([self.license] if self.license else []),
            *self.deny_licenses,
            *self.trusts,
        ]

    def _drop(self, pred: object) -> None:
        doomed = {id(e.line) for e in self._entries() if pred(e)}  # type: ignore[operator, attr-defined]
        if not doomed:
            return
        stmts: list[Stmt] = []
        carry = False  # a removed statement's blank line passes to the next one
        for st in self.syntax.stmts:
            gone = isinstance(st, Line) and id(st) in doomed
            if isinstance(st, Block):
                st.lines = [ln for ln in st.lines if id(ln) not in doomed]
                gone = not st.lines and not st.after
            if gone:
                carry = carry or st.blank_before
                continue
            st.blank_before = st.blank_before or (carry and bool(stmts))
            carry = False
            stmts.append(st)
        self.syntax.stmts = stmts
        self._resync()

    def _insert(self, line: Line) -> None:
        """Add a statement line where it belongs: in the verb's last block, else after its kind."""
        verb = line.tokens[0]
        stmts = self.syntax.stmts
        for i in range(len(stmts) - 1, -1, -1):
            st = stmts[i]
            if isinstance(st, Block) and st.verb == verb:
                st.lines.append(Line(line.tokens[1:], suffix=line.suffix))
                return
            if isinstance(st, Line) and st.tokens and st.tokens[0] == verb and verb in BLOCK_VERBS:
                # A second single line of this verb: gather both into a block.
                first = Line(st.tokens[1:], st.pos, st.cols[1:], [], st.suffix)
                stmts[i] = Block(
                    verb,
                    [first, Line(line.tokens[1:], suffix=line.suffix)],
                    st.pos,
                    st.before,
                    blank_before=st.blank_before,
                )
                return
        order = VERBS.index(verb)
        at = 0
        for i, st in enumerate(stmts):
            v = (
                st.verb
                if isinstance(st, Block)
                else (st.tokens[0] if isinstance(st, Line) and st.tokens else None)
            )
            if v in VERBS and VERBS.index(v) <= order:
                at = i + 1
        line.blank_before = at > 0 and verb not in ("wgt",)
        if at < len(stmts) and at == 0:
            stmts[0].blank_before = True
        stmts.insert(at, line)

    def _resync(self) -> None:
        fresh, errors = interpret(self.syntax)
        if errors:
            raise ParseError(errors)
        for f in fields(Statements):
            setattr(self, f.name, getattr(fresh, f.name))


def _set_args(line: Line, args: list[str]) -> None:
    """Set a statement's arguments, whether it is a whole line or a line of a block."""
    if line.tokens and line.tokens[0] in VERBS and len(line.tokens) == len(args) + 1:
        line.tokens = [line.tokens[0], *args]
    else:
        line.tokens = list(args)


def _set_indirect(line: Line, indirect: bool) -> None:
    if indirect == is_indirect(line):
        return
    if indirect:
        rest = comment_text(line.suffix)
        line.suffix = Comment("// indirect" + ("; " + rest if rest else ""))
    else:
        rest = comment_text(line.suffix)
        rest = rest[len("indirect") :].lstrip("; ").strip()
        line.suffix = Comment("// " + rest) if rest else None


def parse(data: bytes, filename: str = "wgt.mod") -> ModFile:
    """Parse and check a wgt.mod; raises :class:`ParseError` listing every problem."""
    syntax, errors = parse_syntax(data, filename)
    meaning, more = interpret(syntax)
    errors = sorted(errors + more, key=lambda e: (e.pos.line, e.pos.col))
    if errors:
        raise ParseError(errors)
    return ModFile(syntax=syntax, **{f.name: getattr(meaning, f.name) for f in fields(Statements)})


def new(path: str) -> ModFile:
    """A fresh wgt.mod for module ``path`` at the current language version."""
    mf = parse(b"", "wgt.mod")
    mf.set_module(path)
    mf.set_wgt(LANGUAGE_VERSION)
    return mf


def _require_order(line: Line) -> tuple[str, tuple[int, ...], str]:
    """A require block line's place: by path, then by version (semver order)."""
    path = line.tokens[0] if line.tokens else ""
    v = line.tokens[1] if len(line.tokens) > 1 else ""
    nums = tuple(int(n) for n in re.findall(r"\d+", v.split("-", 1)[0])[:3])
    return (path, nums, v)
