"""Files a source knows before its index is made download while the index is made.

A Hugging Face index is synthesised by downloading and hashing the repository's small
files; the API states the size and sha256 of every LFS file at once, so the fetcher
starts those (:meth:`Source.known_files`, ``modfetch._Early``) and links them only
once the index, checked against wgt.sum, lists them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import CdnServer, Fault, Request, Response
from tests.servers.huggingface import HuggingFaceServer
from tests.sources.conftest import RecordingSums
from wgtpm._errors import ChecksumMismatchError, VerifyError
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.modfetch import Fetcher, FetchOptions
from wgtpm.sources.huggingface import HuggingFaceSource

MOD = "hf.co/acme/big"
WEIGHTS = bytes(range(256)) * (8 << 10)  # 2 MiB, in LFS
SMALL = {f"conf/{i}.json": b'{"n": %d}' % i for i in range(6)}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Cdn(CdnServer):
    """A CDN that says when a blob is first asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()

    def handle(self, req: Request) -> Response:
        self.asked.set()
        return super().handle(req)


class _Hub(HuggingFaceServer):
    """A Hub whose small files wait (up to 5 s) until the CDN has been asked for a blob:
    a fetcher that starts the LFS files only after the index is made gets them late."""

    def handle(self, req: Request) -> Response:
        if "/resolve/" in req.path and req.path.endswith(".json"):  # before the server's lock
            self.small_waited = not self.cdn.asked.wait(5)  # type: ignore[attr-defined]
        return super().handle(req)


@pytest.fixture
def cdn() -> Iterator[_Cdn]:
    with _Cdn() as server:
        yield server


@pytest.fixture
def hub(cdn: _Cdn) -> Iterator[_Hub]:
    with _Hub(cdn) as server:
        repo = server.repo("acme", "big")
        repo.commit({"model.safetensors": WEIGHTS, **SMALL})
        repo.tag("v0.1.0")
        yield server


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(HttpOptions(timeout=10, retries=2, backoff=0.01)) as client:
        yield client


class _Progress:
    """A reporter that records what it is told."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[str, int] = {}
        self.advanced: dict[str, int] = {}
        self.early: list[str] = []  # labels advanced before they started
        self.finished: list[str] = []

    def notice(self, message: str) -> None:
        pass

    def warning(self, message: str) -> None:
        pass

    def start(self, label: str, total: int) -> None:
        with self.lock:
            self.started[label] = total

    def advance(self, label: str, n: int) -> None:
        with self.lock:
            if label not in self.started:
                self.early.append(label)
            self.advanced[label] = self.advanced.get(label, 0) + n

    def finish(self, label: str) -> None:
        self.finished.append(label)


def _fetcher(cache: Path, hub: _Hub, http: HttpClient, sums: object, **kw: object) -> Fetcher:
    return Fetcher(
        Cache(cache),
        HuggingFaceSource(http, endpoint=hub.url),
        sums,  # type: ignore[arg-type]
        http=lambda: http,
        opts=FetchOptions(jobs=4, resume_attempts=2, resume_backoff=0.01),
        **kw,  # type: ignore[arg-type]
    )


def test_lfs_files_download_while_the_small_files_are_indexed(
    hub: _Hub, cdn: _Cdn, http: HttpClient, tmp_path: Path
) -> None:
    progress = _Progress()
    fetcher = _fetcher(tmp_path / "c", hub, http, RecordingSums(), progress=progress)
    fetcher.mod(MOD, "v0.1.0")  # what a get does first: the Hub's tree is listed here
    tree = fetcher.download(MOD, "v0.1.0")
    assert hub.small_waited is False  # the CDN was asked before the small files answered
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS
    assert all((tree / n).read_bytes() == b for n, b in SMALL.items())
    label = f"{MOD}@v0.1.0"
    total = len(WEIGHTS) + sum(map(len, SMALL.values()))
    # every byte reported once, the early ones when the unit started, none before it
    assert progress.started == {label: total}
    assert progress.advanced == {label: total}
    assert progress.early == []
    assert progress.finished == [label]


def test_a_refused_index_stops_the_early_downloads(
    hub: _Hub, cdn: _Cdn, http: HttpClient, tmp_path: Path
) -> None:
    """wgt.sum holds another hash for the version: the index is refused, the LFS file
    already on its way stops at its next chunk, and no module tree is made."""

    class _Other(RecordingSums):
        def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
            if not version.endswith("/wgt.mod"):
                raise ChecksumMismatchError(path, version, "index", "h1:other=", h1)

    cdn.inject(Fault.drip("/blobs/*/model.safetensors", 0.05, 64 << 10))  # 1.6 s in all
    progress = _Progress()
    fetcher = _fetcher(tmp_path / "c", hub, http, _Other(), progress=progress)
    fetcher.mod(MOD, "v0.1.0")
    t0 = time.monotonic()
    with pytest.raises(ChecksumMismatchError):
        fetcher.download(MOD, "v0.1.0")
    assert time.monotonic() - t0 < 1.2  # not after the whole LFS file came
    cache = Cache(tmp_path / "c")
    assert not cache.has_blob(sha(WEIGHTS))
    assert not cache.mod_dir(MOD, "v0.1.0").exists()
    assert progress.started == {}  # the unit never started, nothing was reported
    assert progress.advanced == {}
    partial = cache.partial_path(sha(WEIGHTS))
    assert not partial.exists() or partial.stat().st_size < len(WEIGHTS)  # kept to resume


def test_an_early_download_that_fails_is_the_downloads_error(
    hub: _Hub, cdn: _Cdn, http: HttpClient, tmp_path: Path
) -> None:
    cdn.inject(Fault.flip("/blobs/*/model.safetensors", times=-1))
    fetcher = _fetcher(tmp_path / "c", hub, http, RecordingSums())
    fetcher.mod(MOD, "v0.1.0")
    with pytest.raises(
        VerifyError, match=r"model\.safetensors: the source served .*nothing was kept"
    ):
        fetcher.download(MOD, "v0.1.0")
    cache = Cache(tmp_path / "c")
    assert not cache.has_blob(sha(WEIGHTS))
    assert not (cache.mod_dir(MOD, "v0.1.0") / "model.safetensors").exists()
    # it was downloaded by the early download only, not a second time after the index
    assert len(cdn.log.where(server="cdn", method="GET")) == 1


def test_a_selection_without_the_lfs_files_downloads_none(
    hub: _Hub, cdn: _Cdn, http: HttpClient, tmp_path: Path
) -> None:
    cdn.asked.set()  # the small files need not wait for a blob that is never asked for
    fetcher = _fetcher(tmp_path / "c", hub, http, RecordingSums())
    fetcher.mod(MOD, "v0.1.0")
    tree = fetcher.download(MOD, "v0.1.0", ["conf/*"])
    assert (tree / "conf/0.json").read_bytes() == SMALL["conf/0.json"]
    assert not cdn.log.where(server="cdn")
