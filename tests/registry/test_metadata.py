"""The metadata store conformance test: SQLite and PostgreSQL through one class."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from registry import ConflictError, SqlMetadataStore, open_metadata_store
from registry.metadata import FileRecord, NewVersion, TokenRecord, UploadRecord

M = "example.com/acme/enc"


@pytest.fixture
def store(meta_url: str) -> Iterator[SqlMetadataStore]:
    s = open_metadata_store(meta_url)
    yield s
    s.close()


def version(
    v: str = "v0.1.0", h1: str = "h1:AAA=", module: str = M, private: bool = False
) -> NewVersion:
    return NewVersion(
        module=module,
        version=v,
        h1=h1,
        mod_h1="h1:MOD=",
        index_sha256="a" * 64,
        files=[FileRecord("wgt.mod", 20, "b" * 64), FileRecord("a/w.bin", 5, "c" * 64)],
        time="2026-11-29T12:00:00Z",
        commit="0" * 40,
        private=private,
    )


def test_migrations_run_once(meta_url: str, store: SqlMetadataStore) -> None:
    store.commit_version(version())
    again = open_metadata_store(meta_url)  # a second process starting: nothing to do, nothing lost
    assert again.list_versions(M) == ["v0.1.0"]
    import sqlalchemy as sa

    from registry.migrations import HEAD

    with again.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all() == [
            HEAD
        ]
    again.close()


def test_empty(store: SqlMetadataStore) -> None:
    store.ping()
    assert store.get_module(M) is None
    assert store.list_versions(M) == []
    assert store.get_version(M, "v0.1.0") is None
    assert store.list_files(M, "v0.1.0") == []
    assert store.get_file(M, "v0.1.0", "wgt.mod") is None


def test_commit_and_read(store: SqlMetadataStore) -> None:
    out = store.commit_version(version())
    assert out.created
    v = out.version
    assert (v.module, v.version, v.h1, v.mod_h1) == (M, "v0.1.0", "h1:AAA=", "h1:MOD=")
    assert (v.time, v.commit, v.private) == ("2026-11-29T12:00:00Z", "0" * 40, False)
    assert store.get_version(M, "v0.1.0") == v
    assert store.list_files(M, "v0.1.0") == [
        FileRecord("a/w.bin", 5, "c" * 64),
        FileRecord("wgt.mod", 20, "b" * 64),
    ]
    assert store.get_file(M, "v0.1.0", "a/w.bin") == FileRecord("a/w.bin", 5, "c" * 64)
    assert store.get_file(M, "v0.1.0", "a") is None
    store.commit_version(version("v0.2.0", "h1:BBB="))
    assert sorted(store.list_versions(M)) == ["v0.1.0", "v0.2.0"]
    assert store.list_versions(M + "x") == []


def test_same_bytes_again_is_a_noop(store: SqlMetadataStore) -> None:
    first = store.commit_version(version())
    again = store.commit_version(version())
    assert not again.created and again.version == first.version


def test_other_bytes_conflict_and_name_both_h1s(store: SqlMetadataStore) -> None:
    store.commit_version(version())
    with pytest.raises(ConflictError) as err:
        store.commit_version(version(h1="h1:OTHER="))
    assert err.value.committed_h1 == "h1:AAA=" and err.value.new_h1 == "h1:OTHER="
    assert "h1:AAA=" in str(err.value) and "h1:OTHER=" in str(err.value)
    assert store.get_version(M, "v0.1.0").h1 == "h1:AAA="  # type: ignore[union-attr]


def test_private_flag_is_fixed_by_the_first_publish(store: SqlMetadataStore) -> None:
    store.commit_version(version(private=True))
    store.commit_version(version("v0.2.0", "h1:B=", private=False))
    assert store.get_module(M).private  # type: ignore[union-attr]
    assert store.get_version(M, "v0.2.0").private  # type: ignore[union-attr]


def test_concurrent_commits_of_one_version(meta_url: str) -> None:
    """Writers on separate engines (as separate processes or replicas would be) race to
    commit one version, half with other bytes: exactly one wins, the same bytes are a
    no-op, the other bytes a conflict naming the winner's h1."""
    stores = [open_metadata_store(meta_url, migrate=i == 0) for i in range(6)]
    barrier = threading.Barrier(len(stores))
    results: list[object] = [None] * len(stores)

    def commit(i: int) -> None:
        barrier.wait()
        try:
            results[i] = stores[i].commit_version(
                version(h1="h1:EVEN=" if i % 2 == 0 else "h1:ODD=")
            )
        except ConflictError as exc:
            results[i] = exc

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    created = [r for r in results if getattr(r, "created", False)]
    assert len(created) == 1
    winner = created[0].version.h1  # type: ignore[attr-defined]
    for r in results:
        if isinstance(r, ConflictError):
            assert r.committed_h1 == winner and r.new_h1 != winner
        else:
            assert r.version.h1 == winner  # type: ignore[attr-defined]
    assert sum(isinstance(r, ConflictError) for r in results) == 3


