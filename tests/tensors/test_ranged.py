"""Only the tensors you use, still verified: ranged reads of single tensors (rangeread.py).

A tiny Qwen3 on the loopback Hugging Face Hub, whose repository holds the release's
``wgt.tensors.json`` (so the synthesised index lists it and h1 locks it); its
``model.safetensors`` is an LFS file that the Hub redirects to the loopback CDN,
which counts the bytes it serves and can serve a copy with one byte flipped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TINY_QWEN3, TINY_QWEN3_VERSION, publish_tiny_qwen3
from tests.registry.conftest import Live
from tests.servers import CdnServer, Request, Response
from tests.servers.huggingface import HuggingFaceServer
from wgtpm.modfile import parse
from wgtpm.tensors import TensorTables, compute_table, dump_tables

MODULE = TINY_QWEN3
VERSION = TINY_QWEN3_VERSION
EMBED = "model.embed_tokens.weight"
NORM = "model.norm.weight"
WEIGHTS = "model.safetensors"
#: What a ranged read may move besides the tensor: the Hub's redirect, the CDN's
#: response headers (bodies of other requests are counted too).
SLACK = 4096
TOKEN = "hf_ranged_secret"


class CountingCdn(CdnServer):
    """The CDN, counting the body bytes it serves; ``tamper[sha256]`` replaces a blob's bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.served = 0
        self.tamper: dict[str, bytes] = {}
        self.ignore_range = False  # answer 200 with the whole blob
        self.shift_range = 0  # answer the range asked for, moved by this many bytes

    def route(self, req: Request) -> Response:
        digest = req.segments[1] if len(req.segments) > 1 else ""
        if digest in self.tamper:
            with self._lock:
                self._blobs[digest] = self.tamper[digest]
        rng = req.header("range")
        if rng and (self.ignore_range or self.shift_range):
            a, b = rng.removeprefix("bytes=").split("-")
            moved = f"bytes={int(a) + self.shift_range}-{int(b) + self.shift_range}"
            headers = [(k, v) for k, v in req.headers if k.lower() != "range"]
            if not self.ignore_range:
                headers.append(("Range", moved))
            req = dataclasses.replace(req, headers=tuple(headers))
        resp = super().route(req)
        if req.method == "GET":
            with self._lock:
                self.served += len(resp.body)
        return resp


class CountingHub(HuggingFaceServer):
    def __init__(self, cdn: CdnServer) -> None:
        super().__init__(cdn, token=TOKEN)
        self.served = 0

    def route(self, req: Request) -> Response:
        resp = super().route(req)
        if req.method == "GET":
            with self._lock:
                self.served += len(resp.body)
        return resp


def ranges(data: bytes) -> dict[str, tuple[int, int]]:
    """Each tensor's absolute byte range in safetensors ``data``, read here independently."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    return {
        k: (8 + n + v["data_offsets"][0], 8 + n + v["data_offsets"][1])
        for k, v in header.items()
        if k != "__metadata__"
    }


def flipped(data: bytes, name: str) -> bytes:
    start, end = ranges(data)[name]
    i = (start + end) // 2
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1 :]


@pytest.fixture(scope="session")
def files(tiny_qwen3: Path, tiny_qwen3_files: dict[str, bytes]) -> dict[str, bytes]:
    """The tiny Qwen3's files and its release tables (``wgt.tensors.json``)."""
    table = compute_table(tiny_qwen3 / WEIGHTS, WEIGHTS)
    return {**tiny_qwen3_files, "wgt.tensors.json": dump_tables(TensorTables({WEIGHTS: table}))}


@pytest.fixture
def cdn() -> Iterator[CountingCdn]:
    with CountingCdn() as server:
        yield server


