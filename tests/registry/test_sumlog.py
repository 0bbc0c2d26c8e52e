"""The registry's checksum log: wgtpm's sumdb client against the real server and database.

The client (:class:`wgtpm.sumdb.client.Client`) reads ``$URL/sumdb/sum.test``
over httpx, with its configuration and cache in memory
(:class:`tests.sumdb.server.MemoryOps`). Commits that need no HTTP go
straight to the metadata store (the same transaction the publish API runs),
which keeps the module fast.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from registry.metadata import FileRecord, NewVersion, SqlMetadataStore, open_metadata_store
from registry.sumdb import SumDB
from registry.sumkey import SumdbKeyError, signer_key, verifier_key
from registry.sumlog import sumdb_hashes, sumdb_records, sumdb_tree
from tests.sumdb.server import MemoryOps, TestServer
from wgtpm import FetchError, NotFoundError, SumdbSecurityError, SumdbVerifyError
from wgtpm.sumdb import note, record, tlog
from wgtpm.sumdb.client import Client

from .conftest import Live
from .helpers import h1, publish

BASE = "example.com/acme/base"
TOP = "example.com/acme/Top"  # escaped as !top


def files(tag: int, module: str = BASE) -> dict[str, bytes]:
    return {"wgt.mod": f"module {module}\nwgt 0.1\n".encode(), "w.bin": bytes([tag]) * 100}


def new_version(module: str, version: str, tag: str = "A", private: bool = False) -> NewVersion:
    return NewVersion(
        module=module,
        version=version,
        h1=f"h1:{tag}{version}=",
        mod_h1="h1:MOD=",
        index_sha256="a" * 64,
        files=[FileRecord("wgt.mod", 20, "b" * 64)],
        private=private,
    )


@pytest.fixture
def clients(live: Live) -> Iterator[Callable[[], tuple[Client, MemoryOps]]]:
    """New sumdb clients of the live registry, each with its own (memory) config and cache."""
    http = httpx.Client(base_url=f"{live.url}/sumdb/sum.test", timeout=30)

    def remote(path: str) -> bytes:
        r = http.get(path)
        if r.status_code in (404, 410):
            raise NotFoundError(path, None, r.text)
        if r.status_code != 200:
            raise FetchError(path, None, f"{r.status_code} {r.text}")
        return r.content

    def make() -> tuple[Client, MemoryOps]:
        ops = MemoryOps(remote)
        return Client(live.vkey, ops), ops

    yield make
    http.close()


def log_of(engine: sa.Engine) -> tuple[list[tuple[str, str, bytes]], tlog.Tree]:
    """The log's records, checked to be ids 0..n-1, and its tree head as stored."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                sumdb_records.c.id, sumdb_records.c.module, sumdb_records.c.version,
                sumdb_records.c.text,
            ).order_by(sumdb_records.c.id)
        ).all()  # fmt: skip
        tree = conn.execute(sa.select(sumdb_tree.c.size, sumdb_tree.c.hash)).one()
    assert [r.id for r in rows] == list(range(len(rows)))
    return [(r.module, r.version, bytes(r.text)) for r in rows], tlog.Tree(tree.size, tree.hash)


def recomputed(texts: list[bytes]) -> tlog.Tree:
    """The tree of ``texts``, computed from nothing but the texts (the in-memory test log)."""
    server = TestServer(note.generate_key("x")[0])
    for i, t in enumerate(texts):
        server.add(f"/lookup/r{i}", t)
    return server.tree()


def check_linear(engine: sa.Engine) -> list[tuple[str, str, bytes]]:
    recs, tree = log_of(engine)
    assert recomputed([t for _, _, t in recs]) == tree
    return recs


# ---- over HTTP, as a client sees it ---------------------------------------------------


