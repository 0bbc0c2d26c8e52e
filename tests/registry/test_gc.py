"""``wgtpm registry gc`` (:mod:`registry.gc`): one conformance test per store and database.

Every test runs on a folder and on S3 (moto), on SQLite and PostgreSQL, against a
registry served over loopback. S3 stamps ``LastModified`` itself, so time is moved
with gc's clock (``GcOptions.now``) instead of the blobs' mtimes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from registry.blobs import SPOOL_STALE_SECONDS, BlobStore
from registry.gc import GcOptions, collect
from registry.limits import UPLOAD_TTL_SECONDS
from registry.service import Registry
from registry.stores import open_blob_store

from .conftest import Live, _live
from .helpers import index_bytes, modtext, publish
from .test_slsa import M as ATT_MODULE
from .test_slsa import V as ATT_VERSION
from .test_slsa import _files as att_files
from .test_slsa import _publish as publish_attested
from .test_slsa import _statement

HOUR = 3600.0


@pytest.fixture
def served(meta_url: str, blob_url: str, tmp_path: Path) -> Iterator[Live]:
    """A live registry on every database and store."""
    yield from _live(meta_url, blob_url, tmp_path / "spool")


def _reg(live: Live) -> Registry:
    assert isinstance(live.registry, Registry)
    return live.registry


def _files(tag: str) -> dict[str, bytes]:
    mod = tag.split("@")[0]
    return {
        "wgt.mod": modtext(mod),
        "w.bin": f"weights of {tag}".encode() * 50,
        "shared.txt": b"the same bytes in every version\n",
    }


def _read_back(c: httpx.Client, module: str, version: str, files: dict[str, bytes]) -> None:
    """Every file of ``module@version`` reads back whole over HTTP."""
    for path, data in files.items():
        r = c.get(f"/{module}/@v/{version}/{path}")
        assert r.status_code == 200, (module, version, path, r.status_code)
        assert hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest()
    assert c.get(f"/{module}/@v/{version}.index.json").status_code == 200


def _spool_file(blobs: BlobStore) -> Path:
    spool = blobs.spool_dir()
    assert spool is not None
    f = spool / ".0123456789abcdef.killed.tmp"
    f.write_bytes(b"x" * 1000)  # an upload whose replica was killed
    return f


def _stored(blobs: BlobStore) -> set[str]:
    return {b.sha256 for b in blobs.list_blobs()}


def test_gc_removes_exactly_the_unreferenced_past_the_grace(served: Live) -> None:
    reg = _reg(served)
    auth = {"Authorization": f"Bearer {served.token}"}
    published = {
        ("example.com/a", "v1.0.0"),
        ("example.com/a", "v1.1.0"),
        ("example.com/b", "v0.1.0"),
    }
    with httpx.Client(base_url=served.url) as c:
        for module, version in sorted(published):
            r = publish(c, served.token, module, version, _files(f"{module}@{version}"))
            assert r.status_code == 201, r.text
        att = _statement(att_files())
        assert publish_attested(c, served.token, att_files(), att).status_code == 201
        # an upload left open: one file sent, one not
        open_files = {
            "wgt.mod": modtext("example.com/c"),
            "sent.bin": b"sent" * 10,
            "not.bin": b"n",
        }
        body = {
            "module": "example.com/c",
            "version": "v1.0.0",
            "index": index_bytes("example.com/c", "v1.0.0", open_files).decode(),
        }
        up = c.post("/api/v1/uploads", json=body, headers=auth).json()
        sent = hashlib.sha256(b"sent" * 10).hexdigest()
        assert (
            c.put(f"{up['files_url']}{sent}", content=b"sent" * 10, headers=auth).status_code == 201
        )
        upload_index = hashlib.sha256(body["index"].encode()).hexdigest()
        referenced = _stored(reg.blobs)
        orphans = set()
        for i in range(3):  # what S3 outages and failed commits leave
            data = f"orphan {i}".encode()
            orphans.add(hashlib.sha256(data).hexdigest())
            reg.blobs.put(hashlib.sha256(data).hexdigest(), [data])
        spool = _spool_file(reg.blobs)
        t0 = time.time()

        young = collect(reg.meta, reg.blobs, GcOptions(grace=HOUR, now=t0))
        assert young.blobs.count == 0 and set(young.young.names) == orphans
        assert (
            young.spool.count == 0 and spool.exists() and _stored(reg.blobs) == referenced | orphans
        )

        later = t0 + 2 * HOUR
        dry = collect(reg.meta, reg.blobs, GcOptions(grace=HOUR, now=later, dry_run=True))
        assert set(dry.blobs.names) == orphans and dry.spool.count == 1 and dry.uploads == 0
        assert spool.exists() and _stored(reg.blobs) == referenced | orphans
        assert "to remove (dry run)" in dry.lines()[1]

        done = collect(reg.meta, reg.blobs, GcOptions(grace=HOUR, now=later))
        assert set(done.blobs.names) == orphans
        assert done.blobs.bytes == sum(len(f"orphan {i}") for i in range(3))
        assert done.spool.count == 1 and not spool.exists()
        assert _stored(reg.blobs) == referenced  # the open upload's blobs stay too
        assert {sent, upload_index} <= referenced
        for module, version in published:
            _read_back(c, module, version, _files(f"{module}@{version}"))
        assert c.get(f"/api/v1/uploads/{up['upload']}", headers=auth).status_code == 200
        assert c.get(f"/{ATT_MODULE}/@v/{ATT_VERSION}.slsa.json").text == att

        # past the upload's TTL: forgotten first, its blobs swept on the next run
        expired = t0 + UPLOAD_TTL_SECONDS + 2 * HOUR
        first = collect(reg.meta, reg.blobs, GcOptions(grace=HOUR, now=expired))
        assert first.uploads == 1 and first.blobs.count == 0
        second = collect(reg.meta, reg.blobs, GcOptions(grace=HOUR, now=expired))
        assert set(second.blobs.names) == {sent, upload_index}
        for module, version in published:
            _read_back(c, module, version, _files(f"{module}@{version}"))
        assert c.get(f"/{ATT_MODULE}/@v/{ATT_VERSION}.slsa.json").text == att


def test_a_commit_writes_its_statement_again_over_an_old_orphan(live: Live) -> None:
    """The statement's blob, stored by a commit that failed a week ago, is written afresh by
    the next commit: else gc could take it between that commit's check and its row."""
    reg = _reg(live)
    att = _statement(att_files())
    sha = hashlib.sha256(att.encode()).hexdigest()
    reg.blobs.put(sha, [att.encode()])
    week_ago = time.time() - 7 * 24 * HOUR
    path = Path(reg.blobs.url) / "sha256" / sha[:2] / sha
    os.utime(path, (week_ago, week_ago))
    with httpx.Client(base_url=live.url) as c:
        assert publish_attested(c, live.token, att_files(), att).status_code == 201
    got = reg.blobs.stat(sha)
    assert got is not None and got.mtime > time.time() - HOUR


