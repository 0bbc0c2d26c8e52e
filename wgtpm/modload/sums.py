"""The sum ledger: wgt.sum as the fetcher sees it.

:class:`SumLedger` is the :class:`~wgtpm.modfetch.SumChecker` of a project.
For every hash the fetcher computes (a release's index h1, or a wgt.mod's h1
under ``VERSION/wgt.mod``) it

- accepts it when wgt.sum has that line;
- raises :class:`~wgtpm.ChecksumMismatchError` (a SECURITY ERROR) when
  wgt.sum has another hash for the same module version, or more than one
  (two different lines for one version: one of them is not honest);
- records it when wgt.sum has nothing, or raises
  :class:`~wgtpm.ReadonlyError` when the command may not change wgt.sum
  (``-mod=readonly``, ``-mod=vendor``, and every command but ``get`` and
  ``tidy`` by default): ``missing wgt.sum entry for M@V[/wgt.mod]; FIX``;
  before recording, a verifier (:meth:`SumLedger.verify_new_lines`, the
  checksum database's :class:`~wgtpm.sumdb.remote.SumdbCheck`) must accept
  the line, or its error stops the command and nothing is recorded.

It also remembers which (module, version) keys the command used, so that
``tidy`` can prune wgt.sum to exactly those lines (:meth:`SumLedger.prune`)
and ``get`` can drop the lines it added for versions the final graph does not
use (:meth:`SumLedger.drop_unused_new`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .._errors import ChecksumMismatchError, ReadonlyError
from ..sumfile import MOD_SUFFIX, SumFile

__all__ = ["SumLedger", "Verifier"]

#: ``verify(path, version, h1)``: accept a line about to be recorded, or raise.
Verifier = Callable[[str, str, str], None]


class SumLedger:
    """Check, record (or refuse) and track the lines of one wgt.sum."""

    def __init__(
        self, file: SumFile, readonly: bool, fix: str = "run 'wgtpm get' to add it"
    ) -> None:
        self._file = file
        self._loaded = {(p, v) for p, v, _ in file.lines}
        self._readonly = readonly
        self._fix = fix  # what the error about a missing line tells the user to run
        self._used: set[tuple[str, str]] = set()
        self._lock = threading.Lock()  # the fetcher checks from several threads
        self._verify: Verifier | None = None

    def verify_new_lines(self, verify: Verifier | None) -> None:
        """Have ``verify`` vouch for every line before it is recorded (``None``: no one)."""
        self._verify = verify

    def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
        """Accept ``h1`` for ``path version`` (``version`` may end in /wgt.mod) or raise.

        ``record=False`` checks against known lines only, and neither adds nor
        marks a line as used (a wgt.mod read only to learn its retractions).
        """
        with self._lock:
            if record:
                self._used.add((path, version))
            have = self._file.hashes(path, version)
            err = _mismatch(path, version, h1, have)
            if err is not None:
                raise err
            if have or not record:
                return
            if self._readonly:
                raise ReadonlyError(f"missing wgt.sum entry for {path}@{version}; {self._fix}")
            verify = self._verify
            if verify is None:
                self._file.add(path, version, h1)
                return
        verify(path, version, h1)  # over the network: other threads' checks go on meanwhile
        with self._lock:
            err = _mismatch(path, version, h1, self._file.hashes(path, version))
            if err is not None:
                raise err
            if not self._file.hashes(path, version):
                self._file.add(path, version, h1)

    def mismatch(self, path: str, version: str, h1: str) -> ChecksumMismatchError | None:
        """The SECURITY ERROR that :meth:`check` would raise for ``h1``, or ``None``
        (``wgtpm verify`` collects these instead of stopping at the first)."""
        return _mismatch(path, version, h1, self.hashes(path, version))

    def hashes(self, path: str, version: str) -> list[str]:
        """The hashes wgt.sum records for ``path version`` (``version`` may end in /wgt.mod)."""
        with self._lock:
            return self._file.hashes(path, version)

    def forget_used(self) -> None:
        """Start tracking used lines afresh (before ``tidy`` walks the final graph)."""
        with self._lock:
            self._used.clear()

    def prune(self) -> None:
        """Keep exactly the lines whose (module, version) was used since the last forget."""
        with self._lock:
            self._file = self._file.keep(self._used)

    def drop_unused_new(self) -> None:
        """Drop the lines added by this command whose key was not used since the last forget.

        ``get`` tries versions it does not keep (a downgrade walks older
        versions' wgt.mod files); like Go, wgt.sum keeps only what it had and
        what the final graph uses.
        """
        with self._lock:
            self._file = self._file.keep(self._loaded | self._used)

    def format(self) -> bytes:
        """The wgt.sum text as it stands now."""
        with self._lock:
            return self._file.format()


def _mismatch(path: str, version: str, h1: str, have: list[str]) -> ChecksumMismatchError | None:
    """A mismatch of ``h1`` against the wgt.sum lines ``have`` of one key, or ``None``.

    Like Go, two different lines for one module version are a mismatch too,
    whichever of them the bytes match: one of them was not written by an
    honest download. The error then names every line.
    """
    if not have or have == [h1]:
        return None
    base = version.removesuffix(MOD_SUFFIX)
    what = "wgt.mod" if version.endswith(MOD_SUFFIX) else "the release (its index)"
    if len(have) == 1:
        return ChecksumMismatchError(path, base, what, have[0], h1)
    lines = "\n\twgt.sum:    ".join(f"{path} {version} {h}" for h in have)
    return ChecksumMismatchError(
        path, base, f"{what}: wgt.sum has {len(have)} different lines for it", lines, h1
    )