def test_publish_lookup_verify_publish_more_and_look_up_again(
    live: Live, clients: Callable[[], tuple[Client, MemoryOps]]
) -> None:
    with httpx.Client(base_url=live.url) as http:
        for i, v in enumerate(["v0.1.0", "v0.2.0"]):
            assert publish(http, live.token, BASE, v, files(i)).status_code == 201
        assert publish(http, live.token, TOP, "v1.0.0", files(9, TOP)).status_code == 201

        # Go's lookup body: id, the record, a blank line, the signed head of a tree holding it.
        body = http.get("/sumdb/sum.test/lookup/example.com/acme/base@v0.2.0")
        assert body.status_code == 200 and body.headers["content-type"].startswith("text/plain")
        mod_h1 = h1({"wgt.mod": files(1)["wgt.mod"]})
        head, _, signed = body.content.partition(b"\n\n")
        assert head.decode() == (f"1\n{BASE} v0.2.0 {h1(files(1))}\n{BASE} v0.2.0/wgt.mod {mod_h1}")
        assert signed == http.get("/sumdb/sum.test/latest").content
        assert note.open(signed, note.VerifierList(note.new_verifier(live.vkey))).text == (
            tlog.format_tree(tlog.parse_tree(signed)).decode()
        )
        assert tlog.parse_tree(signed).n == 3

        a, a_ops = clients()
        b, _ = clients()
        assert a.lookup(BASE, "v0.1.0") == [f"{BASE} v0.1.0 {h1(files(0))}"]
        assert a.lookup(BASE, "v0.1.0/wgt.mod") == [
            f"{BASE} v0.1.0/wgt.mod {h1({'wgt.mod': files(0)['wgt.mod']})}"
        ]
        assert a.lookup(TOP, "v1.0.0") == [f"{TOP} v1.0.0 {h1(files(9, TOP))}"]
        assert "/lookup/example.com/acme/!top@v1.0.0" in a_ops.reads
        assert b.lookup(BASE, "v0.2.0")[0].endswith(h1(files(1)))
        assert a.latest == b.latest  # two clients, one head

        for i, v in enumerate(["v0.3.0", "v0.4.0"], start=3):
            assert publish(http, live.token, BASE, v, files(i)).status_code == 201
        assert a.lookup(BASE, "v0.4.0")[0].endswith(h1(files(4)))  # consistent with tree#3
        assert b.lookup(BASE, "v0.3.0")[0].endswith(h1(files(3)))
        assert a.latest == b.latest and a.latest[0].n == 5
        assert a_ops.config["sum.test/latest"] == a.latest[1]
        assert not a_ops.security

        # Publishing the same bytes again logs nothing; a private module is never logged.
        assert publish(http, live.token, BASE, "v0.1.0", files(0)).status_code == 200
        priv = "example.com/acme/secret"
        r = publish(http, live.token, priv, "v1.0.0", files(1, priv), private=True)
        assert r.status_code == 201
        assert http.get(f"/sumdb/sum.test/lookup/{priv}@v1.0.0").status_code == 404
    recs = check_linear(live.registry.meta.engine)  # type: ignore[attr-defined]
    assert [(m, v) for m, v, _ in recs] == [
        (BASE, "v0.1.0"), (BASE, "v0.2.0"), (TOP, "v1.0.0"), (BASE, "v0.3.0"), (BASE, "v0.4.0"),
    ]  # fmt: skip


def test_paths_statuses_and_caching(live: Live) -> None:
    meta: SqlMetadataStore = live.registry.meta  # type: ignore[attr-defined]
    with httpx.Client(base_url=f"{live.url}/sumdb/sum.test") as http:
        empty = http.get("/latest")
        assert empty.status_code == 200 and tlog.parse_tree(empty.content).n == 0
        assert empty.headers["cache-control"] == "no-cache"
        assert http.get("/supported").status_code == 200
        assert http.get(f"{live.url}/sumdb/sum.other/supported").status_code == 404
        assert http.get(f"{live.url}/sumdb/sum.other/latest").status_code == 404
        for i in range(258):
            meta.commit_version(new_version(BASE, f"v0.{i}.0"))
        assert tlog.parse_tree(http.get("/latest").content).n == 258

        full = http.get("/tile/8/0/000")
        assert full.status_code == 200 and len(full.content) == 256 * 32
        assert full.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert full.headers["content-type"] == "application/octet-stream"
        part = http.get("/tile/8/0/001.p/2")
        assert part.status_code == 200 and len(part.content) == 64
        assert part.headers["cache-control"] == "public, max-age=60"
        assert http.get("/tile/8/1/000.p/1").status_code == 200
        data = http.get("/tile/8/data/001.p/2")
        assert data.status_code == 200 and data.content == b"".join(
            tlog.format_record(256 + i, record.record_text(BASE, f"v0.{256 + i}.0",
                                                           f"h1:Av0.{256 + i}.0=", "h1:MOD="))
            for i in range(2)
        )  # fmt: skip
        assert http.get("/tile/8/data/000").headers["cache-control"].endswith("immutable")

        for missing in ("/tile/8/0/001.p/3", "/tile/8/0/001", "/tile/8/1/000", "/tile/8/2/000.p/1",
                        "/tile/8/data/001.p/3", "/tile/4/0/000", "/tile/8/9/x999/999",
                        "/lookup/example.com/acme/base@v9.0.0", "/nothing"):  # fmt: skip
            assert http.get(missing).status_code == 404, missing
        for malformed in ("/tile/8/0/01", "/tile/8/0/000.p/256", "/tile/x/0/000",
                          "/lookup/example.com/acme/base", "/lookup/example.com/acme/base@1.0"):  # fmt: skip
            assert http.get(malformed).status_code == 400, malformed


