"""A no-op ``wgtpm get`` answered from a stamp, without loading the project.

After a ``wgtpm get`` succeeds, the cache records a stamp named by the
sha256 of the project's wgt.mod and wgt.sum: what that command made sure of.
The next ``wgtpm get`` without arguments, on byte-identical wgt.mod and
wgt.sum, checks only the stamp: the same promise a full run gives, since the
build list is a pure function of wgt.mod and the (hash-locked) wgt.mod files
it reaches. A stamp lists, one per line::

    SHA256 DEV:INO:SIZE:MTIME_NS:CTIME_NS  /abs/cache/download/github.com/acme/b/@v/v0.1.0.mod
    SHA256  /abs/cache/download/github.com/acme/b/@v/v0.1.0.index.json
    -  /abs/cache/mod/github.com/acme/b@v0.1.0/b/weights.bin

the cached wgt.mod of every module version of the graph and the cached
index of every module of the build list, each with the sha256 of the bytes
that were verified against wgt.sum and, where it can vouch for those bytes,
the file's stat signature (below); and every selected file, which must still
exist (a full run only stats them too; ``wgtpm verify`` re-hashes them). A
changed or missing line sends the command down the full path, which names
what is wrong.

Checking metadata without re-hashing it
---------------------------------------

SECURITY.md promises that every use of a cached index or wgt.mod is checked.
A line with a signature is checked by one ``stat``: the file is taken as
unchanged when its device, inode, size, mtime and ctime (in nanoseconds) are
all the recorded ones, as git's index trusts a file's stat. Any difference,
or a line without a signature, re-hashes the file against the recorded
sha256; when the bytes are still right, the stamp is rewritten with the new
signature, so only the next change costs a hash again.

Why a matching signature means unchanged bytes. The kernel sets a file's
ctime to the file system's clock on every change of its bytes (``write``,
``truncate``) and of its inode (``chmod``, ``utime``, link count), and a new
inode's ctime to the clock when it is created; no system call sets ctime to a
chosen value (``utime`` sets mtime, and ctime to now). A signature is
recorded only when the file's ctime is strictly older than the clock read
*before* the file was opened and hashed (the ctime of a temporary file
created in the stamp directory, on the same device; else no signature), and
only when ``fstat`` of the open file gives the same signature before and
after hashing. Then, later:

- the same inode with other bytes has a ctime of at least that clock, so
  larger than the recorded one;
- another inode under the path either existed beside the recorded one, so it
  has another number, or took its number after the recorded inode was freed,
  after the signature was taken, so it has a larger ctime too.

A file changed in the same clock tick as it was hashed (git's "racily clean"
case) gets no signature and is re-hashed next time. What this cannot see:
the system clock set backwards (root only, who can rewrite the stamp itself),
and writes through a shared memory mapping made before the signature was
taken, on a cache file whose owner made it writable.

A project with a local directory replacement never takes this path: the
directory's own wgt.mod can change without wgt.mod or wgt.sum changing. The
wgt.mod parser decides what is a directory replacement (quoted or not, with
``./``, ``../``, ``/`` or a drive letter); a wgt.mod that does not parse gets
no stamp, so the full run reports its errors. ``wgtpm verify`` re-hashes
the files; the stamp does not replace it.

Stamps live in ``$WGTPM_CACHE/meta/done/<key>`` (one absolute path per
line); ``wgtpm cache clean`` removes them with everything else. This module
imports nothing heavy: it runs on every no-op ``get``, before the command
line parser is even loaded (:func:`wgtpm.cli.main`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Iterable
from pathlib import Path

from .root import MOD, SUM, nearest_root

__all__ = ["done", "key", "record", "up_to_date"]

_ANY = "-"  # in place of a sha256: the file must exist, its bytes are not re-hashed
_CHUNK = 1 << 16  # most wgt.mod and index files fit in one read


def up_to_date(start: Path, cache_root: Path) -> bool:
    """Whether ``wgtpm get`` without arguments, in ``start``, has nothing to do: the stamp
    of its project's wgt.mod and wgt.sum holds. ``False`` sends the command the full way."""
    root = nearest_root(start)
    k = key(root) if root is not None else None
    return k is not None and done(cache_root, k)


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
    """Whether stamp ``k`` exists and every file it lists is in place, with its sha256 if given.

    A metadata file whose signature no longer matches is re-hashed (and, when its bytes are
    still the verified ones, signed again in the stamp: see the module docstring).
    """
    p = _stamp(cache_root, k)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    rehashed = []
    for i, line in enumerate(lines):
        head, sep, name = line.partition("  ")
        want, _, signature = head.partition(" ")
        if not sep:
            return False
        try:  # os-level calls: this loop runs for every module on every no-op get
            if want == _ANY:
                if not os.path.isfile(name):
                    return False
                continue
            if signature and signature == _signature(os.stat(name)):
                continue  # unchanged since its bytes were verified (module docstring)
            if _read(name)[0] != want:
                return False
        except OSError:
            return False
        rehashed.append(i)
    if rehashed:
        _sign_again(p, lines, rehashed)
    return True