@pytest.fixture
def hub(
    cdn: CountingCdn, files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> Iterator[CountingHub]:
    with CountingHub(cdn) as server:
        publish_tiny_qwen3(server, files)
        notables = {k: v for k, v in files.items() if k != "wgt.tensors.json"}
        publish_tiny_qwen3(server, notables, name="no-tables")
        server.repo("acme", "private-qwen3", private=True)
        publish_tiny_qwen3(server, files, name="private-qwen3")
        monkeypatch.setenv("WGTPROXY", "direct")
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        yield server


def project(tmp_path: Path, *selects: str, module: str = MODULE) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    lines = "".join(f"select {module} {s}\n" for s in selects)
    (d / "wgt.mod").write_text(f"module example.com/enc\n\nwgt 0.1\n\n{lines}")
    return d


def cache_root() -> Path:
    import os

    return Path(os.environ["WGTPM_CACHE"])


def tensor_blobs() -> list[Path]:
    d = cache_root() / "tensors" / "blobs"
    return sorted(p for p in d.rglob("*") if p.is_file()) if d.is_dir() else []


def tree() -> Path:
    return next((cache_root() / "mod").glob("hf.co/acme/tiny-qwen3@*"))


def test_select_tensor_get_moves_only_that_range(
    hub: CountingHub, cdn: CountingCdn, files: dict[str, bytes], tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code == 0, r.err
    start, end = ranges(files[WEIGHTS])[EMBED]
    want = files[WEIGHTS][start:end]
    assert end - start < len(files[WEIGHTS]) // 2  # reading it whole would show
    assert cdn.served <= end - start + SLACK
    assert not (tree() / WEIGHTS).exists()  # the file is not downloaded whole
    assert (tree() / "wgt.tensors.json").is_file()
    (blob,) = tensor_blobs()
    assert blob.name == hashlib.sha256(want).hexdigest()
    assert blob.read_bytes() == want
    # the whole release is still locked by one h1 line, as without select
    assert f"{MODULE} {VERSION} h1:" in (d / "wgt.sum").read_text()


def test_open_reads_an_unselected_tensor_by_range(
    hub: CountingHub, cdn: CountingCdn, files: dict[str, bytes], tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    import wgtpm as api

    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    assert wgtpm("get", f"{MODULE}@{VERSION}", cwd=d).code == 0
    cdn.served = hub.served = 0
    qwen = api.open(MODULE, project_dir=d)
    norm = qwen.tensor(NORM)
    start, end = ranges(files[WEIGHTS])[NORM]
    assert hub.served + cdn.served <= end - start + SLACK
    assert norm.numpy().tobytes() == files[WEIGHTS][start:end]
    assert not (tree() / WEIGHTS).exists()
    # read again: from the cache's verified copy, nothing over the network
    cdn.served = 0
    assert torch.equal(api.open(MODULE, project_dir=d).tensor(NORM), norm)
    assert cdn.served == 0
    with pytest.raises(api.NotFoundError, match="select the file whole"):
        qwen.verify_weights()  # load() needs the file whole: one clear line


def test_flipped_byte_refused_by_range_and_whole(
    hub: CountingHub, cdn: CountingCdn, files: dict[str, bytes], tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    sha = hashlib.sha256(files[WEIGHTS]).hexdigest()
    cdn.tamper[sha] = flipped(files[WEIGHTS], EMBED)
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code != 0
    assert "checksum mismatch" in r.err
    assert f"tensor {EMBED} of {WEIGHTS}" in r.err and f"{MODULE}@{VERSION}" in r.err
    assert "Traceback" not in r.err
    assert tensor_blobs() == []  # nothing cached
    # the whole file, fetched by a project without select lines, is refused too
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "wgt.mod").write_text("module example.com/whole\n\nwgt 0.1\n")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=whole)
    assert r.code != 0 and "corrupt or tampered" in r.err, r.err
    assert not any(p.name == WEIGHTS for p in (cache_root() / "mod").rglob(WEIGHTS))


def test_flipped_byte_refused_by_open(
    hub: CountingHub, cdn: CountingCdn, files: dict[str, bytes], tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    import wgtpm as api
    from wgtpm import ChecksumMismatchError

    sha = hashlib.sha256(files[WEIGHTS]).hexdigest()
    cdn.tamper[sha] = flipped(files[WEIGHTS], NORM)  # the selected EMBED is intact
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    assert wgtpm("get", f"{MODULE}@{VERSION}", cwd=d).code == 0
    before = tensor_blobs()
    qwen = api.open(MODULE, project_dir=d)
    with pytest.raises(ChecksumMismatchError) as exc:
        qwen.tensor(NORM)
    assert f"tensor {NORM} of {WEIGHTS}" in str(exc.value)
    assert f"{MODULE}@{VERSION}" in str(exc.value)
    assert tensor_blobs() == before  # nothing cached


def test_prefix_select(
    hub: CountingHub, cdn: CountingCdn, files: dict[str, bytes], tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    d = project(tmp_path, f"{WEIGHTS}#model.layers.0.*")
    assert wgtpm("get", f"{MODULE}@{VERSION}", cwd=d).code == 0
    picked = {k: v for k, v in ranges(files[WEIGHTS]).items() if k.startswith("model.layers.0.")}
    assert len(tensor_blobs()) == len({files[WEIGHTS][s:e] for s, e in picked.values()})
    assert cdn.served <= sum(e - s for s, e in picked.values()) + SLACK * len(picked)


def test_release_without_tables_gets_the_whole_file(
    hub: CountingHub, files: dict[str, bytes], tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    module = "hf.co/acme/no-tables"
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}", module=module)
    r = wgtpm("get", f"{module}@{VERSION}", cwd=d)
    assert r.code == 0, r.err
    t = next((cache_root() / "mod").glob("hf.co/acme/no-tables@*"))
    assert (t / WEIGHTS).read_bytes() == files[WEIGHTS]
    assert tensor_blobs() == []


def test_unknown_tensor_named(hub: CountingHub, tmp_path: Path, wgtpm) -> None:  # type: ignore[no-untyped-def]
    d = project(tmp_path, f"{WEIGHTS}#model.embed_token.weight")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code != 0
    assert "model.embed_token.weight" in r.err and "Traceback" not in r.err
    assert "model.embed_tokens.weight" in r.err  # the close match


@pytest.mark.parametrize(
    "item,why",
    [
        ("model.safetensors#", "FILE#TENSOR"),
        ("#x", "FILE#TENSOR"),
        ("*.safetensors#x", "not a glob"),
        ("model.bin#x", ".safetensors and .gguf"),
        ("model.safetensors#a*b", "FILE#TENSOR"),
    ],
)
def test_bad_tensor_select(item: str, why: str) -> None:
    from wgtpm._errors import ParseError

    with pytest.raises(ParseError) as exc:
        parse(f"module a.example/b\nselect hf.co/a/b {item}\n".encode(), "wgt.mod")
    assert why in str(exc.value) and "wgt.mod:2" in str(exc.value)


def test_select_syntax() -> None:
    mf = parse(
        b"module a.example/b\nselect hf.co/a/b config.json m.safetensors#w m.safetensors#l.0.*\n",
        "wgt.mod",
    )
    assert mf.select_patterns("hf.co/a/b") == ["config.json", "wgt.tensors.json"]
    assert mf.select_tensors("hf.co/a/b") == [("m.safetensors", "w"), ("m.safetensors", "l.0.*")]


def test_token_stays_on_the_hub(
    hub: CountingHub, cdn: CountingCdn, tmp_path: Path, wgtpm, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """A private repository's token goes to the Hub, never with the range to the CDN
    (which refuses a request carrying credentials, as S3 does)."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    module = "hf.co/acme/private-qwen3"
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}", module=module)
    r = wgtpm("get", f"{module}@{VERSION}", cwd=d)
    assert r.code == 0, r.err
    assert len(tensor_blobs()) == 1
    seen = cdn.log.where(server="cdn")
    assert seen and all(s.header("authorization") is None for s in seen)
    assert any(s.header("range") for s in seen)
    assert TOKEN not in r.err + r.out


def test_ignored_range_small_file_is_cut(
    hub: CountingHub, cdn: CountingCdn, files: dict[str, bytes], tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    cdn.ignore_range = True
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    assert wgtpm("get", f"{MODULE}@{VERSION}", cwd=d).code == 0
    start, end = ranges(files[WEIGHTS])[EMBED]
    ((blob,),) = [tensor_blobs()]
    assert blob.read_bytes() == files[WEIGHTS][start:end]


def test_ignored_range_large_file_comes_whole(
    hub: CountingHub,
    cdn: CountingCdn,
    files: dict[str, bytes],
    tmp_path: Path,
    wgtpm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    """A server that ignores Range for a file too large to cut: the normal verified download."""
    from wgtpm import rangeread

    monkeypatch.setattr(rangeread, "MAX_IGNORED_RANGE", 1024)
    cdn.ignore_range = True
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code == 0, r.err
    assert (tree() / WEIGHTS).read_bytes() == files[WEIGHTS]
    assert tensor_blobs() == []


def test_wrong_content_range_refused(
    hub: CountingHub, cdn: CountingCdn, tmp_path: Path, wgtpm
) -> None:  # type: ignore[no-untyped-def]
    cdn.shift_range = 4
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code != 0
    assert "Content-Range" in r.err and f"{MODULE}@{VERSION}" in r.err, r.err
    assert tensor_blobs() == []


def test_vendor_holds_the_selected_tensors_verified(
    hub: CountingHub,
    cdn: CountingCdn,
    files: dict[str, bytes],
    tmp_path: Path,
    wgtpm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    """``wgtpm vendor`` writes vendor/MODULE/FILE#tensors/SHA256 (not FILE); -mod=vendor
    reads the tensor from there with no network, checked against the locked tables,
    and refuses a vendored tensor that was changed."""
    torch = pytest.importorskip("torch")
    import wgtpm as api
    from wgtpm._errors import VerifyError

    d = project(tmp_path, f"{WEIGHTS}#{EMBED}")
    assert wgtpm("get", f"{MODULE}@{VERSION}", cwd=d).code == 0
    r = wgtpm("vendor", cwd=d)
    assert r.code == 0, r.err
    start, end = ranges(files[WEIGHTS])[EMBED]
    sha = hashlib.sha256(files[WEIGHTS][start:end]).hexdigest()
    vendored = d / "vendor" / MODULE / f"{WEIGHTS}#tensors" / sha
    assert vendored.read_bytes() == files[WEIGHTS][start:end]
    assert not (d / "vendor" / MODULE / WEIGHTS).exists()
    doc = json.loads((d / "vendor" / "wgt.vendor.json").read_text())
    (mod,) = doc["modules"]
    assert mod["tensors"] == [{"file": WEIGHTS, "tensor": EMBED, "sha256": sha}]

    monkeypatch.setenv("WGTFLAGS", "-mod=vendor")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no network
    emb = api.open(MODULE, project_dir=d).tensor(EMBED)
    assert emb.numpy().tobytes() == files[WEIGHTS][start:end]
    assert isinstance(emb, torch.Tensor)

    vendored.chmod(0o644)
    vendored.write_bytes(flipped(files[WEIGHTS], EMBED)[start:end])
    with pytest.raises(VerifyError):
        api.open(MODULE, project_dir=d)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """A wgtpm registry on SQLite and a folder (tests/registry), on loopback."""
    from tests.registry.conftest import _live

    yield from _live(f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "blobs"), tmp_path / "spool")


def git(cwd: Path, *args: str) -> None:
    import os
    import subprocess

    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null")
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "Test", "test@example.com"
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _publish_to(  # type: ignore[no-untyped-def]
    live: Live, data: bytes, tmp_path: Path, wgtpm, monkeypatch: pytest.MonkeyPatch
) -> list[Path]:
    """Publish ``data`` as model.safetensors of example.com/qwen v0.1.0 to ``live``; the
    blob files of model.safetensors in the registry's store."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / WEIGHTS).write_bytes(data)
    (pkg / "wgt.mod").write_text(
        f"module example.com/qwen\n\nwgt 0.1\n\nartifact weights {WEIGHTS}\n"
    )
    git(pkg, "init", "-q", "-b", "main")
    git(pkg, "add", "-A")
    git(pkg, "commit", "-q", "-m", "weights")
    monkeypatch.setenv("WGTPM_TOKEN", live.token)
    r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=pkg)
    assert r.code == 0, r.err
    monkeypatch.setenv("WGTPROXY", live.url)
    stored = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file() and p.read_bytes() == data]
    assert stored, "the registry's blob of model.safetensors"
    return stored


def _whole_project(tmp_path: Path) -> Path:
    whole = tmp_path / "whole"
    whole.mkdir(exist_ok=True)
    (whole / "wgt.mod").write_text("module example.com/whole\n\nwgt 0.1\n")
    return whole


def test_published_release_read_by_range_from_a_registry(
    files: dict[str, bytes],
    tmp_path: Path,
    live: Live,
    wgtpm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    """``wgtpm publish`` puts wgt.tensors.json in the release (h1 locks it); a consumer's
    select FILE#TENSOR reads the tensor by range from the registry, and a byte flipped in
    the registry's stored blob is refused by range (nothing cached)."""
    stored = _publish_to(live, files[WEIGHTS], tmp_path, wgtpm, monkeypatch)
    d = project(tmp_path, f"{WEIGHTS}#{EMBED}", module="example.com/qwen")
    r = wgtpm("get", "example.com/qwen@v0.1.0", cwd=d)
    assert r.code == 0, r.err
    t = next((cache_root() / "mod").glob("example.com/qwen@*"))
    assert (t / "wgt.tensors.json").is_file() and not (t / WEIGHTS).exists()
    start, end = ranges(files[WEIGHTS])[EMBED]
    (blob,) = tensor_blobs()
    assert blob.read_bytes() == files[WEIGHTS][start:end]

    for p in stored:
        p.chmod(0o644)
        p.write_bytes(flipped(files[WEIGHTS], EMBED))
    import shutil

    shutil.rmtree(cache_root() / "tensors" / "blobs")
    r = wgtpm("get", "example.com/qwen@v0.1.0", cwd=d)
    assert r.code != 0 and "checksum mismatch" in r.err, r.err
    assert f"tensor {EMBED} of {WEIGHTS}" in r.err and "example.com/qwen@v0.1.0" in r.err
    assert tensor_blobs() == []
    # A whole-file GET now is answered from the registry's memory, which kept the blob
    # (checked against its address) when the range request read it before the flip: the
    # original bytes, a verified copy, never the flipped ones.
    r = wgtpm("get", "example.com/qwen@v0.1.0", cwd=_whole_project(tmp_path))
    assert r.code == 0, r.err
    got = next((cache_root() / "mod").glob("example.com/qwen@*")) / WEIGHTS
    assert got.read_bytes() == files[WEIGHTS]


def test_a_blob_flipped_in_the_registry_is_refused_whole_and_never_kept(
    files: dict[str, bytes],
    tmp_path: Path,
    live: Live,
    wgtpm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    """A byte flipped in the registry's stored blob before anyone read it: the whole file is
    refused by the client, and the registry keeps no copy of the bytes it read, so once
    the operator repairs the blob the file is served right (before the fix, its memory
    kept the flipped bytes and served them until it restarted)."""
    stored = _publish_to(live, files[WEIGHTS], tmp_path, wgtpm, monkeypatch)
    for p in stored:
        p.chmod(0o644)
        p.write_bytes(flipped(files[WEIGHTS], EMBED))
    whole = _whole_project(tmp_path)
    for _ in range(2):  # the second GET may be answered from memory: the same refusal
        r = wgtpm("get", "example.com/qwen@v0.1.0", cwd=whole)
        assert r.code != 0 and "corrupt or tampered" in r.err, r.err
    for p in stored:
        p.write_bytes(files[WEIGHTS])
    r = wgtpm("get", "example.com/qwen@v0.1.0", cwd=whole)
    assert r.code == 0, r.err
