"""``wgtpm get`` from a real OCI registry: every byte checked, and each lie refused in one
line with nothing kept in the cache."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers import Request, Response
from tests.sources.test_conformance import RegistryFront
from wgtpm.oci import manifest as oci_manifest

from .conftest import PASSWORD, OciRegistry
from .helpers import docker_login, push_artifact, push_blob, push_manifest, push_release, release


def h1(files: dict[str, bytes]) -> str:
    lines = "".join(f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n" for n in sorted(files))
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def cache_root() -> Path:
    return Path(os.environ["WGTPM_CACHE"])


def cached_blobs() -> set[str]:
    """The sha256 of every blob in the cache, and any partial download left in it."""
    root = cache_root()
    return {p.name for p in root.rglob("*") if p.is_file() and len(p.name.split(".")[0]) == 64}


def leftovers() -> list[str]:
    tmp = cache_root() / "tmp"
    if not tmp.is_dir():
        return []
    return sorted(p.name for p in tmp.iterdir() if not p.name.endswith(".lock"))


def kept_of(path: str, version: str) -> list[str]:
    """What the cache keeps of ``path@version`` beside its wgt.mod (read while resolving, as
    from any source): an index, a version list, a signature, an extracted tree. ``[]`` for a
    version that was refused."""
    from wgtpm.cache import Cache

    cache = Cache(cache_root())
    meta = cache.meta_dir(path)
    kept = [p for p in meta.rglob("*") if p.is_file() or p.is_symlink()] if meta.is_dir() else []
    kept += [cache.mod_dir(path, version)] if cache.mod_dir(path, version).exists() else []
    return sorted(str(p) for p in kept if not p.name.endswith((".mod", ".lock")))


def not_extracted(path: str, version: str, name: str) -> bool:
    """Whether the module tree of ``path@version`` lacks ``name`` (its index, which the
    registry stated truly, may stay: only the bytes it served were false)."""
    from wgtpm.cache import Cache

    tree = Cache(cache_root()).mod_dir(path, version)
    return not (tree / name).exists() and not (tree / name).is_symlink()


def modtext(path: str, requires: tuple[str, ...] = ()) -> bytes:
    return ("".join([f"module {path}\nwgt 0.1\n", *(f"require {r}\n" for r in requires)])).encode()


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("wgtpm:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def failure_line(r: Any) -> str:
    """The one ``wgtpm:`` line of a command that failed (``r`` as the ``wgtpm`` fixture
    returns it)."""
    assert r.code != 0
    return one_line(r.err)


@pytest.fixture
def weights() -> bytes:
    return os.urandom(300_000)


def test_get_from_a_token_registry_with_config_json(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry_token: OciRegistry,
    oci_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    weights: bytes,
) -> None:
    """Two modules (one requires the other) from a registry that wants bearer tokens,
    with credentials in Docker's config.json as ``docker login`` writes them."""
    b = "example.com/acme/base"
    a = "example.com/Acme/xor"
    bfiles = {"wgt.mod": modtext(b), "base/weights.safetensors": weights}
    afiles = {
        "wgt.mod": modtext(a, (f"{b} v0.1.0",)),
        "xor/weights.safetensors": weights[:1000],
        "README.md": b"# xor\n",
    }
    push_release(oci_registry_token, f"{oci_namespace}/example.com/acme/base", b, "v0.1.0", bfiles)
    push_release(
        oci_registry_token, f"{oci_namespace}/example.com/x__acme/xor", a, "v1.0.0", afiles
    )
    monkeypatch.setenv("DOCKER_CONFIG", docker_login(tmp_path / "docker", oci_registry_token.host))
    monkeypatch.setenv("WGTPROXY", oci_registry_token.oci(oci_namespace))
    r = wgtpm("get", f"{a}@v1.0.0", cwd=project)  # type: ignore[operator]
    assert r.code == 0, r.err
    sums = (project / "wgt.sum").read_text()
    assert f"{a} v1.0.0 {h1(afiles)}" in sums
    assert f"{b} v0.1.0 {h1(bfiles)}" in sums
    for path, version, files in ((a, "v1.0.0", afiles), (b, "v0.1.0", bfiles)):
        tree = cache_root() / "mod" / f"{path.replace('A', '!a')}@{version}"
        for name, data in files.items():
            assert (tree / name).read_bytes() == data, name
    assert PASSWORD not in r.out + r.err


