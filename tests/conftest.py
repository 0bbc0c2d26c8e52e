"""Shared fixtures: an isolated cache, a proxy tree on disk and over HTTP, a CLI runner, and
the tiny Qwen3 on the loopback Hugging Face Hub."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import CdnServer, RequestLog
from tests.servers.huggingface import HuggingFaceServer
from wgtpm.cli import main
from wgtpm.proxytree import ProxyTree


@pytest.fixture(autouse=True)
def _isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test sees the user's cache, proxy settings, tokens or netrc."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("WGTPM_CACHE", str(cache))
    for var in (
        "WGTPROXY",
        "WGTPRIVATE",
        "WGTNOPROXY",
        "WGTFLAGS",
        "WGTSUMDB",
        "WGTNOSUMDB",
        "GITHUB_TOKEN",
        "HF_TOKEN",
        "PAW_API_KEY",
        "WGTTRUST",
        # an OIDC identity would make 'wgtpm publish' sign keylessly (wgtpm.trust._keyless)
        "SIGSTORE_ID_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NETRC", str(cache / "no-netrc"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def wgtpm(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Run ``wgtpm ARGS`` in-process in a directory; returns exit code and output."""

    def run(*args: str, cwd: Path | None = None) -> Result:
        capsys.readouterr()
        old = Path.cwd()
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = main(list(args))
        finally:
            os.chdir(old)
        cap = capsys.readouterr()
        return Result(code, cap.out, cap.err)

    return run


@pytest.fixture
def log() -> RequestLog:
    """One request log that several loopback servers of a test can share."""
    return RequestLog()


@pytest.fixture
def cdn(log: RequestLog) -> Iterator[CdnServer]:
    """The storage host that GitHub, Hugging Face and the PAW hub redirect downloads to."""
    with CdnServer(log=log) as server:
        yield server


@pytest.fixture
def tree(tmp_path: Path) -> ProxyTree:
    return ProxyTree(tmp_path / "tree")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    d = tmp_path / "app"
    d.mkdir()
    (d / "wgt.mod").write_text("module example.com/app\nwgt 0.1\n")
    return d


@pytest.fixture
def http_tree(tree: ProxyTree) -> Iterator[object]:
    from tests.servers.proxytree import ProxyTreeServer

    tree.root.mkdir(parents=True, exist_ok=True)
    with ProxyTreeServer(tree.root) as srv:
        yield srv


#: The tiny Qwen3's module path and version on the loopback Hub (:func:`publish_tiny_qwen3`).
TINY_QWEN3 = "hf.co/acme/tiny-qwen3"
TINY_QWEN3_VERSION = "v0.1.0"


@pytest.fixture(scope="session")
def tiny_qwen3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded 2-layer Qwen3 and its tokenizer in Hugging Face format
    (:func:`wgtpm.paw.tiny.make_tiny_qwen3`), made once a session: do not change it."""
    pytest.importorskip("transformers")
    from wgtpm.paw.tiny import make_tiny_qwen3

    return make_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="session")
def tiny_qwen3_files(tiny_qwen3: Path) -> dict[str, bytes]:
    """The tiny Qwen3's files (config, tokenizer, ``model.safetensors``) by relative path."""
    return {
        p.relative_to(tiny_qwen3).as_posix(): p.read_bytes()
        for p in sorted(tiny_qwen3.rglob("*"))
        if p.is_file()
    }


def publish_tiny_qwen3(
    hub: HuggingFaceServer,
    files: dict[str, bytes],
    owner: str = "acme",
    name: str = "tiny-qwen3",
    version: str = TINY_QWEN3_VERSION,
) -> None:
    """Commit ``files`` to the loopback Hub's ``owner/name`` and tag the commit ``version``."""
    repo = hub.repo(owner, name)
    repo.commit(dict(files))
    repo.tag(version)


@pytest.fixture
def tiny_qwen3_hub(
    cdn: CdnServer, tiny_qwen3_files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> Iterator[HuggingFaceServer]:
    """The loopback Hub serving the tiny Qwen3 as :data:`TINY_QWEN3` at
    :data:`TINY_QWEN3_VERSION`; ``wgtpm get hf.co/...`` in this process goes straight to it."""
    with HuggingFaceServer(cdn) as server:
        publish_tiny_qwen3(server, tiny_qwen3_files)
        monkeypatch.setenv("WGTPROXY", "direct")
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        yield server
