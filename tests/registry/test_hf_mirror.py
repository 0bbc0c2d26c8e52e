"""The registry as a Hugging Face mirror: ``HF_ENDPOINT=<registry>`` for the real clients.

The registry runs as its own process (``wgtpm registry serve --upstream
direct``) with ``HF_ENDPOINT`` pointing at the loopback Hub, so that its
upstream and the test's clients (pointed at the registry) never mix. The
clients are the real ``huggingface_hub`` (in this process, given the
registry's URL as ``endpoint``) and ``transformers`` (in a child process
with ``HF_ENDPOINT`` set, as a user runs it), on a tiny Qwen3, and on an
8 MiB file the upstream's CDN drips slower than the client's timeout
(files are fetched on demand, ``registry/ondemand.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import huggingface_hub as hh
import pytest

from registry.ondemand import HOLD
from tests.servers import CdnServer, Fault, RequestLog
from tests.servers.huggingface import HfRepo, HuggingFaceServer
from wgtpm import NotFoundError
from wgtpm.sumdb.client import Client

from .helpers import h1, publish

REPO = "acme/tiny"
MODULE = f"hf.co/{REPO}"


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files of a tiny Qwen3 (config, tokenizer, safetensors), made once."""
    pytest.importorskip("transformers")
    from wgtpm.paw.tiny import make_tiny_qwen3

    d = make_tiny_qwen3(tmp_path_factory.mktemp("qwen"))
    return {
        p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
    }


@pytest.fixture
def hub(cdn: CdnServer, qwen: dict[str, bytes]) -> Iterator[HuggingFaceServer]:
    with HuggingFaceServer(cdn) as server:
        repo = server.repo("acme", "tiny")
        repo.commit(dict(qwen))
        repo.tag("v0.1.0")
        server.repo("other", "tiny").commit({"config.json": b"{}"})
        yield server


