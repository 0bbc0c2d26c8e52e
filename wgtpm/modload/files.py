"""The main module's two files: finding, loading and atomically saving wgt.mod and wgt.sum.

A project is the nearest directory at or above the working directory that
holds a ``wgt.mod`` (:mod:`wgtpm.modload.root`). ``wgt.sum`` beside it is
optional: a missing one is empty.

:meth:`ProjectFiles.save` writes only what changed since loading, wgt.sum
first and then wgt.mod, each through a unique temporary file that is fsynced
and renamed into place (:func:`wgtpm._fs.write_atomic`). An interrupted
command leaves each file either as it was or fully new, and a new wgt.mod
never names a version whose hashes are missing from wgt.sum. Commands that
may write hold :func:`locked` from loading to saving.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import ReadonlyError, UsageError
from .._fs import FileLock, write_atomic
from ..module import ModuleVersion
from .root import MOD, SUM, find_root, nearest_root

if TYPE_CHECKING:
    from ..modfile import ModFile
    from .sums import SumLedger

__all__ = ["MOD", "SUM", "ProjectFiles", "find_root", "locked", "nearest_root"]


@contextmanager
def locked(root: Path, cache_root: Path) -> Iterator[None]:
    """Hold the project's cross-process lock (exclusive) for a whole read-modify-write.

    Two commands that change one project (two ``wgtpm get`` at once) then run
    one after the other, and the second loads what the first saved instead of
    overwriting it. The lock file is ``CACHE/locks/project-HASH.lock``, named
    by the sha256 of the project's resolved path, so that the project
    directory gains no file of its own (``cache clean`` keeps ``locks/``).
    """
    name = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:32]
    with FileLock(cache_root / "locks" / f"project-{name}.lock"):
        yield


class ProjectFiles:
    """The parsed wgt.mod and the wgt.sum ledger of a project, and what they were on disk."""

    def __init__(self, root: Path, modfile: ModFile, sums: SumLedger) -> None:
        if modfile.module is None:
            raise UsageError(f"{root / MOD}: no module statement; add 'module PATH' at the top")
        self.root = root
        self.modfile = modfile
        self.sums = sums
        self._orig_mod = modfile.format()
        self._orig_sum = sums.format()

    @classmethod
    def load(
        cls, root: Path, readonly: bool, fix: str = "run 'wgtpm get' to add it"
    ) -> ProjectFiles:
        """Parse ``root/wgt.mod`` and ``root/wgt.sum``; every malformed line is reported.

        Under ``readonly`` a missing wgt.sum line is an error that ends in ``fix``.
        """
        from .. import modfile as _modfile
        from .. import sumfile as _sumfile
        from .sums import SumLedger

        mf = _modfile.parse((root / MOD).read_bytes(), str(root / MOD))
        try:
            sums = _sumfile.parse((root / SUM).read_bytes(), str(root / SUM))
        except FileNotFoundError:
            sums = _sumfile.SumFile()
        return cls(root, mf, SumLedger(sums, readonly, fix))

    @property
    def path(self) -> str:
        """The main module's path."""
        assert self.modfile.module is not None
        return self.modfile.module.path

    @property
    def main(self) -> ModuleVersion:
        """The main module as MVS names it: its path with an empty version."""
        return ModuleVersion(self.path, "")

    def changes(self) -> tuple[bool, bool]:
        """Whether (wgt.mod, wgt.sum) differ from what was loaded or last saved."""
        return self.modfile.format() != self._orig_mod, self.sums.format() != self._orig_sum

    def save(self, mod_mode: str = "") -> None:
        """Write what changed: wgt.sum first, then wgt.mod; refuse under -mod=readonly/vendor."""
        mod_changed, sum_changed = self.changes()
        if not (mod_changed or sum_changed):
            return
        if mod_mode in ("readonly", "vendor"):
            what = " and ".join(n for n, c in ((MOD, mod_changed), (SUM, sum_changed)) if c)
            raise ReadonlyError(
                f"{what} need updates, but -mod={mod_mode} is in force; run 'wgtpm tidy' or "
                "'wgtpm get' without it"
            )
        if sum_changed:
            data = self.sums.format()
            write_atomic(self.root / SUM, data)
            self._orig_sum = data
        if mod_changed:
            data = self.modfile.format()
            write_atomic(self.root / MOD, data)
            self._orig_mod = data