def record(cache_root: Path, k: str, meta: Iterable[Path], files: Iterable[str | Path]) -> None:
    """Write stamp ``k`` (best effort: without it, the next get does the full check).

    ``meta`` are the cached wgt.mod and index files the command verified
    (their sha256 and signature are recorded now), ``files`` the selected files it placed.
    """
    p = _stamp(cache_root, k)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        clock = _clock(p.parent)
        lines = [_line(str(m), *_read(str(m)), clock) for m in meta]
        # the files' lines are written as they come: a module may have 100,000 files
        _write(p, itertools.chain(lines, (f"{_ANY}  {f}" for f in files)))
    except OSError:
        pass


def _sign_again(p: Path, lines: list[str], rehashed: list[int]) -> None:
    """Rewrite stamp ``p`` with fresh signatures for the lines just re-hashed (best effort)."""
    try:
        clock = _clock(p.parent)
        new = list(lines)
        for i in rehashed:
            head, _, name = lines[i].partition("  ")
            want = head.partition(" ")[0]
            digest, st = _read(name)  # again: the signature must come from the bytes hashed
            if digest != want:
                return  # changed meanwhile: the next get sees it
            new[i] = _line(name, digest, st, clock)
        if new != lines:
            _write(p, new)
    except OSError:
        pass


def _signature(st: os.stat_result) -> str:
    """``DEV:INO:SIZE:MTIME_NS:CTIME_NS``: what names one version of a file's bytes."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _read(name: str) -> tuple[str, os.stat_result | None]:
    """The sha256 of file ``name``, and its stat if the file did not change while it was read."""
    fd = os.open(name, os.O_RDONLY)
    try:
        before = os.fstat(fd)
        h = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
        same = _signature(os.fstat(fd)) == _signature(before)
    finally:
        os.close(fd)
    return h.hexdigest(), before if same else None


def _clock(d: Path) -> tuple[int, int]:
    """The file system's clock in directory ``d``, now: (device, ctime in ns) of a new file."""
    import tempfile

    with tempfile.TemporaryFile(dir=d) as f:
        st = os.fstat(f.fileno())
    return st.st_dev, st.st_ctime_ns


def _line(name: str, digest: str, st: os.stat_result | None, clock: tuple[int, int]) -> str:
    """``SHA256 SIGNATURE  PATH`` when ``st`` vouches for the bytes hashed, else ``SHA256  PATH``.

    ``st`` vouches only when it was changed before ``clock`` was read, on the same device.
    """
    if st is None or st.st_dev != clock[0] or st.st_ctime_ns >= clock[1]:
        return f"{digest}  {name}"
    return f"{digest} {_signature(st)}  {name}"


def _write(p: Path, lines: Iterable[str]) -> None:
    from .._fs import write_atomic

    write_atomic(p, (f"{line}\n".encode() for line in lines))
