"""Two registry replicas on one database and one blob store, mirroring one Hugging Face
repository file by file (``registry/ondemand.py``), counted on the loopback Hub.

``test_hf_mirror.py`` runs two ``registry serve`` processes through the real
``huggingface_hub``; these replicas live in this process, so that every
request the Hub sees can be counted against what each replica had to ask.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from registry.hfmirror import is_lfs
from registry.metadata import open_metadata_store
from registry.ondemand import OnDemand, Pending
from registry.proxy import open_proxy
from registry.service import Registry
from registry.stores import open_blob_store
from tests.servers import CdnServer, RequestLog
from tests.servers.huggingface import HuggingFaceServer

M = "hf.co/acme/tiny"
WEIGHTS = bytes(range(256)) * 64
FILES = {
    "config.json": b'{"hidden": 8}',
    "tokenizer/vocab.txt": b"a\nb\n",
    "model.safetensors": WEIGHTS,
}


@pytest.fixture
def hub(
    cdn: CdnServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[HuggingFaceServer]:
    """The loopback Hub with ``acme/tiny`` tagged v0.1.0; the replicas' ``direct`` reaches it."""
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"):
        monkeypatch.delenv(var, raising=False)
    with HuggingFaceServer(cdn) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no saved token
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        repo = server.repo("acme", "tiny")
        repo.commit(FILES)
        repo.tag("v0.1.0")
        yield server


@pytest.fixture
def replicas(hub: HuggingFaceServer, tmp_path: Path) -> Iterator[list[OnDemand]]:
    """Two registries on one SQLite database and one blob folder, each with its own
    upstream chain and spool, as two ``registry serve --upstream direct`` processes."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    open_metadata_store(db).close()  # migrated once, before the replicas open it
    regs = [
        Registry(
            open_metadata_store(db, migrate=False),
            open_blob_store(str(tmp_path / "blobs"), spool=tmp_path / f"spool{i}"),
            proxy=open_proxy("direct", tmp_path / f"proxy{i}"),
        )
        for i in range(2)
    ]
    ods = [OnDemand(r, lambda path, size: not is_lfs(path, size)) for r in regs]
    try:
        yield ods
    finally:
        for od, r in zip(ods, regs, strict=True):
            od.close()
            r.close()


def test_a_replica_fetches_a_file_of_a_version_another_indexed_without_indexing_it(
    replicas: list[OnDemand], log: RequestLog
) -> None:
    """Replica a indexes the version (downloading its small files to hash them) and logs
    it; replica b serves a's recorded index and fetches the large file a client asks it
    for. b learns which upstream serves the version without indexing it again: the Hub
    sees each small file once, the large one once, and b's one look at the revision."""
    a, b = replicas
    pa = a.open(M, "v0.1.0")
    assert isinstance(pa, Pending) and pa.has("config.json") and not pa.has("model.safetensors")
    for name in ("config.json", "tokenizer/vocab.txt"):
        assert len(log.where(server="hf", method="GET", path=f"/acme/tiny/resolve/*/{name}")) == 1
    log.clear()

    pb = b.open(M, "v0.1.0")
    assert isinstance(pb, Pending)
    pb.wait("model.safetensors")
    got = [f"{s.server} {s.path}" for s in log]
    assert not log.where(path="/acme/tiny/resolve/*/config.json"), got
    assert not log.where(path="/acme/tiny/resolve/*/tokenizer/vocab.txt"), got
    assert len(log.where(server="hf", path="/acme/tiny/resolve/*/model.safetensors")) == 1, got
    assert len(log.where(server="hf", path="/api/models/acme/tiny/revision/*")) == 1, got
    # b stored the last file: the version is committed, under the index a logged
    v = b.reg.meta.get_version(M, "v0.1.0")
    assert v is not None and v.h1 == pa.record.h1
    assert b.reg.blobs.read(pa.files["model.safetensors"].sha256, len(WEIGHTS)) == WEIGHTS
