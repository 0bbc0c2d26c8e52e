"""``wgtpm verify --rebuild MODULE@VERSION``: a dependency built again from its commit.

- the xor-base example, published with an ``origin`` remote (a bare clone
  served over HTTP on loopback), comes back through ``wgtpm get``; its provenance names the
  repository, and the rebuild fetches the commit from there and reports
  every artifact reproduced (text and ``--json``);
- a package in a subdirectory, without a remote, rebuilt from a local clone
  given by ``--repo``;
- a release whose weights are not what its commit builds (one byte changed
  after publishing, the index rewritten to match, so that wgt.sum locks the
  changed file, as it would for a publisher who uploads other weights than
  the commit trains): ``differs``, naming the file and the changed byte;
- bad input, one line each: no repository named, a repository that does not
  hold the commit, a URL that cannot be fetched, a module outside the build
  list, a release that names no commit.

A commit that holds a link out of the package (whose target could change
between publishing and the rebuild) is refused by both: test_contain.py.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.publish.conftest import base_wgt, commit_all, dumb_http, git, make_package
from wgtpm.publish import PROVENANCE_FILE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
XOR_BASE = "github.com/acme/xor-base"


@dataclass(frozen=True)
class Published:
    pkg: Path
    dist: Path
    app: Path


def _publish_and_get(wgtpm, pkg: Path, module: str, tmp_path: Path, monkeypatch) -> Published:  # type: ignore[no-untyped-def]
    """Publish ``pkg`` at v0.1.0 to its dist/, then require it in a fresh project ``app``."""
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    dist = pkg / "dist"
    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", dist.absolute().as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    r = wgtpm("get", f"{module}@v0.1.0", cwd=app)
    assert r.code == 0, r.err
    return Published(pkg, dist, app)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The base URL of ``tmp_path/srv`` over plain HTTP on loopback (git's dumb protocol)."""
    (tmp_path / "srv").mkdir()
    with dumb_http(tmp_path / "srv") as base:
        yield base


def _xor_base(tmp_path: Path, served: str) -> tuple[Path, str]:
    """The xor-base example in a git repository whose origin is a bare clone served over
    HTTP (:func:`served`); the URL a release names it by (no ``.git``: repository_url)."""
    pkg = tmp_path / "xor-base"
    shutil.copytree(ROOT / "examples/xor-base", pkg)
    git(pkg, "init", "-q", "-b", "main")
    commit_all(pkg, "xor-base")
    remote = tmp_path / "srv/remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(pkg), str(remote))
    git(remote, "update-server-info")  # what a dumb HTTP client reads
    git(pkg, "remote", "add", "origin", f"{served}/remote.git")
    return pkg, f"{served}/remote"


def test_the_example_is_reproduced_from_the_repository_it_names(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: str,
) -> None:
    pkg, url = _xor_base(tmp_path, served)
    p = _publish_and_get(wgtpm, pkg, XOR_BASE, tmp_path, monkeypatch)
    prov = json.loads((p.dist / XOR_BASE / "@v/v0.1.0" / PROVENANCE_FILE).read_text())
    assert prov["repository"] == {"url": url, "dir": ""}
    assert prov["commit"] == git(pkg, "rev-parse", "HEAD")

    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", cwd=p.app)
    assert (r.code, r.out) == (0, "xor: reproduced\n"), r.err
    assert f"fetching commit {prov['commit'][:12]} of {XOR_BASE} from {url}" in r.err

    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", "--json", cwd=p.app)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["reproduced"] is True and doc["commit"] == prov["commit"]
    assert doc["repository"] == url
    assert doc["artifacts"] == [
        {"artifact": "xor", "kind": "wgt", "status": "reproduced", "differences": []}
    ]
    assert not (p.app / "build").exists()  # built in a temporary export, never here


