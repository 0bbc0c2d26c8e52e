"""Tensor tables the registry computes and logs for versions whose release locks none.

``GET $module/@v/$version.tensors.json`` answers with the tensor tables
(:mod:`wgtpm.tensors`, the ``wgt.tensors.json`` format, canonical bytes) of
every ``.safetensors`` and ``.gguf`` file of a committed public version whose
index does not list a ``wgt.tensors.json`` of its own: a Hugging Face
repository or a GitHub release the caching proxy serves, or a release an
older wgtpm published. On the first request the version is fetched (as any
request for it does), then each weights file is read from the blob store and
its table computed, the file's sha256 checked against the index entry in the
same pass (:func:`wgtpm.tensors.compute_table`): tables come from the verified
file, never from an upstream. One transaction then names the tables' blob in
``tensor_tables`` and appends their record to the checksum log
(:meth:`~registry.metadata.SqlMetadataStore.add_tensor_tables`)::

    hf.co/acme/tiny-qwen3 v0.1.0/wgt.tensors.json h1:<Hash1 of the one file wgt.tensors.json>

a second record of the version, beside the one of its wgt.sum lines (logged
when it was first served), found at ``/sumdb/$NAME/lookup/M@V/wgt.tensors.json``.
The version's h1 does not change: the tables are no file of it. A client
checks the tables' bytes against that record before it reads tensors by
range with them, and computes tables itself where it cannot (no checksum
database, a private module).

The computation is deterministic, so two replicas that compute at once
write the same bytes and the log keeps the first record. 404: a private
version (never logged), a release with its own ``wgt.tensors.json`` (a file
of the release, locked by its h1), one without weights files, and one whose
weights file is not a valid ``.safetensors`` or ``.gguf`` file (the message
says which).
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from wgtpm import dirhash
from wgtpm.index import IndexEntry
from wgtpm.tensors import TABLES_FILE, TensorError, TensorTables, compute_table, dump_tables
from wgtpm.tensors import format_of as weights_format

from ._errors import BlobNotFoundError, NotFoundError, StoreError
from ._keylock import KeyedLocks
from .blobs import FolderBlobStore
from .metadata import TokenRecord, VersionRecord
from .service import Registry
from .sumlog import tables_record_text

__all__ = ["REFUSED_TTL", "tables_of"]

#: Seconds a version whose weights file is not a valid .safetensors or .gguf file is
#: answered 404 from memory: computing its tables again would read all its files again.
REFUSED_TTL = 600.0
_computing: KeyedLocks[tuple[str, str]] = KeyedLocks()  # one computation per version
_refused: dict[tuple[str, str], tuple[float, str]] = {}
_refused_lock = threading.Lock()


def tables_of(
    reg: Registry, module: str, version: str, token: TokenRecord | None = None
) -> tuple[VersionRecord, str, int]:
    """The version, and the sha256 and size of the blob of its logged tensor tables
    (computed and logged on first use; see the module docstring)."""
    v = reg.version(module, version, token)  # a proxied version is fetched first
    if v.private:
        raise NotFoundError(
            f"{module}@{version}: a private version's tensor tables are not logged; "
            "the client computes them from the verified files"
        )
    key = (v.module, v.version)
    with _refused_lock:
        refused = _refused.get(key)
    if refused is not None and time.monotonic() - refused[0] < REFUSED_TTL:
        raise NotFoundError(refused[1])
    with _computing.hold(key):  # one computation per version in this process
        sha = reg.meta.get_tensor_tables(v.module, v.version) or _compute(reg, v)
    size = reg.blobs.size(sha)
    if size is None:
        raise StoreError(f"{module}@{version}: the tensor tables' blob {sha} is missing")
    return v, sha, size


def _compute(reg: Registry, v: VersionRecord) -> str:
    label = f"{v.module}@{v.version}"
    raw = reg.blobs.read(v.index_sha256, reg.limits.max_index_size)
    idx = reg.check_index(raw, v.module, v.version, need_mod=False)
    if idx.entry(TABLES_FILE) is not None:
        raise NotFoundError(
            f"{label}: the release has its own {TABLES_FILE} (a file of the release, "
            "locked by its h1)"
        )
    weights = [e for e in idx.files if weights_format(e.path) is not None]
    if not weights:
        raise NotFoundError(f"{label}: the release has no .safetensors or .gguf file")
    tables = {}
    for e in weights:
        with _as_file(reg, e) as path:
            try:
                t = compute_table(path, e.path, where=f"{label}: {e.path}")
            except TensorError as exc:
                msg = f"no tensor tables: {exc}"
                with _refused_lock:
                    if len(_refused) > 10_000:
                        _refused.clear()
                    _refused[(v.module, v.version)] = (time.monotonic(), msg)
                raise NotFoundError(msg) from exc
        if (t.sha256, t.size) != (e.sha256, e.size):
            raise StoreError(
                f"{label}: the stored blob {e.sha256} of {e.path} does not hold its bytes "
                f"(sha256 {t.sha256}); the blob store is damaged"
            )
        tables[e.path] = t
    data = dump_tables(TensorTables(tables))
    sha = hashlib.sha256(data).hexdigest()
    # written even when stored: a fresh write keeps an old unreferenced copy from being
    # collected before the tensor_tables row names it (registry.gc's grace period)
    reg.blobs.put(sha, [data], max_size=len(data))
    h1 = dirhash.hash1_bytes({TABLES_FILE: data})
    record = tables_record_text(v.module, v.version, h1)
    return reg.meta.add_tensor_tables(v.module, v.version, sha, record)


@contextlib.contextmanager
def _as_file(reg: Registry, e: IndexEntry) -> Iterator[Path]:
    """The stored blob of ``e`` as a local file: the folder store's own, else a copy."""
    if isinstance(reg.blobs, FolderBlobStore):
        path = reg.blobs.path(e.sha256)
        if not path.is_file():
            raise StoreError(f"blob {e.sha256} of {e.path} is missing from {reg.blobs.url}")
        yield path
        return
    tmp = Path(tempfile.mkdtemp(prefix="tables-", dir=reg.blobs.spool_dir()))
    try:
        path = tmp / "blob"
        try:
            with open(path, "wb") as f:
                for chunk in reg.blobs.get(e.sha256, 0, e.size):
                    f.write(chunk)
        except BlobNotFoundError as exc:
            raise StoreError(f"blob {e.sha256} of {e.path} is missing") from exc
        yield path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