def test_concurrent_first_versions_of_a_new_module(meta_url: str) -> None:
    stores = [open_metadata_store(meta_url, migrate=i == 0) for i in range(4)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def commit(i: int) -> None:
        barrier.wait()
        try:
            stores[i].commit_version(version(f"v0.{i}.0", f"h1:{i}="))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(stores[0].list_versions(M)) == [f"v0.{i}.0" for i in range(4)]
    for s in stores:
        s.close()


def test_uploads(store: SqlMetadataStore) -> None:
    up = UploadRecord(
        "u1", M, "v0.1.0", "h1:A=", "d" * 64, True, "tok", created="2026-01-01T00:00:00Z"
    )
    store.add_upload(up)
    store.add_upload(
        UploadRecord("u2", M, "v0.2.0", "h1:B=", "e" * 64, created="2026-06-01T00:00:00Z")
    )
    assert store.get_upload("u1") == up
    assert store.get_upload("nope") is None
    assert store.delete_uploads_before("2026-03-01T00:00:00Z") == 1
    assert store.get_upload("u1") is None and store.get_upload("u2") is not None
    store.delete_upload("u2")
    assert store.get_upload("u2") is None


def test_upload_blobs(store: SqlMetadataStore) -> None:
    for uid, created in (("u1", "2026-01-01T00:00:00Z"), ("u2", "2026-06-01T00:00:00Z")):
        store.add_upload(UploadRecord(uid, M, "v0.1.0", "h1:A=", "d" * 64, created=created))
    store.add_upload_blob("u1", "c" * 64)
    store.add_upload_blob("u1", "c" * 64)  # the same body again: a no-op
    store.add_upload_blob("u2", "f" * 64)
    store.add_upload_blob("gone", "f" * 64)  # a deleted (or unknown) upload: nothing recorded
    assert store.upload_blobs("u1") == {"c" * 64} and store.upload_blobs("gone") == set()
    assert store.delete_uploads_before("2026-03-01T00:00:00Z") == 1
    assert store.upload_blobs("u1") == set() and store.upload_blobs("u2") == {"f" * 64}
    store.delete_upload("u2")
    assert store.upload_blobs("u2") == set()


def test_blobs_by_visibility(store: SqlMetadataStore) -> None:
    store.commit_version(version())  # public: lists b*64 and c*64
    priv = version(module="example.com/team/priv", private=True)
    store.commit_version(
        NewVersion(**{**priv.__dict__, "files": [FileRecord("w.bin", 5, "e" * 64)]})
    )
    store.commit_version(
        NewVersion(
            **{
                **version(module="example.com/team/p2", private=True).__dict__,
                "files": [FileRecord("w.bin", 5, "e" * 64), FileRecord("x", 1, "c" * 64)],
            }
        )
    )
    shas = ["b" * 64, "c" * 64, "e" * 64, "a" * 64, "9" * 64]
    assert store.public_blobs(shas) == {"b" * 64, "c" * 64}  # not the index blob a*64
    assert store.private_blob_modules(shas) == {
        "e" * 64: {"example.com/team/priv", "example.com/team/p2"},
        "c" * 64: {"example.com/team/p2"},
    }
    assert store.public_blobs([f"{i:064x}" for i in range(1200)]) == set()  # chunked IN lists


def test_tokens(store: SqlMetadataStore) -> None:
    a = TokenRecord("t1", "1" * 64, "example.com/acme", "publish", created="2026-01-01T00:00:00Z")
    b = TokenRecord("t2", "2" * 64, "example.com", "read", created="2026-01-02T00:00:00Z")
    store.add_token(a)
    store.add_token(b)
    assert store.get_token("t1") == a
    assert store.get_token("t3") is None
    assert store.list_tokens() == [a, b]
    assert store.revoke_token("t1")
    assert store.revoke_token("t1")  # already revoked: still there, still revoked
    assert not store.revoke_token("t3")
    assert store.get_token("t1").revoked is not None  # type: ignore[union-attr]
    assert store.get_token("t2").revoked is None  # type: ignore[union-attr]
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError):  # the same secret hash twice is refused
        store.add_token(TokenRecord("t4", "1" * 64, "x.com", "read"))


