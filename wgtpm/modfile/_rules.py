"""What the statements of wgt.mod mean, and edits that keep the user's comments.

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

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import module as _module
from .. import spdx
from .. import version as _version
from .._errors import ModuleError, ParseError, Position, PositionedError
from ..index import check_file_path
from ..kinds import kind_of_source
from ._syntax import (
    Block,
    Comment,
    CommentBlock,
    FileSyntax,
    Line,
    Stmt,
    format_syntax,
    parse_syntax,
)

__all__ = [
    "Artifact",
    "DenyLicense",
    "Exclude",
    "License",
    "ModFile",
    "Replace",
    "Require",
    "Retract",
    "Select",
    "Trust",
    "parse",
]

VERBS = (
    "module",
    "wgt",
    "license",
    "require",
    "exclude",
    "replace",
    "retract",
    "select",
    "artifact",
    "deny-license",
    "trust",
)
BLOCK_VERBS = frozenset(VERBS) - {"module", "wgt", "license"}
LANGUAGE_VERSION = "0.1"
_ARTIFACT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*\Z")
_WGT_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\Z")


@dataclass
class Module:
    """The ``module`` line; ``deprecated`` is the text of its ``Deprecated:`` comment, or ""."""

    path: str
    line: Line = field(repr=False, compare=False)
    deprecated: str = ""


@dataclass
class WgtVersion:
    version: str
    line: Line = field(repr=False, compare=False)


@dataclass
class Require:
    path: str
    version: str
    indirect: bool
    line: Line = field(repr=False, compare=False)


@dataclass
class Exclude:
    path: str
    version: str
    line: Line = field(repr=False, compare=False)


@dataclass
class Replace:
    old_path: str
    old_version: str | None
    new_path: str
    new_version: str | None
    line: Line = field(repr=False, compare=False)

    @property
    def is_local(self) -> bool:
        """Whether the replacement is a directory on this machine."""
        return self.new_version is None


@dataclass
class Retract:
    low: str
    high: str
    rationale: str
    line: Line = field(repr=False, compare=False)


@dataclass
class Select:
    path: str
    patterns: list[str]
    line: Line = field(repr=False, compare=False)


@dataclass
class Artifact:
    name: str
    source: str
    line: Line = field(repr=False, compare=False)

    @property
    def kind(self) -> str:
        """``wgt`` (compiled and trained), ``paw`` (finetuned, or prebuilt) or ``file`` (as it is).

        The kind follows from the source's suffix: :func:`wgtpm.kinds.kind_of_source`.
        """
        return kind_of_source(self.source)


@dataclass
class License:
    """``license EXPRESSION``: ``expression`` as written, ``parsed`` its SPDX tree."""

    expression: str
    parsed: spdx.Expression = field(repr=False, compare=False)
    line: Line = field(repr=False, compare=False)


@dataclass
class DenyLicense:
    """One license of a ``deny-license`` line (a line naming three gives three)."""

    license: spdx.License
    line: Line = field(repr=False, compare=False)
    col: int = field(repr=False, compare=False, default=0)

    @property
    def pos(self) -> Position:
        """Where this license is written (``wgt.mod:7:14``), for a refusal to point at."""
        return Position(self.line.pos.file, self.line.pos.line, self.col)


def is_local_path(p: str) -> bool:
    """Whether a replacement target is a directory: ``./x``, ``../x``, ``/x``, ``C:\\x``."""
    return (
        p in (".", "..")
        or p.startswith(("./", "../", "/", ".\\", "..\\"))
        or re.match(r"^[A-Za-z]:[\\/]", p) is not None
    )


def _comment_text(c: Comment | None) -> str:
    return c.text[2:].strip() if c else ""


def is_indirect(line: Line) -> bool:
    """Whether the line's comment marks it ``// indirect`` (alone or before ``;``)."""
    t = _comment_text(line.suffix)
    return t == "indirect" or t.startswith("indirect;")