def test_a_log_past_one_tile(live: Live, clients: Callable[[], tuple[Client, MemoryOps]]) -> None:
    meta: SqlMetadataStore = live.registry.meta  # type: ignore[attr-defined]
    a, _ = clients()
    meta.commit_version(new_version(BASE, "v0.0.1"))
    assert a.lookup(BASE, "v0.0.1") == [f"{BASE} v0.0.1 h1:Av0.0.1="]
    for i in range(300):
        meta.commit_version(new_version(TOP, f"v0.{i}.0"))
    b, _ = clients()
    assert b.lookup(TOP, "v0.299.0") == [f"{TOP} v0.299.0 h1:Av0.299.0="]
    assert a.lookup(TOP, "v0.7.0") == [f"{TOP} v0.7.0 h1:Av0.7.0="]  # tree#1 -> tree#301
    assert a.latest == b.latest and a.latest[0].n == 301
    check_linear(meta.engine)


def _rewrite_log(engine: sa.Engine, texts: list[bytes]) -> None:
    """What an attacker holding the database and the key does: a new, self-consistent history."""
    stored: list[bytes] = []
    for n, t in enumerate(texts):
        stored.extend(tlog.stored_hashes(n, t, lambda ix: [stored[i] for i in ix]))
    root = tlog.tree_hash(len(texts), lambda ix: [stored[i] for i in ix])
    with engine.begin() as conn:
        for n, t in enumerate(texts):
            conn.execute(sumdb_records.update().where(sumdb_records.c.id == n).values(text=t))
        conn.execute(sumdb_hashes.delete())
        conn.execute(sumdb_hashes.insert(), [{"idx": i, "hash": h} for i, h in enumerate(stored)])
        conn.execute(sumdb_tree.update().values(size=len(texts), hash=root))


def test_a_rewritten_history_is_a_security_error(
    live: Live, clients: Callable[[], tuple[Client, MemoryOps]]
) -> None:
    meta: SqlMetadataStore = live.registry.meta  # type: ignore[attr-defined]
    for v in ("v0.1.0", "v0.2.0", "v0.3.0"):
        meta.commit_version(new_version(BASE, v))
    a, a_ops = clients()
    a.lookup(BASE, "v0.1.0")
    old_note = a.latest[1]

    # Rewrite record 1 (v0.2.0 now "has" other bytes) and every hash and the head with it.
    recs, _ = log_of(meta.engine)
    texts = [t for _, _, t in recs]
    texts[1] = record.record_text(BASE, "v0.2.0", "h1:EVIL=", "h1:MOD=")
    _rewrite_log(meta.engine, texts)
    meta.commit_version(new_version(BASE, "v0.4.0"))

    fresh, _ = clients()  # a client that never saw the old head cannot tell
    assert fresh.lookup(BASE, "v0.2.0") == [f"{BASE} v0.2.0 h1:EVIL="]
    with pytest.raises(SumdbSecurityError) as err:
        a.lookup(BASE, "v0.4.0")
    assert err.value.old_note == old_note and err.value.new_note != old_note
    assert tlog.parse_tree(err.value.new_note.split(b"\n\n")[0] + b"\n").n == 4
    report = a_ops.security[0]
    assert "SECURITY ERROR" in report and "proof of misbehavior" in report
    for n in (old_note, err.value.new_note):
        assert n.decode().split("\n")[2] in report  # both tree hashes are shown


