"""The registry's checksum log in the database: one linear log, each version once."""

from __future__ import annotations

import threading
from pathlib import Path

import sqlalchemy as sa

from registry.metadata import FileRecord, NewVersion, open_metadata_store
from registry.sumlog import sumdb_records, sumdb_tree
from tests.sumdb.server import TestServer
from wgtpm.sumdb import note, tlog

BASE = "example.com/acme/base"
TOP = "example.com/acme/Top"  # escaped as !top


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