def test_concurrent_startups_migrate_once(meta_url: str) -> None:
    barrier = threading.Barrier(4)
    opened: list[SqlMetadataStore] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            opened.append(open_metadata_store(meta_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    opened[0].commit_version(version())
    assert opened[-1].list_versions(M) == ["v0.1.0"]
    for s in opened:
        s.close()


def _commit_in_process(url: str, h1: str, barrier: object, results: object) -> None:
    store = open_metadata_store(url, migrate=False)
    barrier.wait()  # type: ignore[attr-defined]
    try:
        out = store.commit_version(version(h1=h1))
        results.put("created" if out.created else f"noop:{out.version.h1}")  # type: ignore[attr-defined]
    except ConflictError as exc:
        results.put(f"conflict:{exc.committed_h1}")  # type: ignore[attr-defined]
    finally:
        store.close()


def test_commit_race_across_processes(meta_url: str) -> None:
    """Three processes commit one version at once, two with the same bytes: one creates
    it, the same bytes are a no-op, the other bytes a conflict naming the winner."""
    import multiprocessing

    open_metadata_store(meta_url).close()  # migrated once, before the race
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(3), ctx.Queue()
    h1s = ["h1:SAME=", "h1:SAME=", "h1:OTHER="]
    procs = [
        ctx.Process(target=_commit_in_process, args=(meta_url, h, barrier, results)) for h in h1s
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    got = sorted(results.get(timeout=5) for _ in procs)
    store = open_metadata_store(meta_url, migrate=False)
    winner = store.get_version(M, "v0.1.0").h1  # type: ignore[union-attr]
    store.close()
    if winner == "h1:SAME=":
        assert got == sorted(["created", "noop:h1:SAME=", "conflict:h1:SAME="])
    else:
        assert got == sorted(["created", "conflict:h1:OTHER=", "conflict:h1:OTHER="])


def test_reserve_version_for_a_proxy_fill(store: SqlMetadataStore) -> None:
    """One reservation per version; readers never see it; committing replaces it."""
    p = "example.org/up/m"
    past, future = "2000-01-01T00:00:00Z", "2999-01-01T00:00:00Z"
    assert store.reserve_version(p, "v0.1.0", past) == "reserved"
    assert store.reserve_version(p, "v0.1.0", past) == "busy"
    assert store.get_version(p, "v0.1.0") is None and store.list_versions(p) == []
    assert store.list_modules() == []  # a module with only a reservation is not listed
    assert store.reserve_version(p, "v0.1.0", future) == "reserved"  # stale: taken over
    assert store.renew_reservation(p, "v0.1.0")
    assert store.reserve_version(p, "v0.1.0", past) == "busy"  # renewed: fresh
    out = store.commit_version(
        NewVersion(**{**version(module=p).__dict__, "proxied": True})  # type: ignore[arg-type]
    )
    assert out.created and store.list_versions(p) == ["v0.1.0"]
    assert store.reserve_version(p, "v0.1.0", past) == "committed"
    assert not store.renew_reservation(p, "v0.1.0")  # committed: nothing to renew
    store.release_version(p, "v0.1.0")  # a committed version stays
    assert store.get_version(p, "v0.1.0") is not None
    [rec] = store.list_modules()
    assert rec.path == p and rec.proxied
    assert store.all_versions() == {p: ["v0.1.0"]}
    assert store.reserve_version("example.org/up/gone", "v1.0.0", past) == "reserved"
    store.release_version("example.org/up/gone", "v1.0.0")
    assert store.get_module("example.org/up/gone") is None  # no row left behind