def test_a_commit_whose_index_blob_was_collected_is_refused(live: Live) -> None:
    """An upload whose index blob went (gc at a tiny grace, between the write and the row)
    cannot commit a version that lacks its index: 404, start again."""
    reg = _reg(live)
    auth = {"Authorization": f"Bearer {live.token}"}
    fs = _files("example.com/gone@v1.0.0")
    body = {"module": "example.com/gone", "version": "v1.0.0"}
    body["index"] = index_bytes(body["module"], body["version"], fs).decode()
    with httpx.Client(base_url=live.url) as c:
        up = c.post("/api/v1/uploads", json=body, headers=auth).json()
        for data in fs.values():
            sha = hashlib.sha256(data).hexdigest()
            assert c.put(f"{up['files_url']}{sha}", content=data, headers=auth).is_success
        reg.blobs.delete(hashlib.sha256(body["index"].encode()).hexdigest())
        r = c.post(up["commit_url"], headers=auth)
        assert r.status_code == 404 and "start a new upload" in r.json()["error"]
        assert reg.meta.get_version("example.com/gone", "v1.0.0") is None
        again = publish(c, live.token, "example.com/gone", "v1.0.0", fs)
        assert again.status_code == 201, again.text
        _read_back(c, "example.com/gone", "v1.0.0", fs)


def _publish_retrying(c: httpx.Client, token: str, module: str, version: str) -> int:
    """Publish, starting again when a step fails because gc (at grace 0) took a blob that
    was written but not yet referenced; returns the attempts it took."""
    for attempt in range(1, 11):
        try:
            r = publish(c, token, module, version, _files(f"{module}@{version}"))
        except AssertionError:
            continue
        if r.status_code in (200, 201):
            return attempt
    raise AssertionError(f"{module}@{version} could not be published in 10 attempts")


def test_gc_under_concurrent_publishes_removes_nothing_referenced(served: Live) -> None:
    reg = _reg(served)
    orphans = set()
    for i in range(5):
        data = f"left by an outage {i}".encode()
        orphans.add(hashlib.sha256(data).hexdigest())
        reg.blobs.put(hashlib.sha256(data).hexdigest(), [data])
    versions = [("example.com/busy", f"v1.0.{i}") for i in range(12)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def publisher() -> None:
        try:
            with httpx.Client(base_url=served.url) as c:
                for module, version in versions:
                    _publish_retrying(c, served.token, module, version)
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=publisher)
    thread.start()
    removed: set[str] = set()
    runs = 0
    # grace 0 and the real clock: every unreferenced blob is a candidate at once, even one
    # written a moment ago whose row is not added yet (a publish then fails and starts
    # again); only the check right before each delete, and the commit's own checks that
    # every blob it names is stored, stand between a committed version and the sweep
    while not stop.is_set() or runs == 0:
        removed |= set(collect(reg.meta, reg.blobs, GcOptions(grace=0)).blobs.names)
        runs += 1
    thread.join()
    assert not errors, errors
    removed |= set(collect(reg.meta, reg.blobs, GcOptions(grace=0)).blobs.names)
    assert orphans <= removed and not (orphans & _stored(reg.blobs))
    with httpx.Client(base_url=served.url) as c:
        for module, version in versions:
            _read_back(c, module, version, _files(f"{module}@{version}"))
    # every blob a committed version or its index names is stored (the reads above saw it)
    stored = _stored(reg.blobs)
    for module, version in versions:
        v = reg.meta.get_version(module, version)
        assert v is not None and v.index_sha256 in stored
        assert {f.sha256 for f in reg.meta.list_files(module, version)} <= stored
    assert runs > 1