@dataclass
class ModFile:
    """A parsed wgt.mod: the meaning of each statement plus the syntax it came from.

    Edit with the ``add_*``/``drop_*``/``set_*`` methods and print with
    :meth:`format`; comments the user wrote survive every edit.
    """

    syntax: FileSyntax
    module: Module | None = None
    wgt: WgtVersion | None = None
    requires: list[Require] = field(default_factory=list)
    excludes: list[Exclude] = field(default_factory=list)
    replaces: list[Replace] = field(default_factory=list)
    retracts: list[Retract] = field(default_factory=list)
    selects: list[Select] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    license: License | None = None
    deny_licenses: list[DenyLicense] = field(default_factory=list)
    trusts: list[Trust] = field(default_factory=list)

    # ---- reading -------------------------------------------------------

    def require(self, path: str) -> Require | None:
        for r in self.requires:
            if r.path == path:
                return r
        return None

    def replacement(self, path: str, version: str) -> Replace | None:
        """The replace that applies to ``path@version`` (a versioned one wins)."""
        best = None
        for r in self.replaces:
            if r.old_path == path:
                if r.old_version == version:
                    return r
                if r.old_version is None:
                    best = r
        return best

    def is_excluded(self, path: str, version: str) -> bool:
        return any(e.path == path and e.version == version for e in self.excludes)

    def is_retracted(self, version: str) -> Retract | None:
        for r in self.retracts:
            if _version.compare(r.low, version) <= 0 <= _version.compare(r.high, version):
                return r
        return None

    def select_patterns(self, path: str) -> list[str] | None:
        """The ``select`` globs for ``path``, or ``None`` when every file is wanted.

        A ``FILE#TENSOR`` item selects no file whole: it adds ``wgt.tensors.json`` (the
        release's tables, which say where the tensor lies; :meth:`select_tensors`).
        """
        pats = [p for s in self.selects if s.path == path for p in s.patterns if "#" not in p]
        if self.select_tensors(path):
            pats.append(TENSOR_TABLES)
        return pats or None

    def select_tensors(self, path: str) -> list[tuple[str, str]]:
        """The ``FILE#TENSOR`` items of the ``select`` lines for ``path``, as
        ``(FILE, TENSOR)``; ``TENSOR`` is a name, or a prefix ending in ``*``."""
        return [
            (f, t)
            for s in self.selects
            if s.path == path
            for p in s.patterns
            if "#" in p
            for f, t in [p.split("#", 1)]
        ]

    def denied(self, license: spdx.Expression | None) -> DenyLicense | None:
        """The ``deny-license`` entry that refuses ``license`` (``None``: declares none), if any."""
        hit = spdx.refused(license, [d.license for d in self.deny_licenses])
        return next((d for d in self.deny_licenses if d.license is hit), None)

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
        for p, v, ind in sorted(reqs):
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
        fresh, errors = _interpret(self.syntax)
        if errors:
            raise ParseError(errors)
        self.module, self.wgt = fresh.module, fresh.wgt
        self.requires, self.excludes, self.replaces = fresh.requires, fresh.excludes, fresh.replaces
        self.retracts, self.selects, self.artifacts = fresh.retracts, fresh.selects, fresh.artifacts
        self.license, self.deny_licenses = fresh.license, fresh.deny_licenses
        self.trusts = fresh.trusts


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
        rest = _comment_text(line.suffix)
        line.suffix = Comment("// indirect" + ("; " + rest if rest else ""))
    else:
        rest = _comment_text(line.suffix)
        rest = rest[len("indirect") :].lstrip("; ").strip()
        line.suffix = Comment("// " + rest) if rest else None


def _statements(f: FileSyntax) -> list[tuple[str, Line, list[str]]]:
    """Every statement as (verb, line, arguments), block lines included."""
    out: list[tuple[str, Line, list[str]]] = []
    for st in f.stmts:
        if isinstance(st, CommentBlock):
            continue
        if isinstance(st, Line):
            out.append((st.tokens[0], st, st.tokens[1:]))
        else:
            out.extend((st.verb, ln, ln.tokens) for ln in st.lines if ln.tokens)
    return out


