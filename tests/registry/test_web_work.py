"""A version's page does bounded work, whatever its manifests hold, and reading other pages
(which evicts kept pages) never makes it read a manifest again.

The blob store here counts what is read from it (it is the real folder store); the
pages are asked for over a real server.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from registry.blobs import FolderBlobStore

from .conftest import _serve
from .helpers import publish

MOD = "example.com/acme/big"
PAGE = f"/-/module/{MOD}/@v/v0.1.0"
PATHS = 40  # the same manifest listed under this many paths


class CountingStore(FolderBlobStore):
    """A folder blob store that counts the reads of each blob (and their bytes)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: Counter[str] = Counter()
        self.read_bytes = 0
        self._lock = threading.Lock()

    def get(self, sha256: str, offset: int = 0, length: int | None = None) -> Iterator[bytes]:
        with self._lock:
            self.reads[sha256] += 1
            self.read_bytes += (self.size(sha256) or 0) - offset if length is None else length
        return super().get(sha256, offset, length)


@dataclass
class Site:
    url: str
    store: CountingStore
    app: object
    token: str


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    from registry.app import create_app
    from registry.metadata import open_metadata_store
    from registry.service import Registry

    store = CountingStore(tmp_path / "blobs")
    reg = Registry(open_metadata_store(f"sqlite:///{tmp_path / 'r.db'}"), store)
    token, _ = reg.create_token("example.com", "publish")
    app = create_app(registry=reg)
    try:
        for url in _serve(app):
            yield Site(url, store, app, token)
    finally:
        reg.close()


def big_manifest(tensors: int, layers: int = 400, salt: str = "") -> bytes:
    """A WeightLang manifest with ``layers`` layers and ``tensors`` tensors among them."""
    doc = {
        "format": "weightlang.artifact",
        "model": "big" + salt,
        "interface": {
            "input": {"name": "x", "dtype": "f32", "shape": [8]},
            "output": {"name": "y", "dtype": "f32", "shape": [8]},
        },
        "layers": [{"name": f"l{i}", "op": "linear", "args": {"in": 8}} for i in range(layers)],
        "weights": {
            "file": "weights.safetensors",
            "tensors": {
                f"l{i % layers}.p{i}": {"shape": [8, 8], "origin": "trained"}
                for i in range(tensors)
            },
        },
    }
    return json.dumps(doc).encode()


def _release(manifests: dict[str, bytes]) -> tuple[dict[str, bytes], dict[str, tuple[str, str]]]:
    files = {"wgt.mod": f"module {MOD}\n".encode(), **manifests}
    return files, {p: (p.split("/")[0], "wgt") for p in manifests}


def _publish(site: Site, version: str, manifests: dict[str, bytes]) -> None:
    files, arts = _release(manifests)
    with httpx.Client(base_url=site.url, timeout=60) as http:
        r = publish(http, site.token, MOD, version, files, artifacts=arts)
        assert r.status_code == 201, r.text


def test_a_huge_manifest_under_many_paths_is_read_once_and_rendered_bounded(site: Site) -> None:
    from registry import artifactview

    manifest = big_manifest(tensors=60_000)
    assert 3 << 20 < len(manifest) <= artifactview.MAX_MANIFEST
    sha = hashlib.sha256(manifest).hexdigest()
    _publish(site, "v0.1.0", {f"m{i}/manifest.json": manifest for i in range(PATHS)})
    site.store.reads.clear()
    # the old page read and parsed it 40 times and drew 40 x 60,000 rows: minutes, not 60 s
    with httpx.Client(base_url=site.url, timeout=60) as http:
        page = http.get(PAGE)
    assert page.status_code == 200, page.text
    assert site.store.reads[sha] == 1
    text = page.text
    assert text.count('<section class="artifact">') == 1
    assert f"(and {PATHS - 1} more paths with the same bytes)" in text
    shown = artifactview.MAX_ROWS
    assert f"… and {60_000 - shown:,} more tensors, not shown." in text
    assert f"… and {400 - shown:,} more layers, not shown." in text
    assert f"… and {400 - artifactview.MAX_DRAWN:,} more layers" in text  # in the picture
    assert text.count("<tr>") < 3 * shown + PATHS + 10
    assert len(text) < 1 << 20


