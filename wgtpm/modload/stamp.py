"""A no-op ``wgtpm get`` answered from a stamp, without loading the project.

After a ``wgtpm get`` succeeds, the cache records a stamp named by the
sha256 of the project's wgt.mod and wgt.sum: what that command made sure of.
The next ``wgtpm get`` without arguments, on byte-identical wgt.mod and
wgt.sum, checks only the stamp: the same promise a full run gives, since the
build list is a pure function of wgt.mod and the (hash-locked) wgt.mod files
it reaches. A stamp lists, one per line::

    SHA256  /abs/cache/download/github.com/acme/b/@v/v0.1.0.mod
    SHA256  /abs/cache/download/github.com/acme/b/@v/v0.1.0.index.json
    -  /abs/cache/mod/github.com/acme/b@v0.1.0/b/weights.bin

the cached wgt.mod of every module version of the graph and the cached
index of every module of the build list, each with the sha256 of the bytes
that were verified against wgt.sum (re-hashed on every no-op get: they are
small, and SECURITY.md promises that every use of a cached index or wgt.mod is
checked), and every selected file, which must still exist (a full run only
stats them too; ``wgtpm verify`` re-hashes them). A changed or missing line
sends the command down the full path, which names what is wrong.

A project with a local directory replacement never takes this path: the
directory's own wgt.mod can change without wgt.mod or wgt.sum changing. The
wgt.mod parser decides what is a directory replacement (quoted or not, with
``./``, ``../``, ``/`` or a drive letter); a wgt.mod that does not parse gets
no stamp, so the full run reports its errors. ``wgtpm verify`` re-hashes
the files; the stamp does not replace it.

Stamps live in ``$WGTPM_CACHE/meta/done/<key>`` (one absolute path per
line); ``wgtpm cache clean`` removes them with everything else. This module
imports nothing heavy: it runs on every no-op ``get``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from .files import MOD, SUM

__all__ = ["done", "key", "record"]

_ANY = "-"  # in place of a sha256: the file must exist, its bytes are not re-hashed
_CHUNK = 1 << 16  # most wgt.mod and index files fit in one read


def key(root: Path) -> str | None:
    """The stamp name for the project in ``root``, or ``None`` when it may not use one."""
    try:
        mod = (root / MOD).read_bytes()
    except OSError:
        return None
    if _has_local_replacement(mod, str(root / MOD)):
        return None
    try:
        sums = (root / SUM).read_bytes()
    except FileNotFoundError:
        sums = b""
    h = hashlib.sha256(b"wgtpm get stamp 2\0")
    for part in (mod, sums):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def _has_local_replacement(mod: bytes, name: str) -> bool:
    """Whether wgt.mod replaces a module by a directory (or does not parse: no stamp either)."""
    if b"=>" not in mod:
        return False  # every replace line has an arrow: no need to load the parser
    from .. import modfile
    from .._errors import ParseError

    try:
        return any(r.is_local for r in modfile.parse(mod, name).replaces)
    except ParseError:
        return True


def _stamp(cache_root: Path, k: str) -> Path:
    return cache_root / "meta" / "done" / k


def done(cache_root: Path, k: str) -> bool:
    """Whether stamp ``k`` exists and every file it lists is in place, with its sha256 if given."""
    try:
        lines = _stamp(cache_root, k).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    for line in lines:
        want, sep, name = line.partition("  ")
        if not sep:
            return False
        if want == _ANY:
            if not os.path.isfile(name):
                return False
            continue
        try:  # os-level calls: this loop runs for every module on every no-op get
            fd = os.open(name, os.O_RDONLY)
            try:
                h = hashlib.sha256()
                while chunk := os.read(fd, _CHUNK):
                    h.update(chunk)
            finally:
                os.close(fd)
        except OSError:
            return False
        if h.hexdigest() != want:
            return False
    return True


def record(cache_root: Path, k: str, meta: Iterable[Path], files: Iterable[Path]) -> None:
    """Write stamp ``k`` (best effort: without it, the next get does the full check).

    ``meta`` are the cached wgt.mod and index files the command verified
    (their sha256 is recorded now), ``files`` the selected files it placed.
    """
    from .._fs import write_atomic

    p = _stamp(cache_root, k)
    try:
        lines = [f"{hashlib.sha256(m.read_bytes()).hexdigest()}  {m}\n" for m in meta]
        lines += [f"{_ANY}  {f}\n" for f in files]
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(p, "".join(lines).encode())
    except OSError:
        pass