def _interpret(f: FileSyntax) -> tuple[ModFile, list[PositionedError]]:
    mf = ModFile(f)
    errors: list[PositionedError] = []
    # Arguments start at token 1 for a whole line, at token 0 inside a block.
    for verb, line, args in _statements(f):
        off = len(line.tokens) - len(args)

        def err(i: int, msg: str, line: Line = line, off: int = off) -> None:
            at = max(0, min(i + off, len(line.tokens) - 1))
            errors.append(PositionedError(line.col(at), msg))

        if verb not in VERBS:
            err(-off, f"unknown directive {_shown(verb)} (want one of: {', '.join(VERBS)})")
            continue
        if verb in ("module", "wgt", "license") and not any(s is line for s in f.stmts):
            err(-off, f"{verb} cannot be written as a block")
            continue
        _INTERPRETERS[verb](mf, line, args, err)
    seen: dict[str, Line] = {}
    for r in mf.requires:
        if r.path in seen:
            errors.append(
                PositionedError(
                    r.line.col(0),
                    f"{r.path} is required twice (also at line {seen[r.path].pos.line}); keep one",
                )
            )
        seen[r.path] = r.line
    if mf.module:
        for r in mf.requires:
            if r.path == mf.module.path:
                errors.append(PositionedError(r.line.col(0), "a module cannot require itself"))
    names: set[str] = set()
    for a in mf.artifacts:
        if a.name in names:
            errors.append(PositionedError(a.line.col(0), f"artifact {a.name!r} is declared twice"))
        names.add(a.name)
    errors.sort(key=lambda e: (e.pos.line, e.pos.col))
    return mf, errors


ErrFn = Callable[[int, str], None]  # report a problem at argument i

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,23}\Z")


def _shown(token: str) -> str:
    """A token as an error message may quote it: a short word, or not at all.

    A file that is not a wgt.mod (a symlink to a key, say) must not be
    printed back line by line through error messages.
    """
    return repr(token) if _WORD.match(token) else "(a token that is not a directive name)"


def _require_order(line: Line) -> tuple[str, tuple[int, ...], str]:
    """A require block line's place: by path, then by version (semver order)."""
    path = line.tokens[0] if line.tokens else ""
    v = line.tokens[1] if len(line.tokens) > 1 else ""
    nums = tuple(int(n) for n in re.findall(r"\d+", v.split("-", 1)[0])[:3])
    return (path, nums, v)


def _check_path(args: list[str], i: int, err: ErrFn, main: bool = False) -> str | None:
    try:
        p = _module.normalise(args[i])
        _module.check_path(p, main)
        return p
    except ModuleError as exc:
        err(i, exc.message)
        return None


def _check_version(path: str, args: list[str], i: int, err: ErrFn) -> str | None:
    v = args[i]
    if not _version.is_valid(v):
        err(i, f"invalid version {v!r}: want a canonical version like v1.2.3")
        return None
    try:
        _module.check_path_major(path, v)
    except ModuleError as exc:
        err(i, exc.message)
        return None
    return v


def _want(args: list[str], n: int, usage: str, err: ErrFn) -> bool:
    if len(args) != n:
        err(0 if args else -1, f"usage: {usage}")
        return False
    return True


def _module_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if mf.module is not None:
        err(-1, f"repeated module statement (first at line {mf.module.line.pos.line})")
        return
    if _want(args, 1, "module PATH", err) and (p := _check_path(args, 0, err, main=True)):
        mf.module = Module(p, line, deprecation(line))


# A paragraph of a comment that starts with "Deprecated:" (Go's modfile.parseDeprecation).
_DEPRECATED = re.compile(r"(?s)(?:^|\n\n)Deprecated: *(.*?)(?:$|\n\n)")