class Registry:
    """A ``wgtpm registry serve`` process on loopback."""

    def __init__(self, data: Path, hub: HuggingFaceServer, *flags: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "WGTPM_"))}
        env.update(HF_ENDPOINT=hub.url, WGTPM_HTTP_RETRIES="0", HF_HUB_DISABLE_XET="1")
        env["HF_HOME"] = str(data / "hf-home")  # no saved Hugging Face token
        data.mkdir(parents=True, exist_ok=True)
        self.log = data / f"serve-{port}.log"  # its stdout and stderr
        self.out = self.log.open("wb")
        cmd = [sys.executable, "-m", "wgtpm", "registry", "serve", "--data", str(data)]
        cmd += ["--port", str(port), "--sumdb-name", "sum.test", *flags]
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, (data / f"serve-{port}.log").read_text()
            time.sleep(0.1)
        key = subprocess.run(
            [sys.executable, "-m", "wgtpm", "registry", "key", "--data", str(data)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        self.vkey = key.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()


@pytest.fixture
def serve(tmp_path: Path, hub: HuggingFaceServer) -> Iterator[Callable[..., Registry]]:
    """Start registries on ``tmp_path/reg`` (one data folder); all stopped at the end."""
    started: list[Registry] = []

    def start(*flags: str) -> Registry:
        r = Registry(tmp_path / "reg", hub, *flags)
        started.append(r)
        return r

    yield start
    for r in started:
        if r.proc.poll() is None:
            r.stop()


def upstream_files(qwen: dict[str, bytes]) -> list[str]:
    return sorted(qwen)  # .gitattributes is a dot file: a module does not hold it


def snapshot(url: str, cache: Path, revision: str) -> dict[str, bytes]:
    d = Path(
        hh.snapshot_download(REPO, revision=revision, endpoint=url, cache_dir=cache, token=False)
    )
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def lookup(url: str, vkey: str, module: str, version: str) -> list[str]:
    """The module's lines in the registry's checksum log, through wgtpm's verifying client."""
    from tests.sumdb.server import MemoryOps

    http = httpx.Client(base_url=f"{url}/sumdb/sum.test", timeout=30)

    def remote(path: str) -> bytes:
        r = http.get(path)
        if r.status_code in (404, 410):
            raise NotFoundError(path, None, r.text)
        assert r.status_code == 200, r.text
        return r.content

    try:
        client = Client(vkey, MemoryOps(remote))
        return client.lookup(module, version) + client.lookup(module, version + "/wgt.mod")
    finally:
        http.close()


def resolve_gets(log: RequestLog) -> Counter[str]:
    """Upstream downloads of each file: Hub resolve GETs and CDN GETs."""
    got = [s.path.split("?")[0] for s in log.where(server="hf", method="GET", path="/*/resolve/*")]
    got += [s.path.split("?")[0] for s in log.where(server="cdn", method="GET")]
    return Counter(got)


class _NoSleep:
    """``time`` for huggingface_hub's retry loop, without the waits."""

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        return None


def chain(exc: BaseException | None) -> str:
    out = []
    while exc is not None:
        out.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return "\n".join(out)


def test_huggingface_hub_and_transformers_through_the_registry(
    serve: Callable[..., Registry],
    hub: HuggingFaceServer,
    qwen: dict[str, bytes],
    log: RequestLog,
    tmp_path: Path,
) -> None:
    reg = serve("--upstream", "direct", "--hf-allow", "acme/*")
    repo: HfRepo = hub.repos[REPO]
    head = repo.branches["main"]

    # many clients at once: every file crosses from the upstream once
    results: list[dict[str, bytes]] = []
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            results.append(snapshot(reg.url, tmp_path / f"c{i}", "main"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, chain(errors[0])
    assert all(r == qwen for r in results)  # the same bytes as the upstream, nothing else
    per_file = resolve_gets(log)
    assert per_file and max(per_file.values()) == 1, per_file

    # the API: info with blobs, files, refs, a tag, a short commit
    api = hh.HfApi(endpoint=reg.url, token="hf_not_a_registry_token")  # an HF token is ignored
    info = api.model_info(REPO, files_metadata=True)
    assert info.sha == head
    assert sorted(s.rfilename for s in info.siblings or []) == upstream_files(qwen)
    st = next(s for s in info.siblings or [] if s.rfilename == "model.safetensors")
    assert st.lfs is not None and st.lfs.size == len(qwen["model.safetensors"])
    assert st.lfs.sha256 == repo.commits[head].files["model.safetensors"].sha256
    assert api.list_repo_files(REPO, revision="v0.1.0") == upstream_files(qwen)
    assert api.model_info(REPO, revision=head[:12]).sha == head
    refs = api.list_repo_refs(REPO)
    assert [(t.name, t.target_commit) for t in refs.tags] == [("v0.1.0", head)]
    path = hh.hf_hub_download(
        REPO, "config.json", revision="v0.1.0", endpoint=reg.url, cache_dir=tmp_path / "one"
    )
    assert Path(path).read_bytes() == qwen["config.json"]
    r = httpx.get(
        f"{reg.url}/{REPO}/resolve/main/model.safetensors", headers={"Range": "bytes=0-9"}
    )
    assert r.status_code == 206 and r.content == qwen["model.safetensors"][:10]
    assert r.headers["x-repo-commit"] == head and r.headers["accept-ranges"] == "bytes"
    assert r.headers["x-linked-size"] == str(len(qwen["model.safetensors"]))
    assert resolve_gets(log) == per_file  # all of it from the store

    # the version is in the checksum log, with the hashes of what the clients got (the
    # synthesised index lists the repository's files; its wgt.mod has the /wgt.mod line)
    mod = httpx.get(f"{reg.url}/{MODULE}/@v/v0.1.0.mod").content
    assert mod == f"module {MODULE}\n".encode()
    assert lookup(reg.url, reg.vkey, MODULE, "v0.1.0") == [
        f"{MODULE} v0.1.0 {h1(qwen)}",
        f"{MODULE} v0.1.0/wgt.mod {h1({'wgt.mod': mod})}",
    ]

    # the web page gives the line to paste
    page = httpx.get(f"{reg.url}/-/module/{MODULE}/@v/v0.1.0").text
    assert f"HF_ENDPOINT={reg.url} python -c" in page
    assert "AutoConfig.from_pretrained(&#x27;acme/tiny&#x27;, revision=&#x27;v0.1.0&#x27;)" in page

    # transformers, as a user runs it: HF_ENDPOINT in its environment
    script = (
        "import json, torch\n"
        "from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer\n"
        "c = AutoConfig.from_pretrained('acme/tiny', revision='v0.1.0')\n"
        "t = AutoTokenizer.from_pretrained('acme/tiny', revision='v0.1.0')\n"
        "m = AutoModelForCausalLM.from_pretrained('acme/tiny', revision='v0.1.0')\n"
        "w = m.model.embed_tokens.weight\n"
        "print(json.dumps([c.model_type, len(t), float(w.double().sum())]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=reg.url, HF_HOME=str(tmp_path / "tf-home"), HF_HUB_DISABLE_XET="1")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    model_type, vocab, _ = json.loads(done.stdout.strip().splitlines()[-1])
    assert model_type == "qwen3" and vocab == json.loads(qwen["config.json"])["vocab_size"]
    assert resolve_gets(log) == per_file


def test_tampered_upstream_bytes_are_refused(
    serve: Callable[..., Registry],
    cdn: CdnServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from huggingface_hub.utils import _http

    reg = serve("--upstream", "direct")
    cdn.inject(Fault.flip("/blobs/*", times=100))  # every LFS download is corrupted
    # the metadata comes from the index, which is fine: no file is fetched for it
    r = httpx.get(f"{reg.url}/api/models/{REPO}")
    assert r.status_code == 200 and r.json()["cardData"]["wgtpm"]["version"] == "v0.1.0"
    head = httpx.head(f"{reg.url}/{REPO}/resolve/main/model.safetensors")
    assert head.status_code == 200 and head.headers["x-linked-size"], head.headers
    # the bytes are fetched on the first GET, checked, and refused with the reason
    got = httpx.get(f"{reg.url}/{REPO}/resolve/main/model.safetensors")
    assert got.status_code == 502, got.headers
    assert "served bad bytes" in got.headers["x-error-message"], got.headers
    assert "nothing was kept" in got.json()["error"]
    # the client tries a 502 again a few times, with waits this test need not sit through
    monkeypatch.setattr(_http, "time", _NoSleep())
    with pytest.raises(Exception) as caught:
        hh.hf_hub_download(
            REPO, "model.safetensors", endpoint=reg.url, cache_dir=tmp_path / "c", token=False
        )
    assert "served bad bytes" in chain(caught.value)
    assert not list((tmp_path / "c").rglob("model.safetensors"))
    with pytest.raises(hh.errors.RepositoryNotFoundError, match="no repository acme/missing"):
        hh.HfApi(endpoint=reg.url).model_info("acme/missing")


BIG = "acme/big"
DRIP = {"chunk": 256 << 10, "delay": 0.4}  # 8 MiB in 32 pieces: about 13 s, and more than
BIG_SIZE = 8 << 20  # huggingface_hub's 10 s timeout, but never 10 s without a byte


def big_files() -> dict[str, bytes]:
    seed = hashlib.sha256(b"big").digest()
    weights = b"".join(
        hashlib.sha256(seed + i.to_bytes(4, "big")).digest() for i in range(BIG_SIZE // 32)
    )
    return {"config.json": b'{"model_type": "big"}\n', "model.safetensors": weights}


@pytest.fixture
def big(hub: HuggingFaceServer) -> dict[str, bytes]:
    files = big_files()
    hub.repo("acme", "big").commit(dict(files))
    hub.repos[BIG].tag("v0.1.0")
    return files


def test_a_slow_large_file_is_served_while_it_is_fetched(
    serve: Callable[..., Registry],
    cdn: CdnServer,
    big: dict[str, bytes],
    log: RequestLog,
    tmp_path: Path,
) -> None:
    reg = serve("--upstream", "direct")
    slow = cdn.inject(Fault.drip("/blobs/*", **DRIP))
    # the metadata is answered once the index is checked, before any large file is fetched
    t0 = time.monotonic()
    info = hh.HfApi(endpoint=reg.url).model_info(BIG, revision="v0.1.0")
    took = time.monotonic() - t0
    assert sorted(s.rfilename for s in info.siblings or []) == sorted(big)
    assert took < 5.0, f"the metadata took {took:.1f}s"
    assert slow.times == 1 and not list(log.where(server="cdn"))  # nothing fetched for it
    # and the version is logged already, with the h1 of every file: a client checking the
    # log can verify the first download of any of them
    assert lookup_or_none(reg, BIG) == [f"hf.co/{BIG} v0.1.0 {h1(big)}"]

    # two clients at once, with huggingface_hub's default timeouts: both get the bytes as
    # they come, from one upstream download, and the version is logged once it is whole
    got: dict[int, bytes] = {}
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            p = hh.hf_hub_download(
                BIG,
                "model.safetensors",
                revision="v0.1.0",
                endpoint=reg.url,
                cache_dir=tmp_path / f"c{i}",
                token=False,
            )
            got[i] = Path(p).read_bytes()
        except BaseException as exc:
            errors.append(exc)

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - t0
    assert not errors, chain(errors[0])
    assert got == {0: big["model.safetensors"], 1: big["model.safetensors"]}
    assert slow.times == 0 and took > 10.0  # it was slow, and more than the client's timeout
    blobs = list(log.where(server="cdn", method="GET"))
    assert len(blobs) == 1, blobs
    p = hh.hf_hub_download(
        BIG, "config.json", revision="v0.1.0", endpoint=reg.url, cache_dir=tmp_path / "c0"
    )
    assert Path(p).read_bytes() == big["config.json"]
    assert lookup_or_none(reg, BIG) == [f"hf.co/{BIG} v0.1.0 {h1(big)}"]  # logged once


def lookup_or_none(reg: Registry, repo: str) -> list[str] | None:
    try:
        return lookup(reg.url, reg.vkey, f"hf.co/{repo}", "v0.1.0")[:1]
    except NotFoundError:
        return None


def test_a_wrong_large_file_is_cut_short_and_then_refused(
    serve: Callable[..., Registry],
    cdn: CdnServer,
    big: dict[str, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from huggingface_hub.utils import _http

    reg = serve("--upstream", "direct")
    cdn.inject(Fault.flip("/blobs/*", times=100))
    url = f"{reg.url}/{BIG}/resolve/v0.1.0/model.safetensors"
    # streamed while fetched: the status is sent, so a wrong file can only be cut short,
    # before its last bytes (a client never holds a complete body of unverified bytes)
    received = 0
    with pytest.raises(httpx.RemoteProtocolError), httpx.stream("GET", url, timeout=60) as r:
        assert r.status_code == 200
        assert r.headers["content-length"] == str(BIG_SIZE)
        for chunk in r.iter_raw():
            received += len(chunk)
    assert received <= BIG_SIZE - HOLD
    # the server says so in one line, without a traceback
    said = reg.log.read_text()
    assert said.count("cut short model.safetensors") == 1 and "served bad bytes" in said, said
    assert "Traceback" not in said, said
    # the client resumes with a Range, which waits for a fetch: a 502 that says why
    monkeypatch.setattr(_http, "time", _NoSleep())
    with pytest.raises(hh.errors.HfHubHTTPError) as caught:
        hh.hf_hub_download(
            BIG,
            "model.safetensors",
            revision="v0.1.0",
            endpoint=reg.url,
            cache_dir=tmp_path / "c",
            token=False,
        )
    assert "served bad bytes" in chain(caught.value) and "nothing was kept" in chain(caught.value)
    assert not list((tmp_path / "c").rglob("model.safetensors"))
    # the log holds what the upstream's index states, which these bytes do not match
    assert lookup_or_none(reg, BIG) == [f"hf.co/{BIG} v0.1.0 {h1(big)}"]
    # nothing of it is stored, not even in part (the spool holds only what is in use)
    sha = hashlib.sha256(big["model.safetensors"]).hexdigest()
    store = tmp_path / "reg" / "blobs"
    assert not list(store.rglob(f"*{sha}*"))
    assert not [p for p in store.rglob("*") if p.is_file() and "tmp" in p.relative_to(store).parts]


def test_offline_serves_what_is_stored(
    serve: Callable[..., Registry],
    hub: HuggingFaceServer,
    qwen: dict[str, bytes],
    log: RequestLog,
    tmp_path: Path,
) -> None:
    online = serve("--upstream", "direct")
    assert snapshot(online.url, tmp_path / "c1", "v0.1.0") == qwen
    online.stop()
    repo = hub.repos[REPO]
    later = repo.commit({"config.json": b'{"later": true}'})
    seen = len(log)

    offline = serve("--upstream", "direct", "--offline")
    assert snapshot(offline.url, tmp_path / "c2", "v0.1.0") == qwen
    assert snapshot(offline.url, tmp_path / "c3", "main") == qwen  # the newest stored
    refs = hh.HfApi(endpoint=offline.url).list_repo_refs(REPO)
    tagged = repo.tags["v0.1.0"]
    assert [(t.name, t.target_commit) for t in refs.tags] == [("v0.1.0", tagged)]
    assert [(b.name, b.target_commit) for b in refs.branches] == [("main", tagged)]
    with pytest.raises(hh.errors.RevisionNotFoundError, match="offline"):
        hh.HfApi(endpoint=offline.url).model_info(REPO, revision=later)
    with pytest.raises(hh.errors.RepositoryNotFoundError, match="offline"):
        hh.HfApi(endpoint=offline.url).model_info("other/tiny")
    assert len(log) == seen  # the upstream was never asked


def test_hf_allow_refuses_other_repositories(
    serve: Callable[..., Registry], log: RequestLog
) -> None:
    reg = serve("--upstream", "direct", "--hf-allow", "acme/tiny")
    with pytest.raises(hh.errors.RepositoryNotFoundError, match="--hf-allow"):
        hh.HfApi(endpoint=reg.url).model_info("other/tiny")
    r = httpx.get(f"{reg.url}/other/tiny/resolve/main/config.json")
    assert r.status_code == 404 and r.headers["x-error-code"] == "RepoNotFound"
    assert "not mirrored" in r.json()["error"]
    assert not [s for s in log if "other/tiny" in s.path]


def test_hosted_private_repository_needs_a_read_token(
    serve: Callable[..., Registry], tmp_path: Path
) -> None:
    reg = serve()  # no upstream: hf.co/team/* is published here

    def token(scope: str) -> str:
        cmd = [sys.executable, "-m", "wgtpm", "registry", "token", "create"]
        done = subprocess.run(
            [*cmd, "--prefix", "hf.co/team", "--scope", scope, "--data", str(tmp_path / "reg")],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip().splitlines()[-1]

    files = {"wgt.mod": b"module hf.co/team/private\nwgt 0.1\n", "config.json": b'{"a": 1}\n'}
    with httpx.Client(base_url=reg.url, timeout=30) as c:
        r = publish(c, token("publish"), "hf.co/team/private", "v1.0.0", files, private=True)
        assert r.status_code in (200, 201), r.text
    read = token("read")
    api = hh.HfApi(endpoint=reg.url, token=read)
    info = api.model_info("team/private", revision="v1.0.0", files_metadata=True)
    assert info.sha and len(info.sha) == 40
    assert sorted(s.rfilename for s in info.siblings or []) == sorted(files)
    assert api.model_info("team/private").sha == info.sha  # main: the latest version
    got = hh.hf_hub_download(
        "team/private", "config.json", endpoint=reg.url, cache_dir=tmp_path / "c", token=read
    )
    assert Path(got).read_bytes() == files["config.json"]
    with pytest.raises(hh.errors.RepositoryNotFoundError):
        hh.HfApi(endpoint=reg.url, token=False).model_info("team/private")


@pytest.mark.parametrize(
    ("allow", "repo", "want"),
    [
        ("", "any/thing", True),
        ("acme/*", "acme/tiny", True),
        ("acme/*", "acmex/tiny", False),
        ("acme/*,Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B", True),
        ("acme/*,Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B", False),
        (" acme/tiny , ", "acme/tiny", True),
    ],
)
def test_hf_allow_list(allow: str, repo: str, want: bool) -> None:
    from registry.hfpolicy import HfPolicy

    assert HfPolicy.parse(allow).allows(repo) is want


@pytest.mark.parametrize("bad", ["acme", "*/tiny", "acme/ti*", "acme/tiny/x", "/tiny"])
def test_hf_allow_list_refuses_malformed_entries(bad: str) -> None:
    from registry.hfpolicy import HfPolicy

    with pytest.raises(ValueError, match="OWNER/REPO or OWNER/"):
        HfPolicy.parse(bad)


@pytest.mark.parametrize(
    ("path", "size", "lfs"),
    [
        ("model.safetensors", 10, True),
        ("sub/pytorch_model.bin", 10, True),
        ("tokenizer.model", 10, True),
        ("config.json", 10, False),
        ("big.json", 10 << 20, True),
    ],
)
def test_lfs_files_as_the_hub_makes_them(path: str, size: int, lfs: bool) -> None:
    from registry.hfmirror import is_lfs

    assert is_lfs(path, size) is lfs


def test_git_blob_id_is_gits() -> None:
    from registry.hfmirror import git_blob_id

    assert (
        git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    )  # git hash-object /dev/null
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


@pytest.fixture(params=["sqlite+folder", "postgresql+s3"])
def stores(request: pytest.FixtureRequest) -> list[str]:
    """``serve`` flags for the stores: the data folder's, then PostgreSQL and moto's S3."""
    if request.param == "sqlite+folder":
        return []
    pg = request.getfixturevalue("postgres")
    db = pg.create_database(f"hf_{uuid.uuid4().hex[:12]}")
    return ["--db", db, "--store", request.getfixturevalue("s3_url")]


def test_two_registry_processes_on_one_database_serve_one_indexed_version(
    serve: Callable[..., Registry],
    stores: list[str],
    big: dict[str, bytes],
    log: RequestLog,
    tmp_path: Path,
) -> None:
    a = serve("--upstream", "direct", *stores)
    b = serve("--upstream", "direct", *stores)  # one database, one store
    info = hh.HfApi(endpoint=a.url).model_info(BIG, revision="v0.1.0", files_metadata=True)
    assert sorted(s.rfilename for s in info.siblings or []) == sorted(big)
    assert lookup_or_none(a, BIG) == [f"hf.co/{BIG} v0.1.0 {h1(big)}"]

    # b serves the version a indexed and logged: its recorded index, its stored small file
    doc = httpx.get(f"{b.url}/api/models/{BIG}/revision/v0.1.0").json()
    assert doc["sha"] == info.sha and doc["cardData"]["wgtpm"]["h1"] == h1(big)
    got = hh.hf_hub_download(
        BIG, "model.safetensors", revision="v0.1.0", endpoint=b.url, cache_dir=tmp_path / "b"
    )
    assert Path(got).read_bytes() == big["model.safetensors"]
    cfg = httpx.get(f"{b.url}/{BIG}/resolve/v0.1.0/config.json")
    assert cfg.status_code == 200 and cfg.content == big["config.json"]
    assert len(log.where(server="cdn", method="GET")) == 1

    # a serves the file b fetched from the store, and the version is committed, logged once
    got = hh.hf_hub_download(
        BIG, "model.safetensors", revision="v0.1.0", endpoint=a.url, cache_dir=tmp_path / "a"
    )
    assert Path(got).read_bytes() == big["model.safetensors"]
    assert len(log.where(server="cdn", method="GET")) == 1
    seen = len(log)
    for reg in (a, b):
        r = httpx.get(f"{reg.url}/hf.co/{BIG}/@v/v0.1.0.info")
        assert r.status_code == 200 and r.json()["Version"] == "v0.1.0", r.text
        assert lookup_or_none(reg, BIG) == [f"hf.co/{BIG} v0.1.0 {h1(big)}"]
    assert len(log) == seen  # committed: nothing asked of the upstream for it
