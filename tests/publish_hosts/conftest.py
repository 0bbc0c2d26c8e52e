"""Fixtures for publishing to the loopback GitHub and Hugging Face: releases built in the test."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.servers import CdnServer
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from wgtpm import dirhash
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.index import IndexEntry, build_index
from wgtpm.publish._target import Release

GH_TOKEN = "ghp_publish_secret"
HF_TOKEN = "hf_publish_secret"
_n = itertools.count()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No token, endpoint or Hugging Face login of the machine running the tests leaks in."""
    for var in ("GITHUB_API_URL", "HF_ENDPOINT", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture
def github(cdn: CdnServer) -> Iterator[GitHubServer]:
    with GitHubServer(cdn, token=GH_TOKEN) as server:
        yield server


@pytest.fixture
def hf(cdn: CdnServer) -> Iterator[HuggingFaceServer]:
    with HuggingFaceServer(cdn, token=HF_TOKEN) as server:
        yield server


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(HttpOptions(timeout=10, retries=2, backoff=0.01, max_retry_after=2)) as c:
        yield c


@dataclass
class Recorder:
    """A Reporter that keeps every message, to check what a user would see."""

    lines: list[str] = field(default_factory=list)

    def notice(self, message: str) -> None:
        self.lines.append(message)

    def warning(self, message: str) -> None:
        self.lines.append("warning: " + message)

    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, label: str, n: int) -> None:
        pass

    def finish(self, label: str) -> None:
        pass


@pytest.fixture
def reporter() -> Recorder:
    return Recorder()


def make_release(
    root: Path,
    module: str,
    version: str,
    files: dict[str, bytes],
    *,
    commit: str | None = None,
    notes: str = "",
    requires: dict[str, str] | None = None,
) -> Release:
    """A release as ``wgtpm publish`` assembles it: files on disk, the index, both hashes."""
    d = root / f"release-{next(_n)}"
    mod = f"module {module}\nwgt 0.1\n".encode()
    mod += "".join(f"require {m} {v}\n" for m, v in (requires or {}).items()).encode()
    paths: dict[str, Path] = {}
    entries = []
    for name, data in {"wgt.mod": mod, **files}.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        paths[name] = p
        kind = None if name == "wgt.mod" else "file"
        art = None if name == "wgt.mod" else name.split("/")[0]
        entries.append(IndexEntry(name, len(data), hashlib.sha256(data).hexdigest(), art, kind))
    idx = build_index(
        module, version, entries, time="2026-11-30T12:00:00Z", commit=commit, build={"test": 1}
    )
    mod_h1 = dirhash.hash1([("wgt.mod", hashlib.sha256(mod).hexdigest())])
    return Release(module, version, commit, paths, idx.to_json(), idx.h1(), mod_h1, notes=notes)


def sum_lines(project: Path, module: str) -> list[str]:
    """The lines of ``project``'s wgt.sum about ``module``."""
    text = (project / "wgt.sum").read_text()
    return [ln for ln in text.splitlines() if ln.split(" ", 1)[0] == module]