def deprecation(line: Line) -> str:
    """The ``Deprecated:`` text of the comments above ``line`` and after it, on one line.

    The comments are read as Go reads a directive's comment: their lines
    without ``//``, joined; an empty comment line ends a paragraph.
    """
    text = "\n".join(_comment_text(c) for c in [*line.before, line.suffix] if c)
    m = _DEPRECATED.search(text)
    return " ".join(m.group(1).split()) if m else ""


def _wgt_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if mf.wgt is not None:
        err(-1, f"repeated wgt statement (first at line {mf.wgt.line.pos.line})")
        return
    if not _want(args, 1, "wgt MAJOR.MINOR (like wgt 0.1)", err):
        return
    if not _WGT_VERSION.match(args[0]):
        err(0, f"invalid wgt version {args[0]!r}: want MAJOR.MINOR like {LANGUAGE_VERSION}")
        return
    if _newer(args[0], LANGUAGE_VERSION):  # as go refuses a go.mod for a newer go
        err(
            0,
            f"wgt {args[0]} is newer than this wgtpm supports (wgt {LANGUAGE_VERSION}); "
            "upgrade wgtpm, or fix the version",
        )
        return
    mf.wgt = WgtVersion(args[0], line)


def _newer(a: str, b: str) -> bool:
    """Whether MAJOR.MINOR ``a`` is after ``b``."""
    return tuple(map(int, a.split("."))) > tuple(map(int, b.split(".")))


def _require_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if not _want(args, 2, "require PATH VERSION", err):
        return
    if (p := _check_path(args, 0, err)) and (v := _check_version(p, args, 1, err)):
        mf.requires.append(Require(p, v, is_indirect(line), line))


def _exclude_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if not _want(args, 2, "exclude PATH VERSION", err):
        return
    if (p := _check_path(args, 0, err)) and (v := _check_version(p, args, 1, err)):
        mf.excludes.append(Exclude(p, v, line))


def _replace_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    usage = "replace PATH [VERSION] => DIR, or replace PATH [VERSION] => PATH VERSION"
    if "=>" not in args:
        err(0, f"missing '=>': {usage}")
        return
    arrow = args.index("=>")
    left, right = args[:arrow], args[arrow + 1 :]
    if len(left) not in (1, 2) or len(right) not in (1, 2):
        err(0, f"usage: {usage}")
        return
    old = _check_path(args, 0, err)
    old_v = _check_version(old, args, 1, err) if old and len(left) == 2 else None
    if not old or (len(left) == 2 and old_v is None):
        return
    if len(right) == 1:
        if not is_local_path(right[0]):
            err(
                arrow + 1,
                f"replacement {right[0]!r} is neither a directory (start it with ./ or ../) nor PATH VERSION",
            )
            return
        mf.replaces.append(Replace(old, old_v, right[0], None, line))
        return
    if is_local_path(right[0]):
        err(arrow + 2, "a directory replacement takes no version")
        return
    new = _check_path(args, arrow + 1, err)
    new_v = _check_version(new, args, arrow + 2, err) if new else None
    if new and new_v:
        mf.replaces.append(Replace(old, old_v, new, new_v, line))


def _retract_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    rationale = " ".join(_comment_text(c) for c in [*line.before, line.suffix] if c)
    if len(args) == 1:
        if _version.is_valid(args[0]):
            mf.retracts.append(Retract(args[0], args[0], rationale, line))
        else:
            err(0, f"invalid version {args[0]!r}")
        return
    if len(args) == 5 and args[0] == "[" and args[2] == "," and args[4] == "]":
        lo, hi = args[1], args[3]
        if not _version.is_valid(lo):
            err(1, f"invalid version {lo!r}")
        elif not _version.is_valid(hi):
            err(3, f"invalid version {hi!r}")
        elif _version.compare(lo, hi) > 0:
            err(1, f"interval [{lo}, {hi}] is empty: the low end is above the high end")
        else:
            mf.retracts.append(Retract(lo, hi, rationale, line))
        return
    err(0, "usage: retract VERSION, or retract [LOW, HIGH]")


