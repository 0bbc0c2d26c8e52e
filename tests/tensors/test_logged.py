"""Tensor tables a registry computes and logs for Hugging Face versions (registry/tensortables.py).

The tiny Qwen3 on the loopback Hub, without a ``wgt.tensors.json`` of its own; a
``wgtpm registry serve --upstream direct`` process in front of it (tests/registry's
``Registry``). A consumer with ``WGTPROXY=<registry>`` and ``WGTSUMDB=<its key>``
and ``select ... model.safetensors#TENSOR`` gets the tables the registry
computed from the verified file, proves them against the log
(``M V/wgt.tensors.json h1:``), and reads the tensor by range: the file is not
downloaded. Its h1 in wgt.sum is the one a direct get records. Without a checksum
database, the file comes whole as before; tables the log does not vouch for are a
SECURITY ERROR.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import TINY_QWEN3, TINY_QWEN3_VERSION, publish_tiny_qwen3
from tests.registry.test_hf_mirror import Registry, lookup
from tests.servers import CdnServer
from tests.servers.huggingface import HuggingFaceServer
from tests.sumdb.server import MemoryOps
from wgtpm.dirhash import hash1_bytes
from wgtpm.sumdb.client import Client
from wgtpm.tensors import TensorTables, compute_table, dump_tables

from .test_ranged import EMBED, NORM, WEIGHTS, ranges

MODULE, VERSION = TINY_QWEN3, TINY_QWEN3_VERSION


@pytest.fixture
def hub(cdn: CdnServer, tiny_qwen3_files: dict[str, bytes]) -> Iterator[HuggingFaceServer]:
    with HuggingFaceServer(cdn) as server:
        publish_tiny_qwen3(server, tiny_qwen3_files)
        yield server


@pytest.fixture
def registry(tmp_path: Path, hub: HuggingFaceServer) -> Iterator[Registry]:
    reg = Registry(tmp_path / "reg", hub, "--upstream", "direct", "--hf-allow", "acme/*")
    try:
        yield reg
    finally:
        reg.stop()


def consumer(root: Path, name: str, *selects: str) -> Path:
    d = root / name
    d.mkdir()
    lines = "".join(f"select {MODULE} {s}\n" for s in selects)
    (d / "wgt.mod").write_text(f"module example.com/{name}\n\nwgt 0.1\n\n{lines}")
    return d


def cache() -> Path:
    return Path(os.environ["WGTPM_CACHE"])


def tree() -> Path:
    return next((cache() / "mod").glob("hf.co/acme/tiny-qwen3@*"))


def sum_line(d: Path) -> str:
    return next(ln for ln in (d / "wgt.sum").read_text().splitlines() if "/wgt.mod" not in ln)


def test_logged_tables_read_by_range_through_the_registry(
    registry: Registry,
    hub: HuggingFaceServer,
    tiny_qwen3: Path,
    tiny_qwen3_files: dict[str, bytes],
    tmp_path: Path,
    wgtpm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    import wgtpm as api

    data = tiny_qwen3_files[WEIGHTS]
    want = dump_tables(TensorTables({WEIGHTS: compute_table(tiny_qwen3 / WEIGHTS, WEIGHTS)}))

    # direct, for the h1 a direct get records
    monkeypatch.setenv("WGTPROXY", "direct")
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    direct = consumer(tmp_path, "direct")
    assert wgtpm("get", f"{MODULE}@{VERSION}", cwd=direct).code == 0

    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "cache2"))
    monkeypatch.setenv("WGTPROXY", registry.url)
    monkeypatch.setenv("WGTSUMDB", registry.vkey)
    d = consumer(tmp_path, "ranged", f"{WEIGHTS}#{EMBED}")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code == 0, r.err
    assert sum_line(d) == sum_line(direct)  # one h1, whichever way the module came
    assert not (tree() / WEIGHTS).exists()  # not downloaded whole
    kept = cache() / "download" / "hf.co/acme/tiny-qwen3/@v" / f"{VERSION}.tensors.json"
    assert kept.read_bytes() == want  # the registry computed exactly the client's tables
    start, end = ranges(data)[EMBED]
    (blob,) = (p for p in (cache() / "tensors" / "blobs").rglob("*") if p.is_file())
    assert blob.read_bytes() == data[start:end]

    # the record is in the log: a second record of the version, beside its wgt.sum lines
    lines = lookup(registry.url, registry.vkey, MODULE, VERSION)
    assert lines[0] == sum_line(direct)
    http = httpx.Client(base_url=f"{registry.url}/sumdb/sum.test", timeout=30)
    try:
        client = Client(registry.vkey, MemoryOps(lambda p: http.get(p).content))
        got = client.lookup(MODULE, f"{VERSION}/wgt.tensors.json")
    finally:
        http.close()
    assert got == [f"{MODULE} {VERSION}/wgt.tensors.json {hash1_bytes({'wgt.tensors.json': want})}"]

    # a tensor no select line names: by range too, with the kept tables
    qwen = api.open(MODULE, project_dir=d)
    norm = qwen.tensor(NORM)
    start, end = ranges(data)[NORM]
    assert norm.numpy().tobytes() == data[start:end]
    assert isinstance(norm, torch.Tensor)
    assert not (tree() / WEIGHTS).exists()


def test_without_a_checksum_database_the_file_comes_whole(
    registry: Registry,
    tiny_qwen3_files: dict[str, bytes],
    tmp_path: Path,
    wgtpm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WGTPROXY", registry.url)
    d = consumer(tmp_path, "whole", f"{WEIGHTS}#{EMBED}")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code == 0, r.err
    assert (tree() / WEIGHTS).read_bytes() == tiny_qwen3_files[WEIGHTS]


def test_tables_the_log_does_not_hold_are_a_security_error(
    registry: Registry,
    tmp_path: Path,
    wgtpm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    url = f"{registry.url}/hf.co/acme/tiny-qwen3/@v/{VERSION}.tensors.json"
    served = httpx.get(url, timeout=60)
    assert served.status_code == 200, served.text  # computed and logged now
    sha = hashlib.sha256(served.content).hexdigest()
    (stored,) = (tmp_path / "reg").rglob(sha)
    other = served.content.replace(b'"F32"', b'"F16"', 1)  # still parses; not what was logged
    stored.chmod(0o644)
    stored.write_bytes(other)
    monkeypatch.setenv("WGTPROXY", registry.url)
    monkeypatch.setenv("WGTSUMDB", registry.vkey)
    d = consumer(tmp_path, "lied", f"{WEIGHTS}#{EMBED}")
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code != 0
    assert "SECURITY ERROR" in r.err and "tensor tables" in r.err, r.err
    assert "Traceback" not in r.err
    assert not (cache() / "tensors" / "blobs").exists()


def test_registry_answers_404_where_it_logs_no_tables(
    registry: Registry, hub: HuggingFaceServer, tiny_qwen3_files: dict[str, bytes]
) -> None:
    publish_tiny_qwen3(hub, {"config.json": tiny_qwen3_files["config.json"]}, name="no-weights")
    url = f"{registry.url}/hf.co/acme/no-weights/@v/{VERSION}.tensors.json"
    r = httpx.get(url, timeout=60)
    assert r.status_code == 404 and "no .safetensors or .gguf" in r.text, r.text
    broken = {"model.safetensors": b"\xff" * 64}  # a header length past the file's end
    publish_tiny_qwen3(hub, broken, name="broken")
    url = f"{registry.url}/hf.co/acme/broken/@v/{VERSION}.tensors.json"
    for _ in range(2):  # the second from memory (registry.tensortables.REFUSED_TTL)
        r = httpx.get(url, timeout=60)
        assert r.status_code == 404 and "no tensor tables" in r.text, r.text
        assert "model.safetensors" in r.text
