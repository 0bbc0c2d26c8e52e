"""The exceptions wgtpm raises.

Every error wgtpm raises on purpose derives from :class:`WgtpmError`; errors
from third-party libraries are translated at the boundary (``raise ... from
exc``) and never leak. The tree::

    WgtpmError
    ├── ParseError                 a file that does not parse; carries every Position
    ├── UsageError                 a command line or argument that makes no sense
    │   └── _extras.MissingExtraError   an optional dependency is not installed (says the extra)
    ├── ModuleError                anything about one module@version (path, version)
    │   ├── InvalidPathError       a module path that breaks the path rules
    │   ├── InvalidVersionError    a version that is not canonical semver
    │   ├── NotFoundError          no source has this module or version (404/410)
    │   ├── FetchError             a network or protocol failure while fetching
    │   └── VerifyError            bytes that do not match what was expected
    │       ├── ChecksumMismatchError   a hash that disagrees with wgt.sum: a SECURITY ERROR
    │       └── SumdbVerifyError   the checksum database cannot vouch for module@version
    │           └── SumdbSecurityError  the log server forked its history: a SECURITY ERROR
    ├── ResolveError               version selection failed; carries the requirement path
    ├── ReadonlyError              -mod=readonly forbids a change to wgt.mod or wgt.sum
    ├── CacheError                 the module cache is unusable (permissions, disk full)
    ├── BuildError                 a build step (WeightLang, PAW) failed
    ├── SumdbError                 a checksum-database key, note, tree, record, tile or proof is bad
    │   ├── SumdbConflictError     write_config lost a compare-and-swap race (the client retries)
    │   ├── sumdb.note.NoteError   a key or signed note that is malformed or does not verify
    │   └── sumdb.tlog.TlogError   a tree, record, tile or proof that does not check
    │   └── weightlang.LayerImportError   an import statement that cannot be satisfied
    ├── weightlang.ArtifactError   an artifact that fails verification (TamperedArtifactError)
    └── paw.BundleError            a .paw bundle that breaks a rule of the format

Messages name the file, line, module or version and say what to do next.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "BuildError",
    "CacheError",
    "ChecksumMismatchError",
    "FetchError",
    "InvalidPathError",
    "InvalidVersionError",
    "ModuleError",
    "NotFoundError",
    "ParseError",
    "Position",
    "PositionedError",
    "ReadonlyError",
    "ResolveError",
    "SumdbConflictError",
    "SumdbError",
    "SumdbSecurityError",
    "SumdbVerifyError",
    "UsageError",
    "VerifyError",
    "WgtpmError",
]


class WgtpmError(Exception):
    """The base of every error wgtpm raises on purpose."""


class UsageError(WgtpmError):
    """A command line or API argument that makes no sense."""


class Position(NamedTuple):
    """A place in a text file: 1-based line and column (column 0 means 'the whole line')."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        if self.col:
            return f"{self.file}:{self.line}:{self.col}"
        return f"{self.file}:{self.line}"


class PositionedError(NamedTuple):
    """One problem found at one position of a parsed file."""

    pos: Position
    message: str

    def __str__(self) -> str:
        return f"{self.pos}: {self.message}"


MAX_SHOWN_ERRORS = 20  # a ParseError's message lists at most this many problems


class ParseError(WgtpmError):
    """A file that does not parse or check; ``errors`` lists every problem found, in order.

    The message shows the first :data:`MAX_SHOWN_ERRORS` and counts the rest,
    so a large file that is not what it claims to be gives a short message.
    """

    def __init__(self, errors: Sequence[PositionedError]) -> None:
        self.errors = list(errors)
        lines = [str(e) for e in self.errors[:MAX_SHOWN_ERRORS]]
        if len(self.errors) > MAX_SHOWN_ERRORS:
            lines.append(f"(and {len(self.errors) - MAX_SHOWN_ERRORS} more errors)")
        super().__init__("\n".join(lines))


class ModuleError(WgtpmError):
    """An error about one module (and, where known, one version of it)."""

    def __init__(self, path: str, version: str | None, message: str) -> None:
        self.path = path
        self.version = version
        self.message = message
        where = f"{path}@{version}" if version else path
        super().__init__(f"{where}: {message}")


