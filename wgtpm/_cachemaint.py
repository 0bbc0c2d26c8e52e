"""Looking after the module cache: ``wgtpm cache verify [-fix]``, ``clean`` and ``gc``.

Each takes a :class:`~wgtpm.cache.Cache` and works on its layout (see
:mod:`wgtpm.cache`). ``repair``, ``clean`` and ``gc`` hold the cache-wide lock
exclusively, so they wait for running wgtpm processes and never pull a file
from under one; ``verify`` only reads.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _json
from ._fs import sha256_file

if TYPE_CHECKING:
    from .cache import Cache

__all__ = ["CacheProblem", "clean", "gc", "repair", "verify"]


class CacheProblem(NamedTuple):
    """One thing ``cache verify`` found wrong."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def verify(cache: Cache) -> list[CacheProblem]:
    """Re-hash every blob and check every tree file against its index."""
    problems: list[CacheProblem] = []
    blobs = cache.root / "blobs" / "sha256"
    if blobs.is_dir():
        for p in sorted(blobs.glob("*/*")):
            if sha256_file(p) != p.name:
                problems.append(CacheProblem(p, "content does not match its sha256 name"))
    for idx_path, doc in _indexes(cache):
        tree = _tree_for_index(idx_path)
        if tree is None or not tree.is_dir():
            continue
        for e in doc.get("files", []):
            f = tree / e["path"]
            if f.is_file() and sha256_file(f) != e["sha256"]:
                problems.append(
                    CacheProblem(f, f"content does not match the index (want sha256 {e['sha256']})")
                )
    return problems


def repair(cache: Cache, problems: list[CacheProblem]) -> list[Path]:
    """Remove the corrupted files of ``problems`` and every link to them; returns what went.

    A tree file is a hard link to its blob, so a corrupted blob is removed
    with every tree file that shares its inode (and a corrupted tree file
    with its blob). Nothing else is touched: the next ``wgtpm get`` of a
    project that uses them downloads and verifies just those files again
    (it re-fetches a tree file that is missing). Runs under the cache-wide
    lock, exclusively, as ``gc`` does.
    """
    with cache.exclusive():
        cache.forget_dirs()
        bad: set[tuple[int, int]] = set()
        for pr in problems:
            with contextlib.suppress(FileNotFoundError):
                st = pr.path.stat()
                bad.add((st.st_dev, st.st_ino))
        removed: list[Path] = []
        for top in ("blobs", "mod"):
            d = cache.root / top
            for p in sorted(d.rglob("*")) if d.is_dir() else []:
                try:
                    st = p.lstat()
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in bad:
                    _unlink(p)
                    removed.append(p)
        return removed


def _indexes(cache: Cache) -> Iterator[tuple[Path, dict[str, Any]]]:
    dl = cache.root / "download"
    if not dl.is_dir():
        return
    for p in dl.rglob("*.index.json"):
        try:
            doc = _json.loads(p.read_bytes())
        except ValueError:
            continue
        if isinstance(doc, dict):
            yield p, doc


def _tree_for_index(idx_path: Path) -> Path | None:
    link = idx_path.with_name(idx_path.name[: -len(".index.json")])
    return link if link.exists() else None


def clean(cache: Cache) -> None:
    """Remove everything (waits for other wgtpm processes to finish first)."""
    with cache.exclusive():
        cache.forget_dirs()
        for name in ("blobs", "mod", "download", "meta", "tmp", "tensors"):
            _rmtree(cache.root / name)


def gc(cache: Cache) -> tuple[int, int]:
    """Remove blobs no module tree uses and stale partial files; returns (files, bytes) freed."""
    with cache.exclusive():
        cache.forget_dirs()
        used: set[str] = set()
        for _, doc in _indexes(cache):
            used.update(e.get("sha256", "") for e in doc.get("files", []))
        freed_n = freed_b = 0
        blobs = cache.root / "blobs" / "sha256"
        for p in list(blobs.glob("*/*")) if blobs.is_dir() else []:
            if p.name not in used and p.stat().st_nlink <= 1:
                freed_b += p.stat().st_size
                freed_n += 1
                _unlink(p)
        tmp = cache.root / "tmp"
        for p in list(tmp.iterdir()) if tmp.is_dir() else []:
            if p.suffix != ".lock":
                freed_b += p.stat().st_size
                freed_n += 1
                _unlink(p)
        return freed_n, freed_b


def _unlink(p: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.chmod(p.parent, os.stat(p.parent).st_mode | stat.S_IWUSR)
        p.unlink()


def _rmtree(p: Path) -> None:
    if not p.exists():
        return
    import shutil

    def onerror(func: Any, path: str, exc: Any) -> None:
        os.chmod(os.path.dirname(path), 0o755)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o755)
        func(path)

    shutil.rmtree(p, onerror=onerror)
