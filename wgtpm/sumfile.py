"""wgt.sum: the hashes that lock the bytes of every module version.

Exactly Go's go.sum line shape, one hash per line::

    github.com/acme/xor-base v0.1.0 h1:Base64OfSha256=
    github.com/acme/xor-base v0.1.0/wgt.mod h1:Base64OfSha256=

The first line locks every file of the release (the h1 of its index); the
``/wgt.mod`` line locks the wgt.mod alone, so version selection can check the
requirements of versions it never downloads. Lines are kept sorted by module
path, then version (semver order), the ``/wgt.mod`` line after its version's
full line. Writing is the caller's (``wgtpm._fs.write_atomic``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import version as _version
from ._errors import ParseError, Position, PositionedError

__all__ = ["SumFile", "parse"]

MOD_SUFFIX = "/wgt.mod"


def _sort_key(line: tuple[str, str, str]) -> tuple[str, object, int, str]:
    path, ver, h = line
    is_mod = ver.endswith(MOD_SUFFIX)
    base = ver[: -len(MOD_SUFFIX)] if is_mod else ver
    return (path, _version._key(base) if _version.is_valid(base) else base, int(is_mod), h)


@dataclass
class SumFile:
    """The lines of a wgt.sum as (module, version[/wgt.mod], hash) triples."""

    lines: set[tuple[str, str, str]] = field(default_factory=set)

    def hashes(self, path: str, ver: str) -> list[str]:
        """The hashes recorded for ``path ver`` (``ver`` may end in ``/wgt.mod``)."""
        return sorted(h for p, v, h in self.lines if p == path and v == ver)

    def add(self, path: str, ver: str, h: str) -> bool:
        """Record a line; returns whether it was new."""
        line = (path, ver, h)
        if line in self.lines:
            return False
        self.lines.add(line)
        return True

    def keep(self, wanted: Iterable[tuple[str, str]]) -> SumFile:
        """A copy holding only the lines whose (module, version[/wgt.mod]) is in ``wanted``."""
        keys = set(wanted)
        return SumFile({ln for ln in self.lines if (ln[0], ln[1]) in keys})

    def format(self) -> bytes:
        """The canonical text: sorted lines, each ending in a newline."""
        return "".join(f"{p} {v} {h}\n" for p, v, h in sorted(self.lines, key=_sort_key)).encode()

    def copy(self) -> SumFile:
        return SumFile(set(self.lines))


def parse(data: bytes, filename: str = "wgt.sum") -> SumFile:
    """Parse wgt.sum text; every malformed line is reported with its position."""
    sf = SumFile()
    errors: list[PositionedError] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(
            [PositionedError(Position(filename, 1), f"not UTF-8 text: {exc}")]
        ) from None
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        f = line.split()
        pos = Position(filename, n)
        if len(f) != 3:
            errors.append(
                PositionedError(pos, f"want 'MODULE VERSION h1:HASH', found {len(f)} fields")
            )
            continue
        path, ver, h = f
        base = ver[: -len(MOD_SUFFIX)] if ver.endswith(MOD_SUFFIX) else ver
        if not _version.is_valid(base):
            errors.append(PositionedError(pos, f"invalid version {ver!r}"))
            continue
        if not h.startswith("h1:") or len(h) != 47:
            errors.append(
                PositionedError(pos, f"unsupported hash {h!r} (want h1: and 44 base64 characters)")
            )
            continue
        sf.add(path, ver, h)
    if errors:
        raise ParseError(errors)
    return sf