class InvalidPathError(ModuleError):
    """A module path that breaks the path rules of docs/design.md section 2."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, None, f"malformed module path: {message}")


class InvalidVersionError(ModuleError):
    """A version that is not a canonical semantic version with a leading ``v``."""


class NotFoundError(ModuleError):
    """No source in ``WGTPROXY`` has this module or version (HTTP 404 or 410)."""


class FetchError(ModuleError):
    """A network or protocol failure while fetching a module's metadata or files."""


class VerifyError(ModuleError):
    """Downloaded or cached bytes that do not match their expected size or hash."""


class ChecksumMismatchError(VerifyError):
    """A hash that disagrees with wgt.sum (or the checksum log): someone changed the bytes."""

    def __init__(
        self, path: str, version: str, what: str, want: str, got: str, got_from: str = "downloaded"
    ) -> None:
        self.what = what
        self.want = want
        self.got = got
        self.got_from = got_from  # where ``got`` was computed: downloaded, cached, vendored
        width = max(len("wgt.sum"), len(got_from)) + 2
        super().__init__(
            path,
            version,
            f"SECURITY ERROR: checksum mismatch for {what}\n"
            f"\t{'wgt.sum:':<{width}}{want}\n"
            f"\t{got_from + ':':<{width}}{got}\n" + _MISMATCH_ADVICE.get(got_from, _CHANGED_COPY),
        )


_MISMATCH_ADVICE = {
    "downloaded": (
        "This download does NOT match the one recorded before: the release was changed\n"
        "or the source is tampering with it. Nothing was written. Find out which side\n"
        "is right before you edit wgt.sum."
    ),
}
_CHANGED_COPY = (
    "The copy on this machine does not match wgt.sum: either it was modified after it\n"
    "was verified, or wgt.sum was changed since. Nothing was used. Remove the copy\n"
    "('wgtpm cache clean', or 'wgtpm vendor' again for vendor/) and fetch it anew: if the\n"
    "download disagrees with wgt.sum too, find out which side is right before you edit it."
)


class SumdbVerifyError(VerifyError):
    """The checksum database cannot vouch for module@version: a bad tile, note or record.

    The lookup is refused; nothing it returned may be trusted. Raised by
    :meth:`wgtpm.sumdb.client.Client.lookup` from the underlying :class:`SumdbError`.
    """


class SumdbSecurityError(SumdbVerifyError):
    """The checksum database showed two trees that cannot both be true: a SECURITY ERROR.

    ``old_note`` and ``new_note`` are the two signed tree heads, ``proof`` the
    hash the newer tree gives the older tree's records and the consistency
    proof, so the report stands on its own without the misbehaving server.
    """

    def __init__(
        self, path: str, version: str, report: str, old_note: bytes, new_note: bytes
    ) -> None:
        self.report = report
        self.old_note = old_note
        self.new_note = new_note
        super().__init__(path, version, report)


class ResolveError(WgtpmError):
    """Version selection failed; ``chain`` is the requirement path from the main module."""

    def __init__(self, message: str, chain: Sequence[str] = ()) -> None:
        self.chain = list(chain)
        self.message = message
        if self.chain:
            path = "\n".join(
                ("\t" * i) + ("requires " if i else "") + m for i, m in enumerate(self.chain)
            )
            super().__init__(f"{path}: {message}")
        else:
            super().__init__(message)


class ReadonlyError(WgtpmError):
    """A change to wgt.mod or wgt.sum was needed while -mod=readonly was in force."""


class CacheError(WgtpmError):
    """The module cache cannot be used (permissions, a full disk, a broken entry)."""


class BuildError(WgtpmError):
    """A build step (compiling and training a model, finetuning a PAW program) failed."""


class SumdbError(WgtpmError):
    """A checksum-database key, signed note, tree, record, tile or proof that does not check."""


class SumdbConflictError(SumdbError):
    """``write_config(file, old, new)`` found ``file`` no longer holding ``old`` (compare-and-swap).

    Raised by the configuration adapter; the sumdb client re-reads and merges.
    """
