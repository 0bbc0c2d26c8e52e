"""``wgtpm publish --to oci://...`` of a real package, read back by ORAS and by ``wgtpm get``.

The package is tests/publish's WeightLang ``example.com/acme/xor`` (a git
repository, trained for 5 epochs). Interop: the ``oras`` Python package
(the Go CLI cannot be installed here) pulls the release and writes every
file under its path with the index's sha256.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.oci.conftest import OciRegistry
from tests.oci.test_publish import _tags, no_docker_config
from tests.publish.conftest import _git_identity, base_pkg

__all__ = ["_git_identity", "base_pkg", "no_docker_config"]  # fixtures

MODULE = "example.com/acme/xor"


def _index_files(pkg: Path) -> dict[str, str]:
    index = json.loads((pkg / "dist" / MODULE / "@v" / "v0.1.0.index.json").read_bytes())
    return {e["path"]: e["sha256"] for e in index["files"]}


@pytest.fixture
def published(
    wgtpm,  # type: ignore[no-untyped-def]
    base_pkg: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    no_docker_config: dict[str, str],
) -> tuple[Path, str]:
    """``base_pkg`` published at v0.1.0 to ``oci_namespace`` by the CLI; a dry run first."""
    to = oci_registry.oci(oci_namespace)
    dry = wgtpm("publish", "--version", "v0.1.0", "--to", to, "--dry-run", cwd=base_pkg)
    assert dry.code == 0, dry.err
    assert _tags(oci_registry, f"{oci_namespace}/{MODULE}") == []  # a dry run sends nothing
    r = wgtpm("publish", "--version", "v0.1.0", "--to", to, cwd=base_pkg)
    assert r.code == 0, r.err
    assert f"{oci_registry.host}/{oci_namespace}/{MODULE}:v0.1.0" in r.out + r.err
    return base_pkg, to


def test_oras_pull_gets_a_release_with_its_paths_and_digests(
    published: tuple[Path, str], oci_registry: OciRegistry, oci_namespace: str, tmp_path: Path
) -> None:
    import oras.client

    pkg, _ = published
    want = _index_files(pkg)
    out = tmp_path / "pulled"
    c = oras.client.OrasClient(hostname=oci_registry.host, insecure=True)
    got = c.pull(target=f"{oci_registry.host}/{oci_namespace}/{MODULE}:v0.1.0", outdir=str(out))
    names = {Path(p).relative_to(out).as_posix() for p in got}
    assert names == {*want, "wgt.index.json"}
    for path, sha in want.items():
        assert hashlib.sha256((out / path).read_bytes()).hexdigest() == sha, path
    index = (pkg / "dist" / MODULE / "@v" / "v0.1.0.index.json").read_bytes()
    assert (out / "wgt.index.json").read_bytes() == index


def test_wgtpm_get_from_the_registry_gets_every_byte_of_the_release(
    wgtpm,  # type: ignore[no-untyped-def]
    published: tuple[Path, str],
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pkg, to = published
    dist = pkg / "dist" / MODULE / "@v"
    monkeypatch.setenv("WGTPROXY", to)
    r = wgtpm("get", "-json", f"{MODULE}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    (got,) = [m for m in json.loads(r.out)["build"] if m["path"] == MODULE]
    tree = Path(got["dir"])
    want = _index_files(pkg)
    have = {p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()}
    assert have == set(want)
    for path in want:
        assert (tree / path).read_bytes() == (dist / "v0.1.0" / path).read_bytes(), path
    sums = (project / "wgt.sum").read_text().splitlines()
    h1 = next(ln for ln in sums if ln.startswith(f"{MODULE} v0.1.0 "))
    from wgtpm.index import parse

    index = parse((dist / "v0.1.0.index.json").read_bytes(), MODULE, "v0.1.0")
    assert h1.endswith(index.h1())


def test_publishing_the_same_commit_again_is_a_no_op_and_another_is_refused(
    wgtpm,  # type: ignore[no-untyped-def]
    published: tuple[Path, str],
) -> None:
    from tests.publish.conftest import base_wgt, commit_all, git

    pkg, to = published
    git(pkg, "tag", "-d", "v0.1.0")  # the local tag the first publish made
    r = wgtpm("publish", "--version", "v0.1.0", "--to", to, cwd=pkg)
    assert r.code == 0, r.err
    assert "already" in r.out + r.err
    git(pkg, "tag", "-d", "v0.1.0")
    (pkg / "model.wgt").write_text(base_wgt(seed=7))
    commit_all(pkg, "other weights")
    r = wgtpm("publish", "--version", "v0.1.0", "--to", to, cwd=pkg)
    assert r.code != 0, r.err
    last = r.err.strip().splitlines()[-1]  # progress, then the error in one line
    assert "never changes" in last and last.count("h1:") == 2, r.err


def test_publish_and_get_through_a_token_registry(
    wgtpm,  # type: ignore[no-untyped-def]
    base_pkg: Path,
    oci_registry_token: OciRegistry,
    oci_namespace: str,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The example published by the CLI to a registry that wants bearer tokens (the user's
    password in Docker's config.json), then got into a new project: every byte as built."""
    from tests.oci.test_publish_auth import docker_config

    reg = oci_registry_token
    assert reg.token_server is not None and reg.user and reg.password
    for k, v in docker_config(tmp_path, reg).items():
        monkeypatch.setenv(k, v)
    to = reg.oci(oci_namespace)
    for dry in (("--dry-run",), ()):  # the dry run leaves the release in dist/ to compare
        r = wgtpm("publish", "--version", "v0.1.0", "--to", to, *dry, cwd=base_pkg)
        assert r.code == 0, r.err
    assert reg.password not in r.out + r.err
    monkeypatch.setenv("WGTPROXY", to)
    r = wgtpm("get", "-json", f"{MODULE}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    (got,) = [m for m in json.loads(r.out)["build"] if m["path"] == MODULE]
    tree, dist = Path(got["dir"]), base_pkg / "dist" / MODULE / "@v" / "v0.1.0"
    want = _index_files(base_pkg)
    assert {p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()} == set(want)
    for path, sha in want.items():
        data = (tree / path).read_bytes()
        assert data == (dist / path).read_bytes() and hashlib.sha256(data).hexdigest() == sha
    assert reg.token_server.log.where(path="/token*", header="authorization")