def _select_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if len(args) < 2:
        err(
            0 if args else -1, "usage: select PATH PATTERN... (glob patterns of the files to fetch)"
        )
        return
    if p := _check_path(args, 0, err):
        for i, pat in enumerate(args[1:], 1):
            if "#" in pat and (why := _tensor_select_problem(pat)):
                err(i, why)
                return
        mf.selects.append(Select(p, args[1:], line))


#: The file a ``FILE#TENSOR`` select adds to the files fetched (wgtpm.tensors.TABLES_FILE).
TENSOR_TABLES = "wgt.tensors.json"


def _tensor_select_problem(pat: str) -> str | None:
    """What is wrong with a ``FILE#TENSOR`` select item, or ``None``: FILE is one file's
    path (no glob), TENSOR a tensor name or a prefix ending in ``*``."""
    file, _, tensor = pat.partition("#")
    usage = "use FILE#TENSOR or FILE#PREFIX* (model.safetensors#model.embed_tokens.weight)"
    if not file or not tensor:
        return f"invalid tensor select {pat!r}: {usage}"
    if any(c in file for c in "*?[]"):
        return f"invalid tensor select {pat!r}: FILE is one file's path, not a glob; {usage}"
    if "#" in tensor or any(c in tensor.rstrip("*") for c in "*?[]") or tensor == "*":
        return f"invalid tensor select {pat!r}: {usage}"
    if not file.endswith((".safetensors", ".gguf")):
        return f"invalid tensor select {pat!r}: only .safetensors and .gguf files have tensors"
    return None


def _artifact_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if not _want(args, 2, "artifact NAME SOURCE", err):
        return
    name, src = args
    if not _ARTIFACT_NAME.match(name):
        err(
            0,
            f"invalid artifact name {name!r}: use letters, digits, '_' and '-', starting with a letter",
        )
        return
    why = check_file_path(src)
    if why:
        err(1, f"artifact source {src!r} {why}: give a path inside the package")
        return
    mf.artifacts.append(Artifact(name, src, line))


def _license_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if mf.license is not None:
        err(-1, f"repeated license statement (first at line {mf.license.line.pos.line})")
        return
    if not args:
        err(-1, "usage: license EXPRESSION (an SPDX expression, like MIT or Apache-2.0)")
        return
    text = " ".join(args)
    try:
        parsed = spdx.parse(text)
    except spdx.SpdxError as exc:
        err(
            0, f"license {text!r}: {exc.message}; write an SPDX expression like 'MIT OR Apache-2.0'"
        )
        return
    mf.license = License(text, parsed, line)


def _deny_license_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if not args:
        err(-1, "usage: deny-license LICENSE... (SPDX ids, like GPL-3.0-only)")
        return
    off = len(line.tokens) - len(args)
    for i, a in enumerate(args):
        if a.upper() in ("AND", "OR", "WITH"):
            err(i, "deny-license names licenses, not an expression; quote 'ID WITH EXCEPTION'")
            return
        try:
            parsed = spdx.parse(a)
        except spdx.SpdxError as exc:
            err(i, f"deny-license {a!r}: {exc.message}")
            continue
        if not isinstance(parsed, spdx.License):
            err(i, f"deny-license {a!r}: name one license per argument, not an AND/OR expression")
            continue
        col = line.cols[i + off] if i + off < len(line.cols) else 0
        mf.deny_licenses.append(DenyLicense(parsed, line, col))