def test_a_package_in_a_subdirectory_rebuilt_from_a_local_clone(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = make_package(tmp_path / "repo", "example.com/acme/repo", {"README.txt": "hi\n"})
    sub = repo / "models/xor"
    sub.mkdir(parents=True)
    (sub / "wgt.mod").write_text(
        "module example.com/acme/repo/models/xor\nwgt 0.1\n\nartifact xor model.wgt\n"
    )
    (sub / "model.wgt").write_text(base_wgt())
    commit_all(repo, "a model in a subdirectory")
    module = "example.com/acme/repo/models/xor"
    p = _publish_and_get(wgtpm, sub, module, tmp_path, monkeypatch)
    prov = json.loads((p.dist / module / "@v/v0.1.0" / PROVENANCE_FILE).read_text())
    assert prov["repository"] == {"dir": "models/xor"}  # no remote: no url

    r = wgtpm("verify", "--rebuild", f"{module}@v0.1.0", cwd=p.app)
    assert r.code == 1
    assert r.err.strip().splitlines()[-1] == (
        f"wgtpm: {module}@v0.1.0: its provenance names no source repository; pass --repo a "
        f"clone (or the URL) of the repository that holds commit {prov['commit']}"
    )
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    r = wgtpm("verify", "--rebuild", module, "--repo", str(clone), cwd=p.app)
    assert (r.code, r.out) == (0, "xor: reproduced\n"), r.err


def test_weights_that_the_commit_does_not_build_differ(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: str,
) -> None:
    pkg, _ = _xor_base(tmp_path, served)
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    # Other weights under the same commit: one byte changed, the index rewritten to match,
    # so the consumer's wgt.sum locks the changed file.
    vdir = pkg / "dist" / XOR_BASE / "@v"
    weights = vdir / "v0.1.0/xor/weights.safetensors"
    data = bytearray(weights.read_bytes())
    at = len(data) - 3
    data[at] ^= 0x01
    weights.write_bytes(bytes(data))
    index_file = vdir / "v0.1.0.index.json"
    index = json.loads(index_file.read_text())
    import hashlib

    for e in index["files"]:
        if e["path"] == "xor/weights.safetensors":
            e["sha256"] = hashlib.sha256(data).hexdigest()
    index_file.write_text(json.dumps(index))

    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    r = wgtpm("get", f"{XOR_BASE}@v0.1.0", cwd=app)
    assert r.code == 0, r.err

    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", cwd=app)
    assert r.code == 1, r.err
    assert r.out == f"xor: differs: xor/weights.safetensors (first difference at byte {at})\n"
    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", "--json", cwd=app)
    assert r.code == 1
    (art,) = json.loads(r.out)["artifacts"]
    assert art["status"] == "differs"
    assert art["differences"] == [{"path": "xor/weights.safetensors", "offset": at, "why": ""}]


def test_bad_input_gets_one_line(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: str,
) -> None:
    pkg, _ = _xor_base(tmp_path, served)
    p = _publish_and_get(wgtpm, pkg, XOR_BASE, tmp_path, monkeypatch)
    commit = git(pkg, "rev-parse", "HEAD")
    other = make_package(tmp_path / "other", "example.com/acme/other", {"a.txt": "a\n"})
    gone = (tmp_path / "gone.git").as_uri()
    cases = [
        (["--repo", str(other)], f"commit {commit} is not in {other}"),
        (["--repo", gone], f"cannot fetch the source repository {gone} ("),
        (["--repo", str(tmp_path / "nowhere")], f"{tmp_path / 'nowhere'}: no such directory"),
    ]
    for extra, want in cases:
        r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.1.0", *extra, cwd=p.app)
        assert r.code == 1 and r.out == "", r.err
        (line,) = r.err.strip().splitlines()[-1:]
        assert want in line and "Traceback" not in r.err, r.err

    r = wgtpm("verify", "--rebuild", "example.com/acme/missing@v0.1.0", cwd=p.app)
    assert r.code == 1
    assert "example.com/acme/missing is not in the build list" in r.err
    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v0.2.0", cwd=p.app)
    assert r.code == 1
    assert f"the build list has {XOR_BASE}@v0.1.0, not v0.2.0" in r.err
    r = wgtpm("verify", "--rebuild", f"{XOR_BASE}@v1", cwd=p.app)
    assert r.code == 1 and "want MODULE@VERSION with a full version" in r.err
    r = wgtpm("verify", "--repo", str(pkg), cwd=p.app)
    assert r.code == 1 and "--repo goes with --rebuild MODULE@VERSION" in r.err


def test_a_release_without_a_commit_cannot_be_rebuilt(
    wgtpm,  # type: ignore[no-untyped-def]
    tree,  # type: ignore[no-untyped-def]
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tree.add("example.com/acme/plain", "v0.1.0", {"notes.txt": b"hi\n"})
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", "example.com/acme/plain@v0.1.0", cwd=project).code == 0
    r = wgtpm("verify", "--rebuild", "example.com/acme/plain@v0.1.0", cwd=project)
    assert r.code == 1 and r.out == ""
    assert r.err.strip() == (
        "wgtpm: example.com/acme/plain@v0.1.0: its release names no source commit (no "
        f"{PROVENANCE_FILE}; it was not published by wgtpm publish), so it cannot be rebuilt"
    )