@pytest.fixture
def published(
    oci_registry: OciRegistry, oci_namespace: str, weights: bytes
) -> tuple[str, str, dict[str, bytes]]:
    """example.com/acme/m v1.0.0 on the open registry: (module, repository, files)."""
    path = "example.com/acme/m"
    files = {"wgt.mod": modtext(path), "m/weights.bin": weights}
    repo = f"{oci_namespace}/example.com/acme/m"
    push_release(oci_registry, repo, path, "v1.0.0", files)
    return path, repo, files


def _blob_file(reg: OciRegistry, data: bytes) -> Path:
    hexd = hashlib.sha256(data).hexdigest()
    return reg.root / "docker/registry/v2/blobs/sha256" / hexd[:2] / hexd / "data"


def test_tampered_blob_is_refused_and_nothing_kept(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    published: tuple[str, str, dict[str, bytes]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, _repo, files = published
    blob = _blob_file(oci_registry, files["m/weights.bin"])
    original = blob.read_bytes()
    tampered = bytearray(original)
    tampered[1000] ^= 0xFF
    blob.write_bytes(bytes(tampered))
    try:
        monkeypatch.setenv("WGTPROXY", oci_registry.oci(oci_namespace))
        r = wgtpm("get", f"{path}@v1.0.0", cwd=project)  # type: ignore[operator]
    finally:
        blob.write_bytes(original)
    line = failure_line(r)
    assert "m/weights.bin" in line and "tampered" in line, line
    assert hashlib.sha256(files["m/weights.bin"]).hexdigest() not in cached_blobs()
    assert leftovers() == [] and not_extracted(path, "v1.0.0", "m/weights.bin")
    assert not (project / "wgt.sum").exists() or path not in (project / "wgt.sum").read_text()


def test_tag_moved_after_wgt_sum_locked_it(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    published: tuple[str, str, dict[str, bytes]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    path, repo, files = published
    monkeypatch.setenv("WGTPROXY", oci_registry.oci(oci_namespace))
    r = wgtpm("get", f"{path}@v1.0.0", cwd=project)  # type: ignore[operator]
    assert r.code == 0, r.err
    # someone pushes other bytes under the same tag; a fresh machine fetches
    moved = {"wgt.mod": files["wgt.mod"], "m/weights.bin": b"other weights"}
    push_release(oci_registry, repo, path, "v1.0.0", moved)
    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "fresh-cache"))
    r = wgtpm("get", cwd=project)  # type: ignore[operator]
    line = failure_line(r)
    assert path in line and "v1.0.0" in line and "mismatch" in line.lower(), line
    assert hashlib.sha256(b"other weights").hexdigest() not in cached_blobs()
    assert leftovers() == [] and kept_of(path, "v1.0.0") == []


class _Relay(RegistryFront):
    """The registry, relayed with one answer changed by ``edit(request, response)``."""

    def __init__(self, upstream: str, edit: Callable[[Request, Response], Response]) -> None:
        super().__init__(upstream)
        self.edit = edit

    def handle(self, req: Request) -> Response:
        return self.edit(req, super().handle(req))


@pytest.fixture
def relay(
    oci_registry: OciRegistry, oci_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., _Relay]]:
    """Starts a :class:`_Relay` and points ``WGTPROXY`` at it (the test's namespace)."""
    made: list[_Relay] = []

    def make(edit: Callable[[Request, Response], Response]) -> _Relay:
        r = _Relay(oci_registry.url, edit).start()
        made.append(r)
        monkeypatch.setenv("WGTPROXY", f"oci://127.0.0.1:{r.port}/{oci_namespace}")
        return r

    yield make
    for r in made:
        r.stop()


def test_manifest_whose_digest_does_not_match(
    wgtpm: Callable[..., object],
    project: Path,
    published: tuple[str, str, dict[str, bytes]],
    relay: Callable[..., _Relay],
) -> None:
    path, _repo, _files = published

    def edit(req: Request, resp: Response) -> Response:
        if "/manifests/" in req.path and resp.status == 200:
            resp.headers = {
                k: v for k, v in resp.headers.items() if k.lower() != "docker-content-digest"
            }
            resp.headers["Docker-Content-Digest"] = "sha256:" + "0" * 64
        return resp

    relay(edit)
    r = wgtpm("get", f"{path}@v1.0.0", cwd=project)  # type: ignore[operator]
    line = failure_line(r)
    assert "digest" in line and "refusing" in line, line
    assert cached_blobs() == set() and leftovers() == [] and kept_of(path, "v1.0.0") == []


def test_registry_that_lies_about_sizes(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    published: tuple[str, str, dict[str, bytes]],
    relay: Callable[..., _Relay],
) -> None:
    """A wgtpm release whose manifest states another size than its index: refused before
    any file is fetched. A blob served longer than stated: refused, nothing kept."""
    path, _repo, files = published
    weights = files["m/weights.bin"]

    def grow_layer(req: Request, resp: Response) -> Response:
        if "/manifests/" in req.path and resp.status == 200:
            doc = json.loads(resp.body)
            for layer in doc["layers"]:
                if layer["size"] == len(weights):
                    layer["size"] += 10
            resp.body = json.dumps(doc).encode()
            resp.headers.pop("Docker-Content-Digest", None)
            resp.headers.pop("docker-content-digest", None)
        return resp

    relay(grow_layer)
    r = wgtpm("get", f"{path}@v1.0.0", cwd=project)  # type: ignore[operator]
    line = failure_line(r)
    assert "m/weights.bin" in line and "inconsistent" in line, line
    assert cached_blobs() == set() and leftovers() == [] and kept_of(path, "v1.0.0") == []

    # an artifact pushed by another tool: its manifest is the only word on sizes
    other = f"{oci_namespace}/example.com/acme/foreign"
    push_artifact(oci_registry, other, "v1.0.0", {"w.bin": weights})

    def longer_blob(req: Request, resp: Response) -> Response:
        if "/blobs/" in req.path and resp.status in (200, 206):
            resp.body += b"more bytes than the manifest states"
        return resp

    relay(longer_blob)
    r = wgtpm("get", "example.com/acme/foreign@v1.0.0", cwd=project)  # type: ignore[operator]
    line = failure_line(r)
    assert "w.bin" in line, line
    assert hashlib.sha256(weights).hexdigest() not in cached_blobs()
    assert leftovers() == [] and not_extracted("example.com/acme/foreign", "v1.0.0", "w.bin")


def test_direct_wgtoci_reads_an_oras_push(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    weights: bytes,
) -> None:
    """An artifact pushed by ORAS (the ``oras`` Python package, as ``oras push`` does),
    fetched ``direct`` from a module path that WGTOCI says names an OCI registry."""
    oras_client = pytest.importorskip("oras.client")
    work = tmp_path / "push"
    work.mkdir()
    (work / "model.safetensors").write_bytes(weights)
    (work / "config.json").write_bytes(b'{"hidden": 8}')
    monkeypatch.chdir(work)
    client = oras_client.OrasClient(hostname=oci_registry.host, insecure=True)
    client.push(
        target=f"{oci_registry.host}/{oci_namespace}/xor:v1.2.0",
        files=["model.safetensors", "config.json"],
        quiet=True,
    )
    monkeypatch.chdir(tmp_path)
    module = f"oci.test/{oci_namespace}/xor"
    monkeypatch.setenv("WGTOCI", f"oci.test={oci_registry.host}")
    monkeypatch.setenv("WGTPROXY", "direct")
    r = wgtpm("get", f"{module}@latest", cwd=project)  # type: ignore[operator]
    assert r.code == 0, r.err
    want = {"model.safetensors": weights, "config.json": b'{"hidden": 8}'}
    assert f"{module} v1.2.0 {h1(want)}" in (project / "wgt.sum").read_text()
    tree = cache_root() / "mod" / f"{module}@v1.2.0"
    for name, data in want.items():
        assert (tree / name).read_bytes() == data


KITOPS = {
    "artifact": "application/vnd.kitops.modelkit.manifest.v1+json",
    "config": "application/vnd.kitops.modelkit.config.v1+json",
    "weights": "application/vnd.kitops.modelkit.model.v1.tar",
    "part": "application/vnd.kitops.modelkit.modelpart.v1.tar",
    "docs": "application/vnd.kitops.modelkit.docs.v1.tar",
}
MODELPACK = {
    "artifact": oci_manifest.ARTIFACT_TYPE,
    "config": oci_manifest.CONFIG_TYPE,
    "weights": oci_manifest.WEIGHT_TYPE,
    "part": oci_manifest.WEIGHT_CONFIG_TYPE,
    "docs": oci_manifest.DOC_TYPE,
}


@pytest.mark.parametrize("kind", ["modelpack", "kitops"])
def test_model_artifacts_of_other_tools_are_modules(
    wgtpm: Callable[..., object],
    project: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    weights: bytes,
    kind: str,
) -> None:
    """A ModelPack model (its config and weight media types) and a KitOps ModelKit (its
    config and tar layers), each layer's path in ``org.cncf.model.filepath``, as their
    tools push them: modules whose files are the layers, named by those paths."""
    types = MODELPACK if kind == "modelpack" else KITOPS
    module = f"example.com/acme/{kind}"
    repo = f"{oci_namespace}/{module}"
    files = {
        "model/weights.safetensors": weights,
        "model/tokenizer.json": b"{}",
        "README.md": b"hi",
    }
    layer_type = {
        "model/weights.safetensors": types["weights"],
        "model/tokenizer.json": types["part"],
        "README.md": types["docs"],
    }
    layers = []
    for name, data in files.items():
        layers.append(
            {
                "mediaType": layer_type[name],
                "digest": push_blob(oci_registry, repo, data),
                "size": len(data),
                "annotations": {oci_manifest.FILEPATH: name},
            }
        )
    if kind == "modelpack":
        config = {
            "descriptor": {"name": "pack", "version": "1"},
            "config": {"format": "safetensors"},
            "modelfs": {"type": "layers", "diffIds": [layer["digest"] for layer in layers]},
        }
    else:
        config = {
            "manifestVersion": "1.0.0",
            "package": {"name": "kit"},
            "model": {
                "path": "model/weights.safetensors",
                "parts": [{"path": "model/tokenizer.json"}],
            },
            "docs": [{"path": "README.md"}],
        }
    cfg = json.dumps(config).encode()
    doc = {
        "schemaVersion": 2,
        "mediaType": oci_manifest.MANIFEST_TYPE,
        "artifactType": types["artifact"],
        "config": {
            "mediaType": types["config"],
            "digest": push_blob(oci_registry, repo, cfg),
            "size": len(cfg),
        },
        "layers": layers,
        "annotations": {oci_manifest.CREATED: "2026-12-01T10:00:00Z"},
    }
    push_manifest(oci_registry, repo, "v0.3.0", json.dumps(doc).encode())
    monkeypatch.setenv("WGTPROXY", oci_registry.oci(oci_namespace))
    r = wgtpm("get", f"{module}@v0.3.0", cwd=project)  # type: ignore[operator]
    assert r.code == 0, r.err  # type: ignore[attr-defined]
    assert f"{module} v0.3.0 {h1(files)}" in (project / "wgt.sum").read_text()
    tree = cache_root() / "mod" / f"{module}@v0.3.0"
    for name, data in files.items():
        assert (tree / name).read_bytes() == data


def test_oras_pulls_a_wgtpm_release(
    oci_registry: OciRegistry, oci_namespace: str, tmp_path: Path, weights: bytes
) -> None:
    """The format read by ORAS (the Python package): every file under its path."""
    oras_client = pytest.importorskip("oras.client")
    path = "example.com/acme/pulled"
    files = {"wgt.mod": modtext(path), "w/weights.safetensors": weights, "README.md": b"x"}
    repo = f"{oci_namespace}/example.com/acme/pulled"
    push_release(oci_registry, repo, path, "v1.0.0", files)
    out = tmp_path / "out"
    client = oras_client.OrasClient(hostname=oci_registry.host, insecure=True)
    client.pull(target=f"{oci_registry.host}/{repo}:v1.0.0", outdir=str(out))
    for name, data in files.items():
        assert (out / name).read_bytes() == data
    index_bytes, _ = release(path, "v1.0.0", files)
    assert (out / "wgt.index.json").read_bytes() == index_bytes
