"""One conformance test that every :class:`~wgtpm.publish.PublishTarget` must pass.

Hand-made releases (no git, no build): a target lists nothing at first;
publishing makes the version listed and readable through the proxy protocol
with the same index bytes; the same release again is a no-op
(``created=False``); another h1 for the version is refused, naming both.
The GitHub and Hugging Face targets join the parameter list when they land.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.registry.conftest import Live
from wgtpm._errors import ModuleError
from wgtpm._report import SILENT
from wgtpm.dirhash import hash1_bytes
from wgtpm.index import IndexEntry, build_index
from wgtpm.publish import DirectoryTarget, PublishTarget, RegistryTarget, Release

M, V = "example.com/acme/conf", "v0.1.0"


def make_release(d: Path, content: bytes) -> Release:
    d.mkdir(parents=True)
    files = {"wgt.mod": f"module {M}\nwgt 0.1\n".encode(), "data/a.bin": content}
    paths = {}
    for p, b in files.items():
        paths[p] = d / p.replace("/", "_")
        paths[p].write_bytes(b)
    entries = [
        IndexEntry(
            p,
            len(b),
            hashlib.sha256(b).hexdigest(),
            "a" if p != "wgt.mod" else None,
            "file" if p != "wgt.mod" else None,
        )
        for p, b in files.items()
    ]
    index = build_index(M, V, entries, time="2026-11-29T12:00:00Z")
    return Release(
        M, V, None, paths, index.to_json(), index.h1(), hash1_bytes({"wgt.mod": files["wgt.mod"]})
    )


@pytest.fixture(params=["directory", "registry"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[PublishTarget, str]]:
    """A target and the proxy-protocol base URL that serves what it publishes."""
    if request.param == "directory":
        t = DirectoryTarget(tmp_path / "tree")
        yield t, t.tree.url
        return
    live: Live = request.getfixturevalue("live")
    yield RegistryTarget(live.url, token=live.token), live.url


def _read(base: str, path: str) -> bytes:
    if base.startswith("file://"):
        return Path(base.removeprefix("file://"), path).read_bytes()
    return httpx.get(f"{base}/{path}").content


def test_target_conformance(target: tuple[PublishTarget, str], tmp_path: Path) -> None:
    t, base = target
    assert t.published_versions(M) == []
    release = make_release(tmp_path / "r1", b"one")
    t.check(release)
    done = t.publish(release, SILENT)
    assert done.created
    assert t.published_versions(M) == [V]
    assert _read(base, f"{M}/@v/{V}.index.json") == release.index
    assert _read(base, f"{M}/@v/{V}/data/a.bin") == b"one"
    assert t.publish(release, SILENT).created is False  # the same release again: a no-op
    other = make_release(tmp_path / "r2", b"two")
    with pytest.raises(ModuleError) as err:
        t.publish(other, SILENT)
    assert release.h1 in str(err.value) and other.h1 in str(err.value)
    assert _read(base, f"{M}/@v/{V}/data/a.bin") == b"one"  # nothing changed