def test_a_rewritten_record_fails_its_inclusion_proof(
    live: Live, clients: Callable[[], tuple[Client, MemoryOps]]
) -> None:
    meta: SqlMetadataStore = live.registry.meta  # type: ignore[attr-defined]
    for v in ("v0.1.0", "v0.2.0"):
        meta.commit_version(new_version(BASE, v))
    with meta.engine.begin() as conn:  # only the text: the hashes still say what was logged
        conn.execute(
            sumdb_records.update()
            .where(sumdb_records.c.id == 1)
            .values(text=record.record_text(BASE, "v0.2.0", "h1:EVIL=", "h1:MOD="))
        )
    a, _ = clients()
    assert a.lookup(BASE, "v0.1.0")
    with pytest.raises(SumdbVerifyError, match="cannot authenticate record"):
        a.lookup(BASE, "v0.2.0")


# ---- the log in the database ----------------------------------------------------------


def test_concurrent_commits_make_one_linear_log(meta_url: str) -> None:
    """Six threads on six connections pools commit at once, two racing for each shared
    version: every version is logged exactly once, at consecutive ids."""
    stores = [open_metadata_store(meta_url) for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def run(k: int) -> None:
        barrier.wait()
        try:
            for i in range(8):
                stores[k].commit_version(new_version(f"example.com/m{k}", f"v0.{i}.0"))
                stores[k].commit_version(new_version("example.com/shared", f"v{k // 2}.{i}.0"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    recs = check_linear(stores[0].engine)
    want = {(f"example.com/m{k}", f"v0.{i}.0") for k in range(6) for i in range(8)}
    want |= {("example.com/shared", f"v{j}.{i}.0") for j in range(3) for i in range(8)}
    assert sorted((m, v) for m, v, _ in recs) == sorted(want)
    for s in stores:
        s.close()


def _commit_many(url: str, k: int, barrier: object) -> None:
    store = open_metadata_store(url, migrate=False)
    barrier.wait()  # type: ignore[attr-defined]
    try:
        for i in range(15):
            store.commit_version(new_version(f"example.com/p{k}", f"v0.{i}.0"))
            store.commit_version(new_version("example.com/shared", f"v0.{i}.0"))
    finally:
        store.close()


def test_two_processes_on_postgresql_make_one_linear_log(postgres: object) -> None:
    import multiprocessing
    import uuid

    url = postgres.create_database(f"sumlog_{uuid.uuid4().hex[:8]}")  # type: ignore[attr-defined]
    store = open_metadata_store(url)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_commit_many, args=(url, k, barrier)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    recs = check_linear(store.engine)
    want = {(f"example.com/p{k}", f"v0.{i}.0") for k in range(2) for i in range(15)}
    want |= {("example.com/shared", f"v0.{i}.0") for i in range(15)}
    assert len(recs) == len(want) and {(m, v) for m, v, _ in recs} == want

    # And the client agrees, on every version, through the server's answers.
    db = SumDB.open(store.engine, note.generate_key("sum.test")[0], ttl=0)

    def remote(path: str) -> bytes:
        ans = db.handle(path)
        if ans.status != 200:
            raise NotFoundError(path, None, ans.body.decode())
        return ans.body

    c = Client(db.vkey, MemoryOps(remote))
    for m, v in want:
        assert c.lookup(m, v) == [f"{m} {v} h1:A{v}="]
    assert c.latest[0] == log_of(store.engine)[1]
    store.close()


def test_the_migration_logs_versions_committed_before_it(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config as AlembicConfig

    from registry import migrations
    from registry.metadata import create_engine, modules, versions

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        for mid, (path, private) in enumerate([(BASE, False), ("example.com/p", True)], 1):
            conn.execute(modules.insert().values(id=mid, path=path, private=private, created="x"))
        for vid, (mid, v) in enumerate([(1, "v0.2.0"), (2, "v1.0.0"), (1, "v0.1.0")], 1):
            conn.execute(
                versions.insert().values(
                    id=vid, module_id=mid, version=v, h1=f"h1:A{v}=", mod_h1="h1:MOD=",
                    index_sha256="a" * 64, committed=True, created="x",
                )
            )  # fmt: skip
    engine.dispose()
    store = open_metadata_store(url)
    recs = check_linear(store.engine)
    assert [(m, v) for m, v, _ in recs] == [(BASE, "v0.2.0"), (BASE, "v0.1.0")]
    store.commit_version(new_version(BASE, "v0.3.0"))
    assert len(check_linear(store.engine)) == 3
    store.close()


def test_versions_committed_by_an_older_server_are_logged_at_startup(tmp_path: Path) -> None:
    """During a rolling upgrade a server without the log may still commit: the next start
    of a server with it appends what is missing, in commit order."""
    from registry.metadata import versions

    store = open_metadata_store(f"sqlite:///{tmp_path / 'r.db'}")
    store.commit_version(new_version(BASE, "v0.1.0"))
    store.commit_version(new_version("example.com/p", "v0.1.0", private=True))
    with store.engine.begin() as conn:  # what the older code did: the version, no record
        mid = conn.execute(sa.text("SELECT id FROM modules WHERE path = :p"), {"p": BASE}).scalar()
        for v in ("v0.3.0", "v0.2.0"):
            conn.execute(
                versions.insert().values(
                    module_id=mid, version=v, h1=f"h1:A{v}=", mod_h1="h1:MOD=",
                    index_sha256="a" * 64, committed=True, created="x",
                )
            )  # fmt: skip
    skey = note.generate_key("sum.test")[0]
    SumDB.open(store.engine, skey)
    recs = check_linear(store.engine)
    assert [v for _, v, _ in recs] == ["v0.1.0", "v0.3.0", "v0.2.0"]
    SumDB.open(store.engine, skey)  # nothing more to do
    assert len(check_linear(store.engine)) == 3
    store.close()


def test_signed_heads_are_cached_briefly_but_lookups_get_a_tree_holding_them(
    tmp_path: Path,
) -> None:
    store = open_metadata_store(f"sqlite:///{tmp_path / 'r.db'}")
    db = SumDB.open(store.engine, note.generate_key("sum.test")[0], ttl=3600)
    store.commit_version(new_version(BASE, "v0.1.0"))
    first = db.signed()
    store.commit_version(new_version(BASE, "v0.2.0"))
    assert db.signed() is first  # within the ttl: neither read nor signed again
    ans = db.handle("/lookup/example.com/acme/base@v0.2.0")
    assert ans.status == 200 and tlog.parse_tree(tlog.parse_record(ans.body)[2]).n == 2
    assert tlog.parse_tree(db.signed()).n == 2
    store.close()


# ---- the key --------------------------------------------------------------------------


def test_the_key_is_made_once_kept_private_and_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for var in ("WGTPM_REGISTRY_SUMDB_KEY", "WGTPM_REGISTRY_SUMDB_KEY_FILE",
                "WGTPM_REGISTRY_SUMDB_NAME"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    data = tmp_path / "reg"
    skey = signer_key(data, "sum.example.com")
    assert stat.S_IMODE(os.stat(data / "sumdb.key").st_mode) == 0o600
    assert signer_key(data) == skey == signer_key(data, "sum.example.com")
    assert verifier_key(skey).startswith("sum.example.com+")
    with pytest.raises(SumdbKeyError, match="not the name"):
        signer_key(data, "sum.other.com")
    for bad in ("bad/name", "host:8080", "a+b", "has space"):
        with pytest.raises(SumdbKeyError, match="host name"):
            signer_key(tmp_path / "new", bad)
    os.chmod(data / "sumdb.key", 0o644)
    with caplog.at_level("WARNING", logger="registry.sumkey"):
        assert signer_key(data) == skey
    assert "chmod 600" in caplog.text

    other, _ = note.generate_key("sum.example.com")
    (tmp_path / "shared.key").write_text(other + "\n")
    assert signer_key(data, key_file=tmp_path / "shared.key") == other
    monkeypatch.setenv("WGTPM_REGISTRY_SUMDB_KEY", skey)
    assert signer_key(tmp_path / "elsewhere", key_file=tmp_path / "shared.key") == skey
    monkeypatch.setenv("WGTPM_REGISTRY_SUMDB_KEY", "PRIVATE+KEY+broken")
    with pytest.raises(SumdbKeyError, match="malformed"):
        signer_key(data)

    # A replica with another key must not sign the same log.
    store = open_metadata_store(f"sqlite:///{tmp_path / 'r.db'}")
    assert SumDB.open(store.engine, skey).vkey == verifier_key(skey)
    assert SumDB.open(store.engine, skey).name == "sum.example.com"
    with pytest.raises(SumdbKeyError, match="every replica must use the same key"):
        SumDB.open(store.engine, other)
    store.close()


def test_wgtpm_registry_key_prints_the_key_the_server_signs_with(
    wgtpm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from registry.app import open_registry
    from registry.config import Config

    for var in ("WGTPM_REGISTRY_SUMDB_KEY", "WGTPM_REGISTRY_SUMDB_KEY_FILE",
                "WGTPM_REGISTRY_SUMDB_NAME", "WGTPM_REGISTRY_DB"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    data = tmp_path / "reg"
    r = wgtpm("registry", "key", "--data", str(data), "--sumdb-name", "sum.example.com")
    assert r.code == 0, r.err
    vkey = r.out.strip().splitlines()[-1]
    assert vkey.startswith("sum.example.com+") and note.new_verifier(vkey).name == "sum.example.com"
    assert wgtpm("registry", "key", "--data", str(data)).out.strip().splitlines()[-1] == vkey
    reg = open_registry(Config(data=data))
    try:
        assert reg.sumdb is not None and reg.sumdb.vkey == vkey
    finally:
        reg.close()
    r = wgtpm("registry", "key", "--data", str(data), "--sumdb-name", "sum.other.com")
    assert r.code == 1 and "not the name" in r.err


def test_two_replicas_over_http_serve_one_log(postgres: object, tmp_path: Path) -> None:
    """Two servers on one PostgreSQL and one blob folder, sharing the key: publishes through
    both at once land in one log, and a client reading from either sees one history."""
    import uuid

    from registry.app import create_app
    from registry.service import Registry
    from registry.stores import open_blob_store

    from .conftest import _serve

    url = postgres.create_database(f"replicas_{uuid.uuid4().hex[:8]}")  # type: ignore[attr-defined]
    skey, vkey = note.generate_key("sum.test")
    regs = []
    for i in range(2):
        meta = open_metadata_store(url)
        blobs = open_blob_store(str(tmp_path / "blobs"), spool=tmp_path / f"spool{i}")
        regs.append(Registry(meta, blobs, sumdb=SumDB.open(meta.engine, skey)))
    token, _ = regs[0].create_token("example.com", "publish")
    servers = [_serve(create_app(registry=r)) for r in regs]
    urls = [next(s) for s in servers]
    try:
        statuses: list[int] = []
        barrier = threading.Barrier(8)

        def run(k: int) -> None:
            with httpx.Client(base_url=urls[k % 2], timeout=30) as http:
                barrier.wait()
                statuses.append(publish(http, token, BASE, f"v0.{k}.0", files(k)).status_code)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert statuses == [201] * 8
        check_linear(regs[0].meta.engine)  # type: ignore[attr-defined]

        with httpx.Client(timeout=30) as http:
            reads = iter(range(10**6))

            def remote(path: str) -> bytes:  # alternate between the replicas
                r = http.get(f"{urls[next(reads) % 2]}/sumdb/sum.test{path}")
                if r.status_code != 200:
                    raise NotFoundError(path, None, r.text)
                return r.content

            c = Client(vkey, MemoryOps(remote))
            for k in range(8):
                assert c.lookup(BASE, f"v0.{k}.0") == [f"{BASE} v0.{k}.0 {h1(files(k))}"]
            heads = {http.get(f"{u}/sumdb/sum.test/latest").content for u in urls}
            assert heads == {c.latest[1]}  # deterministic signatures: one head, byte for byte
    finally:
        for s in servers:
            for _ in s:
                pass
        for r in regs:
            r.close()
