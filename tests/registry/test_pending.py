"""Pending versions in the metadata store (``pending_versions``, migration 0004): logged when
recorded, committed later with the same h1s, on SQLite and PostgreSQL.

The Hub API (:mod:`registry.ondemand`) records a proxied version as pending
when it first answers its index; ``test_ondemand.py`` and ``test_hf_mirror.py``
drive that through real servers. These look at the store's side: one record
in the log per version, whoever records or commits it, and in what order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from registry import ConflictError, SqlMetadataStore, open_metadata_store
from registry.metadata import FileRecord, NewVersion, PendingRecord
from registry.sumlog import SqlSumLog, record_text

M = "hf.co/acme/tiny"


@pytest.fixture
def store(meta_url: str) -> Iterator[SqlMetadataStore]:
    s = open_metadata_store(meta_url)
    yield s
    s.close()


def pending(h1: str = "h1:AAA=", version: str = "v0.1.0") -> PendingRecord:
    return PendingRecord(
        module=M,
        version=version,
        h1=h1,
        mod_h1="h1:MOD=",
        index_sha256="a" * 64,
        mod_sha256="b" * 64,
        time="2026-11-29T12:00:00Z",
        commit="c" * 40,
    )


def commit(store: SqlMetadataStore, h1: str = "h1:AAA=", version: str = "v0.1.0") -> None:
    store.commit_version(
        NewVersion(
            module=M,
            version=version,
            h1=h1,
            mod_h1="h1:MOD=",
            index_sha256="a" * 64,
            files=[FileRecord("config.json", 2, "d" * 64)],
            time="2026-11-29T12:00:00Z",
            commit="c" * 40,
            proxied=True,
        )
    )


def logged(store: SqlMetadataStore, version: str = "v0.1.0") -> list[bytes]:
    log = SqlSumLog(store.engine)
    rid = log.lookup(M, version)
    return [] if rid is None else log.records(rid, 1)


def test_a_pending_version_is_logged_when_recorded_and_once_when_committed(
    store: SqlMetadataStore,
) -> None:
    rec = pending()
    assert store.add_pending(rec) == rec
    assert store.get_pending(M, "v0.1.0") == rec
    assert store.get_version(M, "v0.1.0") is None  # not committed: readers do not see it
    assert logged(store) == [record_text(M, "v0.1.0", "h1:AAA=", "h1:MOD=")]
    size = SqlSumLog(store.engine).tree().n

    # another replica indexing it later gets the first record, whatever it indexed
    assert store.add_pending(pending(h1="h1:BBB=")) == rec
    # a commit with other h1s than the logged ones is refused; with them, it drops the row
    with pytest.raises(ConflictError, match="h1:BBB="):
        commit(store, h1="h1:BBB=")
    assert store.get_pending(M, "v0.1.0") == rec
    commit(store)
    assert store.get_version(M, "v0.1.0") is not None
    assert store.get_pending(M, "v0.1.0") is None
    assert SqlSumLog(store.engine).tree().n == size  # logged once
    assert store.add_pending(pending()) is None  # committed already


def test_a_version_committed_without_pending_is_logged_at_commit(store: SqlMetadataStore) -> None:
    commit(store, version="v0.2.0")
    assert logged(store, "v0.2.0") == [record_text(M, "v0.2.0", "h1:AAA=", "h1:MOD=")]


def test_replicas_recording_one_version_at_once_agree(meta_url: str) -> None:
    open_metadata_store(meta_url).close()  # migrated once, before the race
    stores = [open_metadata_store(meta_url, migrate=False) for _ in range(4)]
    got: list[PendingRecord | None] = []
    errors: list[BaseException] = []

    def record(i: int) -> None:
        try:
            got.append(stores[i].add_pending(pending(h1=f"h1:{i}=")))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        assert len(got) == 4 and len({r.h1 for r in got if r is not None}) == 1, got
        assert got[0] == stores[0].get_pending(M, "v0.1.0")
        assert len(logged(stores[0])) == 1 and SqlSumLog(stores[0].engine).tree().n == 1
    finally:
        for s in stores:
            s.close()
