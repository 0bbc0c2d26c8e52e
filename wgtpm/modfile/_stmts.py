"""The statements of a wgt.mod, as values: what :mod:`._interpret` reads each line as.

:class:`Statements` holds every statement of a file and answers the questions
the rest of wgtpm asks of it (which version of a path is required, whether a
version is excluded or retracted, which files to select, whether a license is
denied). :class:`~wgtpm.modfile.ModFile` adds the syntax they came from, to edit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import spdx
from .. import version as _version
from .._errors import Position
from ..kinds import kind_of_source
from ._syntax import Comment, Line

__all__ = [
    "BLOCK_VERBS",
    "LANGUAGE_VERSION",
    "TENSOR_TABLES",
    "VERBS",
    "Artifact",
    "DenyLicense",
    "Exclude",
    "License",
    "Module",
    "Replace",
    "Require",
    "Retract",
    "Select",
    "Statements",
    "Trust",
    "WgtVersion",
    "comment_text",
    "is_indirect",
    "is_local_path",
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
TENSOR_TABLES = "wgt.tensors.json"


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


def is_local_path(p: str) -> bool:
    """Whether a replacement target is a directory: ``./x``, ``../x``, ``/x``, ``C:\\x``."""
    return (
        p in (".", "..")
        or p.startswith(("./", "../", "/", ".\\", "..\\"))
        or re.match(r"^[A-Za-z]:[\\/]", p) is not None
    )


def comment_text(c: Comment | None) -> str:
    return c.text[2:].strip() if c else ""


def is_indirect(line: Line) -> bool:
    """Whether the line's comment marks it ``// indirect`` (alone or before ``;``)."""
    t = comment_text(line.suffix)
    return t == "indirect" or t.startswith("indirect;")


@dataclass
class Statements:
    """Every statement of a wgt.mod, by verb (``module`` and ``wgt`` at most once)."""

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