@dataclass
class Trust:
    """A ``trust`` line: modules whose path matches ``pattern`` (a module path, or a
    prefix ending in ``/*`` matching every path below it) must carry a signature by
    the public key in ``key`` (a PEM file, relative to the main module's directory),
    or a keyless (Sigstore) one by ``identity`` as ``issuer`` certified it. ``not_after``
    (``YYYY-MM-DD``) ends the trust after that day (UTC); ``revoked`` names a revocation
    list (:mod:`wgtpm.trust._revoked`) of keys no longer trusted."""

    pattern: str
    key: str | None
    identity: str | None
    issuer: str | None
    line: Line = field(repr=False, compare=False)
    not_after: str | None = None
    revoked: str | None = None
    trusted_root: str | None = None  # a Sigstore trusted_root.json (keyless lines)


_TRUST_USAGE = (
    "usage: trust PATTERN key=FILE [revoked=FILE], or trust PATTERN identity=ID issuer=URL "
    "[trusted-root=FILE]; either may add not-after=YYYY-MM-DD"
)
_TRUST_KEYS = ("key", "identity", "issuer", "not-after", "revoked", "trusted-root")


def _trust_stmt(mf: ModFile, line: Line, args: list[str], err: ErrFn) -> None:
    if len(args) < 2:
        err(-1, _TRUST_USAGE)
        return
    pattern = args[0]
    base = pattern.removesuffix("/*")
    if base.endswith("*") or "*" in base or not base:
        err(0, f"trust {pattern!r}: a pattern is a module path, or a path followed by /*")
        return
    kv: dict[str, str] = {}
    for i, a in enumerate(args[1:], 1):
        k, eq, v = a.partition("=")
        if not eq or k not in _TRUST_KEYS or not v or k in kv:
            err(i, f"{_TRUST_USAGE} (not {_shown(a)})")
            return
        if k == "not-after":
            try:
                datetime.date.fromisoformat(v)
                ok = len(v) == 10
            except ValueError:
                ok = False
            if not ok:
                err(i, "trust not-after= takes a day, YYYY-MM-DD (UTC)")
                return
        kv[k] = v
    not_after, revoked = kv.pop("not-after", None), kv.pop("revoked", None)
    root = kv.pop("trusted-root", None)
    if "key" in kv and len(kv) == 1 and root is None:
        mf.trusts.append(Trust(pattern, kv["key"], None, None, line, not_after, revoked))
    elif set(kv) == {"identity", "issuer"} and revoked is None:
        if not kv["issuer"].startswith("https://"):
            err(len(args) - 1, "trust issuer= is the OIDC issuer's https:// URL")
            return
        mf.trusts.append(
            Trust(pattern, None, kv["identity"], kv["issuer"], line, not_after, None, root)
        )
    elif revoked is not None and "key" not in kv:
        err(1, "trust revoked=FILE lists revoked keys: it goes with key=FILE")
    elif root is not None and "key" in kv:
        err(1, "trust trusted-root=FILE is Sigstore's, for keyless lines (identity= issuer=)")
    else:
        err(1, _TRUST_USAGE)


_INTERPRETERS = {
    "module": _module_stmt,
    "wgt": _wgt_stmt,
    "require": _require_stmt,
    "exclude": _exclude_stmt,
    "replace": _replace_stmt,
    "retract": _retract_stmt,
    "select": _select_stmt,
    "artifact": _artifact_stmt,
    "license": _license_stmt,
    "deny-license": _deny_license_stmt,
    "trust": _trust_stmt,
}


def parse(data: bytes, filename: str = "wgt.mod") -> ModFile:
    """Parse and check a wgt.mod; raises :class:`ParseError` listing every problem."""
    syntax, errors = parse_syntax(data, filename)
    mf, more = _interpret(syntax)
    errors = sorted(errors + more, key=lambda e: (e.pos.line, e.pos.col))
    if errors:
        raise ParseError(errors)
    return mf


def new(path: str) -> ModFile:
    """A fresh wgt.mod for module ``path`` at the current language version."""
    mf = parse(b"", "wgt.mod")
    mf.set_module(path)
    mf.set_wgt(LANGUAGE_VERSION)
    return mf
