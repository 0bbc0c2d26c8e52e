"""Reading the statements of a parsed wgt.mod: one checker per verb.

:func:`interpret` turns a :class:`~wgtpm.modfile._syntax.FileSyntax` into
:class:`~wgtpm.modfile._stmts.Statements`, checking every argument (paths,
versions, globs, licenses, trust patterns) and collecting every problem with
its ``file:line:col`` instead of stopping at the first.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable

from .. import module as _module
from .. import spdx
from .. import version as _version
from .._errors import ModuleError, PositionedError
from ..index import check_file_path
from ._stmts import (
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
from ._syntax import CommentBlock, FileSyntax, Line

__all__ = ["deprecation", "interpret"]

_ARTIFACT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*\Z")
_WGT_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\Z")


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


def interpret(f: FileSyntax) -> tuple[Statements, list[PositionedError]]:
    """What the statements of ``f`` say, and every problem with them, in file order."""
    mf = Statements()
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


def _module_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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
    text = "\n".join(comment_text(c) for c in [*line.before, line.suffix] if c)
    m = _DEPRECATED.search(text)
    return " ".join(m.group(1).split()) if m else ""


def _wgt_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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


def _require_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
    if not _want(args, 2, "require PATH VERSION", err):
        return
    if (p := _check_path(args, 0, err)) and (v := _check_version(p, args, 1, err)):
        mf.requires.append(Require(p, v, is_indirect(line), line))


def _exclude_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
    if not _want(args, 2, "exclude PATH VERSION", err):
        return
    if (p := _check_path(args, 0, err)) and (v := _check_version(p, args, 1, err)):
        mf.excludes.append(Exclude(p, v, line))


def _replace_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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


def _retract_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
    rationale = " ".join(comment_text(c) for c in [*line.before, line.suffix] if c)
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


def _select_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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


def _artifact_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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


def _license_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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


def _deny_license_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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


_TRUST_USAGE = (
    "usage: trust PATTERN key=FILE [revoked=FILE], or trust PATTERN identity=ID issuer=URL "
    "[trusted-root=FILE]; either may add not-after=YYYY-MM-DD"
)
_TRUST_KEYS = ("key", "identity", "issuer", "not-after", "revoked", "trusted-root")


def _trust_stmt(mf: Statements, line: Line, args: list[str], err: ErrFn) -> None:
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
