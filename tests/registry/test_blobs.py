"""The blob store conformance test: every store passes it (a folder, S3 on moto)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from registry import (
    BadRequestError,
    BlobNotFoundError,
    BlobStore,
    HashMismatchError,
    TooLargeError,
    open_blob_store,
)
from registry.blobs import CHUNK

DATA = bytes(range(256)) * 40  # 10 KiB
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def store(blob_url: str, tmp_path: Path) -> BlobStore:
    s = open_blob_store(blob_url, spool=tmp_path / "spool")
    yield s  # type: ignore[misc]
    s.close()


def test_missing_blob(store: BlobStore) -> None:
    store.check()
    assert store.size(SHA) is None
    assert not store.has(SHA)
    with pytest.raises(BlobNotFoundError):
        store.get(SHA)


def test_put_then_get(store: BlobStore) -> None:
    assert store.put(SHA, [DATA[:100], DATA[100:]]) == len(DATA)
    assert store.has(SHA) and store.size(SHA) == len(DATA)
    assert b"".join(store.get(SHA)) == DATA
    assert store.read(SHA, len(DATA)) == DATA
    with pytest.raises(TooLargeError):
        store.read(SHA, len(DATA) - 1)


@pytest.mark.parametrize(
    ("offset", "length"),
    [(0, None), (0, 1), (1, 10), (5000, None), (len(DATA) - 1, None), (len(DATA) - 1, 1), (100, 0)],
)
def test_byte_ranges(store: BlobStore, offset: int, length: int | None) -> None:
    store.put(SHA, [DATA])
    want = DATA[offset:] if length is None else DATA[offset : offset + length]
    assert b"".join(store.get(SHA, offset, length)) == want


def test_range_at_the_end_is_empty(store: BlobStore) -> None:
    store.put(SHA, [DATA])
    assert b"".join(store.get(SHA, len(DATA))) == b""


def test_wrong_bytes_are_never_visible(store: BlobStore) -> None:
    with pytest.raises(HashMismatchError) as err:
        store.put(SHA, [DATA + b"x"])
    assert err.value.want == SHA and err.value.got == hashlib.sha256(DATA + b"x").hexdigest()
    assert not store.has(SHA)


def test_size_limit_while_streaming(store: BlobStore) -> None:
    with pytest.raises(TooLargeError):
        store.put(SHA, [DATA[:6000], DATA[6000:]], max_size=len(DATA) - 1)
    assert not store.has(SHA)
    assert store.put(SHA, [DATA], max_size=len(DATA)) == len(DATA)


def test_aborted_writer_leaves_nothing(store: BlobStore, tmp_path: Path) -> None:
    with store.writer(SHA) as w:
        w.write(DATA)
    assert not store.has(SHA)
    spools = [p for p in (tmp_path / "blobs" / "tmp", tmp_path / "spool") if p.exists()]
    assert all(not any(p.iterdir()) for p in spools)


def test_same_blob_twice_and_empty_blob(store: BlobStore) -> None:
    store.put(SHA, [DATA])
    store.put(SHA, [DATA])
    empty = hashlib.sha256(b"").hexdigest()
    assert store.put(empty, []) == 0
    assert store.size(empty) == 0 and b"".join(store.get(empty)) == b""


def test_large_blob_streams_in_chunks(store: BlobStore) -> None:
    big = DATA * (CHUNK // len(DATA) * 2 + 3)
    sha = hashlib.sha256(big).hexdigest()
    store.put(sha, (big[i : i + 65536] for i in range(0, len(big), 65536)))
    chunks = list(store.get(sha))
    assert b"".join(chunks) == big and len(chunks) >= 2
    assert b"".join(store.get(sha, CHUNK + 7, 3 * 65536)) == big[CHUNK + 7 : CHUNK + 7 + 3 * 65536]


@pytest.mark.parametrize("bad", ["", "abc", SHA.upper(), SHA[:-1] + "g", "../" + SHA[3:]])
def test_names_must_be_sha256(store: BlobStore, bad: str) -> None:
    with pytest.raises(BadRequestError):
        store.writer(bad)


def test_concurrent_writers_of_one_blob(store: BlobStore) -> None:
    errors: list[BaseException] = []

    def put() -> None:
        try:
            store.put(SHA, [DATA[i : i + 1000] for i in range(0, len(DATA), 1000)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=put) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert b"".join(store.get(SHA)) == DATA
