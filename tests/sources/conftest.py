"""Fixtures for the direct sources: loopback servers and an impatient HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import CdnServer
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.paw import PawServer
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.modfetch import Fetcher, FetchOptions
from wgtpm.sources import Source

CREDENTIAL_VARS = (
    "GITHUB_TOKEN",
    "GITHUB_API_URL",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_ENDPOINT",
    "PAW_API_KEY",
    "PAW_API_URL",
    "NETRC",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credential, endpoint or token file of the machine running the tests leaks in."""
    for var in CREDENTIAL_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


@pytest.fixture
def github(cdn: CdnServer) -> Iterator[GitHubServer]:
    with GitHubServer(cdn, token="ghp_secret") as server:
        yield server


@pytest.fixture
def hf(cdn: CdnServer) -> Iterator[HuggingFaceServer]:
    with HuggingFaceServer(cdn, token="hf_secret") as server:
        yield server


@pytest.fixture
def paw(cdn: CdnServer) -> Iterator[PawServer]:
    with PawServer(cdn, api_key="paw_secret") as server:
        yield server


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(HttpOptions(timeout=10, retries=3, backoff=0.01, max_retry_after=2)) as client:
        yield client


class RecordingSums:
    """A SumChecker that accepts every hash and remembers it (what ``wgtpm get`` does first)."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, str], str] = {}

    def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
        if record:
            self.lines[(path, version)] = h1


def fetch(
    source: Source,
    cache_root: Path,
    path: str,
    version: str,
    patterns: list[str] | None = None,
    *,
    http: HttpClient | None = None,
) -> Path:
    """Download ``path@version`` through the real fetcher; returns the module tree."""
    fetcher = Fetcher(
        Cache(cache_root),
        source,
        RecordingSums(),
        http=(lambda: http) if http is not None else None,
        opts=FetchOptions(jobs=4, resume_attempts=3),
    )
    return fetcher.download(path, version, patterns)


def leftovers(cache_root: Path) -> list[str]:
    """Files under the cache's tmp/ other than lock files: what a failed download left behind."""
    tmp = cache_root / "tmp"
    if not tmp.is_dir():
        return []
    return sorted(p.name for p in tmp.iterdir() if not p.name.endswith(".lock"))
