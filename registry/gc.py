"""Garbage collection: what crashes, outages and abandoned uploads leave behind.

``wgtpm registry gc`` (:func:`collect`) removes, on a folder or an S3 store alike:

- **spool files** of dead uploads: the bytes of an upload whose process was
  killed, not written for :data:`~registry.blobs.SPOOL_STALE_SECONDS`
  (:func:`registry.blobs.sweep_spool`; a replica also sweeps its spool when it
  opens its store, at start);
- **blobs** that nothing references and that were written more than the grace
  period (:data:`GC_GRACE_SECONDS`, ``--grace``) ago;
- **expired uploads**: upload sessions started more than
  :data:`~registry.limits.UPLOAD_TTL_SECONDS` ago, which no replica accepts
  any more (their rows, and their ``upload_blobs`` rows).

Mark and sweep, the same on every store::

    mark    referenced = every sha256 a row names (MetadataStore.blob_references:
            files of versions, indexes of versions, uploads and pending versions,
            pending wgt.mods, attestations, blobs uploads sent)
            + every file listed in the index of an upload or a pending version
    sweep   for each stored blob (BlobStore.list_blobs) not referenced and
            last written before now - grace:
                check again that no row references it (and the open indexes'
                files, read again), that it is still there and still old;
                then delete it
    expire  forget the uploads started before now - UPLOAD_TTL_SECONDS

Why this is safe while replicas serve. A publish makes a blob referenced in
one of two ways: it writes the blob (a file body, an index, an attestation:
``put`` always writes a new file or object, so its mtime or ``LastModified``
is fresh) and then adds the row that names it; or it names a blob that a row
references already (an upload's own ``upload_blobs``, a committed version's
file), which stays referenced while the publish runs: a committed version is
never deleted, and an upload's rows stay until its commit has recorded the
version. So at any moment a blob that a publish in progress relies on is
either referenced by a row (marked, or seen by the check right before the
delete) or was written less than the grace period ago (not a candidate), as
long as no step of a publish takes longer than the grace period. The default
grace, a day, is far beyond any request (a 50 GiB body at 1 MB/s takes 14 h).
Even with a grace too short, a commit records no version whose files or index are gone:
it checks that every file's blob and the index's are stored while its upload's
rows reference them (so the check right before a delete sees them), and a
publish whose blob went early fails and starts again
(``tests/registry/test_gc.py`` runs gc at grace 0 against concurrent publishes).

Expired uploads are forgotten *after* the sweep, so the blobs of an upload
that expires during one run survive until the next: a commit that opened the
upload just before it expired has a whole gc interval to finish.

The caching proxy follows the same rule. A fill relies only on stored blobs that a
row references (a committed version's, never deleted; or those of the pending
version it fills); one that nothing references (an old orphan of a fill that
failed or an upload that expired, which this gc may remove at any moment) is
fetched and written again, so it is fresh until the commit references it
(:meth:`registry.proxy.CachingProxy.orphans`); and right before it records the
version, the fill checks that every file is still stored, as a publish's
commit does: a blob gone meanwhile fails that fill (502), and the next
request fills the version whole (``tests/registry/test_gc_proxy.py``). What
is left is the moment between this gc's last check of a blob and its delete:
a blob written again by a fill or an upload in exactly that moment, and
recorded before the delete, is lost; the check before each delete keeps that
moment to one ``stat`` (one ``HEAD`` on S3).

S3 multipart uploads left incomplete by a killed replica
are not listed as objects; expire them with a bucket lifecycle rule
(``AbortIncompleteMultipartUpload``).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from wgtpm._fs import is_hex64

from ._errors import RegistryError
from .blobs import BlobInfo, BlobStore, sweep_spool
from .limits import MAX_INDEX_SIZE, UPLOAD_TTL_SECONDS
from .metadata import MetadataStore

__all__ = ["GC_GRACE_SECONDS", "GcOptions", "GcReport", "Tally", "collect"]

log = logging.getLogger("registry.gc")

# An unreferenced blob younger than this may belong to a publish in progress (written, its
# row not yet added): only older ones are removed. It must exceed the longest publish step.
GC_GRACE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class GcOptions:
    """How :func:`collect` runs: ``grace`` seconds, ``dry_run`` (remove nothing, report what
    would go), ``now`` (seconds since the epoch; the clock, which tests move forward)."""

    grace: float = GC_GRACE_SECONDS
    dry_run: bool = False
    now: float | None = None


@dataclass
class Tally:
    """How many things of one kind, and their bytes."""

    count: int = 0
    bytes: int = 0
    names: list[str] = field(default_factory=list)

    def add(self, name: str, size: int) -> None:
        self.count += 1
        self.bytes += size
        self.names.append(name)


@dataclass
class GcReport:
    """What one run removed (or, in a dry run, would remove), and what it kept."""

    dry_run: bool
    spool: Tally = field(default_factory=Tally)
    blobs: Tally = field(default_factory=Tally)
    young: Tally = field(default_factory=Tally)  # unreferenced, within the grace: kept
    uploads: int = 0

    def lines(self) -> list[str]:
        """One line per kind, for ``wgtpm registry gc``::

        spool files: 1 removed, 57000000 bytes
        blobs: 70 removed, 123456 bytes; 2 unreferenced within the grace period kept, 10 bytes
        expired uploads: 27 removed
        """
        verb = "to remove (dry run)" if self.dry_run else "removed"
        return [
            f"spool files: {self.spool.count} {verb}, {self.spool.bytes} bytes",
            f"blobs: {self.blobs.count} {verb}, {self.blobs.bytes} bytes; "
            f"{self.young.count} unreferenced within the grace period kept, "
            f"{self.young.bytes} bytes",
            f"expired uploads: {self.uploads} {verb}",
        ]


def _stamp(t: float) -> str:
    """``t`` as the tables store times (``2026-12-01T01:33:53Z``)."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Marks:
    """The references of the database, with the files listed in open indexes (each index
    blob read and parsed once per run)."""

    def __init__(self, meta: MetadataStore, blobs: BlobStore) -> None:
        self.meta = meta
        self.blobs = blobs
        self._listed: dict[str, frozenset[str]] = {}

    def _index_files(self, sha256: str) -> frozenset[str]:
        """The sha256s of the files an index blob lists (none when it is unreadable)."""
        got = self._listed.get(sha256)
        if got is not None:
            return got
        try:
            doc = json.loads(self.blobs.read(sha256, MAX_INDEX_SIZE))
            entries = doc.get("files") if isinstance(doc, dict) else None
            got = frozenset(
                e["sha256"]
                for e in entries or ()
                if isinstance(e, dict)
                and isinstance(e.get("sha256"), str)
                and is_hex64(e["sha256"])
            )
        except (RegistryError, ValueError) as exc:
            log.warning("gc: index blob %s of an open upload is unreadable: %s", sha256, exc)
            got = frozenset()
        self._listed[sha256] = got
        return got

    def open_files(self) -> set[str]:
        """The files listed by the indexes of uploads and pending versions, now."""
        out: set[str] = set()
        for sha in self.meta.open_indexes():
            out |= self._index_files(sha)
        return out

    def all(self) -> set[str]:
        """Every referenced sha256 (the mark phase)."""
        return self.meta.blob_references() | self.open_files()

    def still(self, sha256: str) -> bool:
        """Whether ``sha256`` is referenced now (the check right before a delete)."""
        return bool(self.meta.blob_references([sha256])) or sha256 in self.open_files()