def test_evicted_pages_render_again_without_reading_manifests(site: Site) -> None:
    from registry.web import PageCache

    site.app.state.web_pages = PageCache(pages=1)  # type: ignore[attr-defined]
    manifest = big_manifest(tensors=2_000)
    sha = hashlib.sha256(manifest).hexdigest()
    _publish(site, "v0.1.0", {f"m{i}/manifest.json": manifest for i in range(PATHS)})
    _publish(site, "v0.2.0", {"other/manifest.json": big_manifest(10, salt="other")})
    site.store.reads.clear()
    with httpx.Client(base_url=site.url, timeout=60) as http:
        first = http.get(PAGE).text
        for _ in range(3):  # anyone may read other versions: each evicts the big page
            assert http.get(f"/-/module/{MOD}/@v/v0.2.0").status_code == 200
            assert http.get(PAGE).text == first
    assert site.store.reads[sha] == 1


def test_concurrent_readers_of_a_new_page_share_one_render(site: Site) -> None:
    manifest = big_manifest(tensors=20_000)
    sha = hashlib.sha256(manifest).hexdigest()
    _publish(site, "v0.1.0", {f"m{i}/manifest.json": manifest for i in range(PATHS)})
    site.store.reads.clear()
    pages: list[str] = []

    def read() -> None:
        with httpx.Client(base_url=site.url, timeout=60) as http:
            pages.append(http.get(PAGE).text)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(pages) == 8 and len(set(pages)) == 1
    assert site.store.reads[sha] == 1


def test_a_page_reads_at_most_its_budget_of_artifacts(site: Site) -> None:
    from registry import web

    manifests = {f"m{i}/manifest.json": big_manifest(tensors=70_000, salt=str(i)) for i in range(6)}
    assert sum(map(len, manifests.values())) > web.MAX_PAGE_READ
    _publish(site, "v0.1.0", manifests)
    site.store.reads.clear()
    site.store.read_bytes = 0
    with httpx.Client(base_url=site.url, timeout=60) as http:
        text = http.get(PAGE).text
    index_and_mod = 1 << 20
    assert site.store.read_bytes <= web.MAX_PAGE_READ + index_and_mod
    assert f"(not shown: this page reads at most {web.MAX_PAGE_READ:,} bytes" in text
    assert "model <b>big0</b>" in text


def _zip(members: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("meta.json", json.dumps({"program_id": "pid-1", "spec": "x" * 100_000}))
        for i in range(members):
            z.writestr(f"f{i}", b"")
    return buf.getvalue()


def test_a_paw_digest_opens_only_a_small_zip_directory_and_clips_the_spec() -> None:
    from registry.artifactview import MAX_SPEC, digest_paw

    small = digest_paw(_zip(3)).body
    assert "pid-1" in small and "x" * (MAX_SPEC - 1) + "…" in small and "x" * MAX_SPEC not in small
    assert digest_paw(_zip(20_000)).body == "<p>(meta.json could not be read)</p>"


def _origin_by_scanning(layer: str, tensors: dict[str, object]) -> str:
    """What the picture showed before: ``LAYER.weight``'s origin, else the first tensor's
    named ``LAYER.`` something with one (a scan of all tensors per layer)."""
    for name in (f"{layer}.weight", *(t for t in tensors if t.startswith(layer + "."))):
        info = tensors.get(name)
        if isinstance(info, dict) and isinstance(info.get("origin"), str):
            return str(info["origin"])
    return ""


@pytest.mark.parametrize(
    "tensors",
    [
        {"a.b.bias": {}, "a.b.w": {"origin": "imported"}, "a.x": {"origin": "random"}},
        {"c.z": {"origin": "random"}, "c.weight": {"origin": "trained"}, "a": {"origin": "x"}},
        {"a.weight": {"origin": 3}, "a.b.weight": {"origin": "trained"}, "ab.w": {"origin": "r"}},
        {"a..w": {"origin": "trained"}, ".a.w": {"origin": "random"}, "a.b.c.d": "not a map"},
    ],
)
def test_layer_origins_in_one_pass_are_those_of_the_scan(tensors: dict[str, object]) -> None:
    from registry.pictures import _origin, _origins

    first = _origins(tensors)
    for layer in ("a", "a.b", "a.b.c", "ab", "c", "", "a.", "x"):
        assert _origin(layer, tensors, first) == _origin_by_scanning(layer, tensors), layer
