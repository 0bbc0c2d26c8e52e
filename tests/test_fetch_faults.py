"""Every way a download can go wrong ends in a verified file or a clear error,
with wgt.mod and wgt.sum unchanged and nothing unverified under a final name."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.servers import Fault
from tests.servers.proxytree import ProxyTreeServer
from wgtpm.cache import Cache
from wgtpm.modfetch import Fetcher
from wgtpm.proxytree import ProxyTree

MOD = "github.com/acme/big"
BIG = bytes(range(256)) * 4096  # 1 MiB
FILE_PATH = f"/{MOD}/@v/v0.1.0/weights.bin"


@pytest.fixture
def big(tree: ProxyTree) -> ProxyTree:
    tree.add(MOD, "v0.1.0", {"wgt.mod": f"module {MOD}\n".encode(), "weights.bin": BIG})
    return tree


def blobs() -> list[Path]:
    root = Cache().root / "blobs"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def snapshot(project: Path) -> dict[str, bytes | None]:
    return {
        n: (project / n).read_bytes() if (project / n).exists() else None
        for n in ("wgt.mod", "wgt.sum")
    }


def assert_blob_ok() -> None:
    for b in blobs():
        assert hashlib.sha256(b.read_bytes()).hexdigest() == b.name


@pytest.mark.parametrize(
    "fault",
    [
        Fault.truncate(FILE_PATH, at=0.3),
        Fault.short(FILE_PATH, at=0.6),
        Fault.reset(FILE_PATH, at=0.5, times=2),
        Fault.error(FILE_PATH, status=500, times=2),
        Fault.too_many(FILE_PATH, retry_after="0", times=1),
    ],
    ids=["truncate", "short", "reset", "500", "429"],
)
def test_transient_faults_recover(wgtpm, big, project, monkeypatch, fault: Fault) -> None:
    with ProxyTreeServer(big.root) as srv:
        srv.inject(fault)
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    f = Cache().mod_dir(MOD, "v0.1.0") / "weights.bin"
    assert f.read_bytes() == BIG
    assert_blob_ok()
    if fault.kind in ("truncate", "reset"):
        # the second request continued where the first stopped
        ranged = [s for s in srv.log.where(path=FILE_PATH) if s.header("range")]
        assert ranged and ranged[0].header("range") != "bytes=0-"


def test_flipped_byte_is_refused_and_nothing_kept(wgtpm, big, project, monkeypatch) -> None:
    before = snapshot(project)
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.flip(FILE_PATH, times=-1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
    assert r.code == 1
    assert "weights.bin" in r.err and "sha256" in r.err and f"{MOD}@v0.1.0" in r.err
    assert snapshot(project) == before
    assert not (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").exists()
    assert hashlib.sha256(BIG).hexdigest() not in [b.name for b in blobs()]
    assert not list((Cache().root / "tmp").glob("*.partial"))


def test_stalled_download_times_out_clearly(wgtpm, big, project, monkeypatch) -> None:
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.drip(FILE_PATH, delay=2.0, chunk=1, times=-1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        monkeypatch.setenv("WGTPM_HTTP_TIMEOUT", "0.3")
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        before = snapshot(project)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
    assert r.code == 1
    assert "weights.bin" in r.err and "run the command again to resume" in r.err
    assert snapshot(project) == before


def test_changed_release_is_a_security_error(wgtpm, tree, project, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    tree.add(MOD, "v0.1.0", {"wgt.mod": f"module {MOD}\n".encode(), "weights.bin": b"original"})
    assert wgtpm("get", f"{MOD}@v0.1.0", cwd=project).code == 0
    before = snapshot(project)
    # Someone re-publishes v0.1.0 with other weights (a consistent index and all).
    vdir = tree.root / MOD / "@v"
    (vdir / "v0.1.0" / "weights.bin").write_bytes(b"poisoned")
    idx = json.loads((vdir / "v0.1.0.index.json").read_text())
    for f in idx["files"]:
        if f["path"] == "weights.bin":
            f["sha256"], f["size"] = hashlib.sha256(b"poisoned").hexdigest(), 8
    (vdir / "v0.1.0.index.json").write_text(json.dumps(idx))
    Cache().clean()
    r = wgtpm("get", cwd=project)
    assert r.code == 1
    assert "SECURITY ERROR" in r.err and f"{MOD}@v0.1.0" in r.err
    want = next(
        ln.split()[2] for ln in before["wgt.sum"].decode().splitlines() if ln.split()[1] == "v0.1.0"
    )
    assert want in r.err  # names both hashes
    assert snapshot(project) == before
    assert not Cache().mod_dir(MOD, "v0.1.0").exists()


@pytest.mark.parametrize(
    "bad_path,why",
    [
        ("../evil", "escapes the module"),
        ("/etc/passwd", "is absolute"),
        ("a\\b", "backslash"),
        (".git/config", "starting with '.'"),
        ("Weights.bin", "only in case"),
    ],
)
def test_unsafe_index_paths(wgtpm, tree, project, monkeypatch, bad_path: str, why: str) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    tree.add(MOD, "v0.1.0", {"wgt.mod": f"module {MOD}\n".encode(), "weights.bin": b"w"})
    p = tree.root / MOD / "@v" / "v0.1.0.index.json"
    idx = json.loads(p.read_text())
    idx["files"].append({"path": bad_path, "size": 1, "sha256": hashlib.sha256(b"x").hexdigest()})
    p.write_text(json.dumps(idx))
    before = snapshot(project)
    r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
    assert r.code == 1
    assert why in r.err and f"{MOD}@v0.1.0" in r.err
    assert snapshot(project) == before


def _spawn_get(project: Path, env: dict[str, str], **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "wgtpm", "get", "-q", f"{MOD}@v0.1.0"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,  # type: ignore[arg-type]
    )


def test_two_processes_share_one_download(big, tmp_path) -> None:
    projects = []
    for n in ("p1", "p2"):
        d = tmp_path / n
        d.mkdir()
        (d / "wgt.mod").write_text(f"module example.com/{n}\n")
        projects.append(d)
    with ProxyTreeServer(big.root) as srv:
        srv.inject(
            Fault.drip(FILE_PATH, delay=0.01, chunk=64 * 1024, times=-1)
        )  # ~0.2 s per download
        env = {**os.environ, "WGTPROXY": srv.url}
        procs = [_spawn_get(d, env) for d in projects]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        file_gets = srv.log.where(method="GET", path=FILE_PATH)
    assert len(file_gets) == 1  # the second process waited for the first's blob
    for d in projects:
        assert (d / "wgt.sum").read_text() == (projects[0] / "wgt.sum").read_text()
    assert_blob_ok()


def test_download_threads_share_one_http_client(tmp_path) -> None:
    made = []

    def slow_client():
        time.sleep(0.05)  # the other download threads ask meanwhile
        made.append(object())
        return made[-1]

    fetcher = Fetcher(Cache(tmp_path / "c"), None, None, http=slow_client)
    with ThreadPoolExecutor(8) as pool:
        clients = list(pool.map(lambda _: fetcher.http(), range(8)))
    assert len(made) == 1 and all(c is made[0] for c in clients)


def test_killed_process_resumes(wgtpm, big, project, monkeypatch) -> None:
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.drip(FILE_PATH, delay=0.05, chunk=16 * 1024, times=1))  # ~3 s
        env = {**os.environ, "WGTPROXY": srv.url}
        before = snapshot(project)
        proc = _spawn_get(project, env)
        part = Cache().root / "tmp" / f"{hashlib.sha256(BIG).hexdigest()}.partial"
        deadline = time.time() + 60
        while time.time() < deadline and (not part.exists() or part.stat().st_size < 100_000):
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        assert part.exists() and 0 < part.stat().st_size < len(BIG)
        assert snapshot(project) == before
        assert hashlib.sha256(BIG).hexdigest() not in [b.name for b in blobs()]
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        ranged = [s.header("range") for s in srv.log.where(path=FILE_PATH) if s.header("range")]
    assert ranged and ranged[-1] != "bytes=0-"
    assert (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").read_bytes() == BIG
    assert_blob_ok()


def test_full_disk_is_a_clear_error(big, project) -> None:
    # RLIMIT_FSIZE makes writes past 256 KiB fail (EFBIG) in the child, like a full disk.
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))\n"
        "from wgtpm.cli import main\n"
        f"sys.exit(main(['get', '-q', '{MOD}@v0.1.0']))\n"
    )
    before = snapshot(project)
    env = {**os.environ, "WGTPROXY": big.url}
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    assert "disk full" in r.stderr and "wgtpm cache gc" in r.stderr
    assert snapshot(project) == before
    assert hashlib.sha256(BIG).hexdigest() not in [b.name for b in blobs()]


def test_junk_partial_file_is_redone_from_byte_zero(wgtpm, big, project, monkeypatch) -> None:
    """A partial file that is junk (not the source's fault) costs one fresh download, not a failure."""
    part = Cache().root / "tmp" / f"{hashlib.sha256(BIG).hexdigest()}.partial"
    part.parent.mkdir(parents=True, exist_ok=True)
    part.write_bytes(b"\xff" * 300_000)
    with ProxyTreeServer(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        ranges = [s.header("range") for s in srv.log.where(path=FILE_PATH)]
    assert r.code == 0, r.err
    assert ranges == ["bytes=300000-", None], ranges  # resumed, mismatched, then from byte 0
    assert (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").read_bytes() == BIG
    assert not part.exists()
    assert_blob_ok()


def test_a_lying_source_is_blamed_with_what_it_served(wgtpm, big, project, monkeypatch) -> None:
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.flip(FILE_PATH, times=-1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        url = srv.url
    assert r.code == 1
    assert f"the source served {len(BIG)} bytes with sha256" in r.err
    assert f"from {url}{FILE_PATH}" in r.err, r.err  # where the bytes came from