def collect(meta: MetadataStore, blobs: BlobStore, opts: GcOptions | None = None) -> GcReport:
    """One garbage collection run (see the module's docstring); the :class:`GcReport`."""
    opts = opts or GcOptions()
    now = time.time() if opts.now is None else opts.now
    report = GcReport(opts.dry_run)
    spool = blobs.spool_dir()
    if spool is not None:
        for f in sweep_spool(spool, now, opts.dry_run):
            report.spool.add(f.sha256, f.size)
    marks = _Marks(meta, blobs)
    referenced = marks.all()
    cutoff = now - opts.grace
    candidates: list[BlobInfo] = []
    for b in blobs.list_blobs():
        if b.sha256 in referenced:
            continue
        if b.mtime >= cutoff:
            report.young.add(b.sha256, b.size)
        else:
            candidates.append(b)
    for b in candidates:
        if marks.still(b.sha256):
            continue
        now_there = blobs.stat(b.sha256)
        if now_there is None:
            continue
        if now_there.mtime >= cutoff:  # written again since it was listed: a new upload's
            report.young.add(b.sha256, now_there.size)
            continue
        if not opts.dry_run:
            blobs.delete(b.sha256)
            log.info("gc: removed blob %s (%d bytes)", b.sha256, b.size)
        report.blobs.add(b.sha256, b.size)
    expired = _stamp(now - UPLOAD_TTL_SECONDS)
    if opts.dry_run:
        report.uploads = meta.count_uploads_before(expired)
    else:
        report.uploads = meta.delete_uploads_before(expired)
    return report