def test_a_replica_sweeps_its_dead_spool_files_when_it_opens_its_store(
    blob_url: str, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    blobs = open_blob_store(blob_url, spool=spool)
    dead, busy = _spool_file(blobs), blobs.spool_dir() / ".fedcba9876543210.alive.tmp"  # type: ignore[operator]
    busy.write_bytes(b"still arriving")
    other = blobs.spool_dir() / "not-a-spool-file"  # type: ignore[operator]
    other.write_bytes(b"")
    old = time.time() - SPOOL_STALE_SECONDS - 60
    os.utime(dead, (old, old))
    os.utime(other, (old, old))
    blobs.close()
    again = open_blob_store(blob_url, spool=spool)  # the replica restarts
    try:
        assert not dead.exists() and busy.exists() and other.exists()
    finally:
        again.close()


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    e = {**os.environ, **(env or {}), "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "wgtpm", "registry", "gc", *args],
        capture_output=True,
        text=True,
        env=e,
        timeout=120,
    )


def test_cli_gc_dry_run_then_gc(tmp_path: Path) -> None:
    from registry.metadata import open_metadata_store

    data = tmp_path / "data"
    data.mkdir()
    open_metadata_store(f"sqlite:///{data / 'registry.db'}").close()  # as serve makes it
    blobs = open_blob_store(str(data / "blobs"))
    orphan = b"an orphan"
    sha = hashlib.sha256(orphan).hexdigest()
    blobs.put(sha, [orphan])
    old = time.time() - 2 * HOUR
    path = data / "blobs" / "sha256" / sha[:2] / sha
    os.utime(path, (old, old))
    dry = _cli("--data", str(data), "--grace", str(HOUR), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "blobs: 1 to remove (dry run), 9 bytes" in dry.stdout and path.exists()
    run = _cli("--data", str(data), "--grace", str(HOUR))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("spool files: 0 removed")
    assert lines[1].startswith("blobs: 1 removed, 9 bytes")
    assert lines[2] == "expired uploads: 0 removed"
    assert not path.exists()
    missing = _cli("--data", str(tmp_path / "nowhere"))
    assert missing.returncode != 0 and "no registry database" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_signature_is_referenced_and_written_again_over_an_old_orphan(live: Live) -> None:
    """A release's signature bundle is a blob its ``signatures`` row names: gc keeps it
    at any grace, and a commit writes it afresh over an old unreferenced copy."""
    from cryptography.hazmat.primitives.asymmetric import ec

    from wgtpm.trust import make_bundle

    reg = _reg(live)
    fs = att_files(b"signed")
    shas = {p: hashlib.sha256(b).hexdigest() for p, b in fs.items()}
    bundle = make_bundle(
        f"{ATT_MODULE}@{ATT_VERSION}", shas, ec.generate_private_key(ec.SECP256R1())
    )
    sha = hashlib.sha256(bundle).hexdigest()
    reg.blobs.put(sha, [bundle])
    week_ago = time.time() - 7 * 24 * HOUR
    os.utime(Path(reg.blobs.url) / "sha256" / sha[:2] / sha, (week_ago, week_ago))
    auth = {"Authorization": f"Bearer {live.token}"}
    body = {
        "module": ATT_MODULE,
        "version": ATT_VERSION,
        "index": index_bytes(ATT_MODULE, ATT_VERSION, fs).decode(),
    }
    with httpx.Client(base_url=live.url) as c:
        doc = c.post("/api/v1/uploads", json=body, headers=auth).json()
        by_sha = {hashlib.sha256(b).hexdigest(): b for b in fs.values()}
        for m in doc["missing"]:
            c.put(f"{doc['files_url']}{m['sha256']}", content=by_sha[m["sha256"]], headers=auth)
        r = c.post(doc["commit_url"], json={"signature": bundle.decode()}, headers=auth)
        assert r.status_code == 201, r.text
        got = reg.blobs.stat(sha)
        assert got is not None and got.mtime > time.time() - HOUR  # written again
        collect(reg.meta, reg.blobs, GcOptions(grace=0, now=time.time() + 2 * HOUR))
        assert reg.blobs.stat(sha) is not None  # referenced by its signatures row
        served = c.get(f"/{ATT_MODULE}/@v/{ATT_VERSION}.sig")
        assert served.status_code == 200 and served.content == bundle
