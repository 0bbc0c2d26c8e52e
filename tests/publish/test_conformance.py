"""One conformance suite that every :class:`~wgtpm.publish.PublishTarget` must pass.

Hand-made releases (no git, no build), published to a directory, a wgtpm
registry (uvicorn on loopback), the loopback GitHub and the loopback Hugging
Face Hub (tests/servers, with their write APIs). Each target is read back
the way consumers read it (the proxy protocol, the GitHub and Hugging Face
sources, ``wgtpm get``), never through the target itself:

- publish: the version is listed, its index is the release's bytes (so its
  h1), every file comes back, and ``wgtpm get`` writes the release's two
  wgt.sum lines;
- the build's SLSA statement comes back beside the index, never in its
  ``files``; publishing the same h1 with another build's statement is a
  no-op that keeps the first;
- immutability: the same release again is a no-op (``created=False``);
  another h1 for the version is refused naming both, and the published
  bytes stay what they were;
- a failure part-way through the upload (one file sent, the next refused)
  leaves no version visible; the same publish on a healed network succeeds;
- Ctrl-C at every point the target reports progress leaves either nothing
  visible or the complete release, and the next attempt completes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from tests.publish_hosts.conftest import GH_TOKEN, HF_TOKEN, Recorder, _clean_env, github, hf
from tests.registry.conftest import Live
from tests.servers import Fault
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from wgtpm import index as _index
from wgtpm._errors import NotFoundError, WgtpmError
from wgtpm._report import SILENT
from wgtpm._retry import Backoff
from wgtpm.dirhash import hash1_bytes
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.index import IndexEntry, build_index
from wgtpm.publish import DirectoryTarget, PublishTarget, RegistryTarget, Release
from wgtpm.publish._slsa import BuildRun, envelope_bytes, statement
from wgtpm.sources import Source
from wgtpm.sources.proxy import ProxySource

__all__ = ["_clean_env", "github", "hf"]  # fixtures used by the hosted cases

V = "v0.1.0"
#: Two files large enough for Hugging Face's LFS (by name), so an upload can fail between them.
FILES = {"data/a.bin": b"A" * 3000, "data/b.safetensors": b"B" * 2000}


def _attestation(module: str, index: bytes, files: dict[str, bytes], gguf: str) -> bytes:
    """An unsigned SLSA statement of the release, as a build with ``gguf`` installed writes."""
    run = BuildRun(
        module, V, "c" * 40, None, "", {"wgtpm": "0", "gguf": gguf}, "Linux", "t0", "t1", "id"
    )
    shas = {p: hashlib.sha256(b).hexdigest() for p, b in files.items()}
    return envelope_bytes(statement(run, index, shas), None)


def make_release(d: Path, module: str, salt: bytes = b"", gguf: str = "0.19.0") -> Release:
    d.mkdir(parents=True)
    files = {"wgt.mod": f"module {module}\nwgt 0.1\n".encode()}
    files.update({p: b + salt for p, b in FILES.items()})
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
    index = build_index(module, V, entries, time="2026-11-29T12:00:00Z")
    mod_h1 = hash1_bytes({"wgt.mod": files["wgt.mod"]})
    att = _attestation(module, index.to_json(), files, gguf)
    return Release(module, V, None, paths, index.to_json(), index.h1(), mod_h1, attestation=att)


@dataclass
class Case:
    """One target under test, and the consumer's side of it."""

    module: str
    make: Callable[[], PublishTarget]  # a target on a healthy network
    read: Callable[[], Source]  # a fresh reader, as consumers read (no cache)
    get_env: dict[str, str]  # the environment ``wgtpm get`` reads this target with
    #: A target whose upload of the release fails after its first file.
    broken: Callable[[Release], PublishTarget] | None = None
    heal: Callable[[], None] = field(default=lambda: None)


class _FailingWrites(httpx.BaseTransport):
    """The network between client and registry: every PUT of a file after the first answers 503."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.puts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT" and "/files/" in request.url.path:
            self.puts += 1
            if self.puts > 1:
                request.read()
                return httpx.Response(503, json={"error": "storage is down"})
        return self.inner.handle_request(request)


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(HttpOptions(timeout=10, retries=1, backoff=0.01, max_retry_after=2)) as c:
        yield c


def _directory(request: pytest.FixtureRequest, tmp_path: Path, http: HttpClient) -> Case:
    t = DirectoryTarget(tmp_path / "tree")
    m = "example.com/acme/conf"
    saved: dict[Path, bytes] = {}

    def broken(release: Release) -> PublishTarget:
        f = release.files["data/b.safetensors"]  # its bytes change after the index was made
        saved[f] = f.read_bytes()
        f.write_bytes(b"changed on disk")
        return t

    def heal() -> None:
        for f, data in saved.items():
            f.write_bytes(data)

    return Case(
        m,
        lambda: t,
        lambda: ProxySource(t.tree.url, None),
        {"WGTPROXY": t.tree.url},
        broken,
        heal,
    )


def _registry(request: pytest.FixtureRequest, tmp_path: Path, http: HttpClient) -> Case:
    live: Live = request.getfixturevalue("live")

    def broken(release: Release) -> PublishTarget:
        faulty = HttpClient(HttpOptions(retries=1, backoff=0.01), transport=_FailingWrites())
        return RegistryTarget(live.url, faulty, token=live.token)

    return Case(
        "example.com/acme/conf",
        lambda: RegistryTarget(live.url, http, token=live.token),
        lambda: ProxySource(live.url, http),
        {"WGTPROXY": live.url},
        broken,
    )


def _github(request: pytest.FixtureRequest, tmp_path: Path, http: HttpClient) -> Case:
    from wgtpm.publish import github as gh_target
    from wgtpm.publish.github import GitHubTarget
    from wgtpm.sources.github import GitHubSource

    server: GitHubServer = request.getfixturevalue("github")
    mp: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    mp.setattr(gh_target, "UPLOAD_RETRY", Backoff(attempts=2, base=0.0, sleep_fn=lambda s: None))
    server.repo("acme", "conf").commit()
    m = "github.com/acme/conf"
    env = {"GITHUB_API_URL": server.url, "GITHUB_TOKEN": GH_TOKEN}

    def broken(release: Release) -> PublishTarget:
        server.fail_uploads(after=1, times=100)
        return GitHubTarget(m, http, env)

    return Case(
        m,
        lambda: GitHubTarget(m, http, env),
        lambda: GitHubSource(http, api_url=server.url, token=GH_TOKEN),
        {**env, "WGTPROXY": "direct"},
        broken,
        lambda: server.fail_uploads(0, times=0),
    )


def _huggingface(request: pytest.FixtureRequest, tmp_path: Path, http: HttpClient) -> Case:
    import huggingface_hub.constants

    from wgtpm.publish.huggingface import HuggingFaceTarget
    from wgtpm.sources.huggingface import HuggingFaceSource

    server: HuggingFaceServer = request.getfixturevalue("hf")
    mp: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    mp.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)  # the loopback Hub: LFS
    server.repo("acme", "conf")
    m = "hf.co/acme/conf"
    env = {"HF_ENDPOINT": server.url, "HF_TOKEN": HF_TOKEN}

    def broken(release: Release) -> PublishTarget:
        second = hashlib.sha256(release.files["data/b.safetensors"].read_bytes()).hexdigest()
        server.inject(Fault.error(f"/lfs-upload/{second}*", 403, times=100))
        return HuggingFaceTarget(m, http, env)

    return Case(
        m,
        lambda: HuggingFaceTarget(m, http, env),
        lambda: HuggingFaceSource(http, endpoint=server.url, token=HF_TOKEN),
        {**env, "WGTPROXY": "direct"},
        broken,
        server.faults.clear,
    )


CASES = {
    "directory": _directory,
    "registry": _registry,
    "github": _github,
    "huggingface": _huggingface,
}


@pytest.fixture(params=list(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path, http: HttpClient) -> Case:
    return CASES[request.param](request, tmp_path, http)


# ---- reading back, as consumers do ----------------------------------------------


def _read_file(src: Source, http: HttpClient, module: str, name: str) -> bytes:
    req = src.file(module, V, name)
    if req.body is not None:
        return req.body
    if req.url.startswith("file:"):
        return Path(unquote(urlsplit(req.url).path)).read_bytes()
    return http.get(req.url, headers=req.headers).content


def assert_published(case: Case, http: HttpClient, release: Release) -> None:
    """``release`` is what consumers get: listed, its exact index (so h1), every file."""
    src = case.read()
    assert V in src.versions(case.module)
    index = src.index(case.module, V)
    assert index == release.index
    assert _index.parse(index, case.module, V).h1() == release.h1
    for name, path in release.files.items():
        assert _read_file(src, http, case.module, name) == path.read_bytes(), name


def assert_nothing_published(case: Case) -> None:
    """No version is visible: not listed, no index."""
    src = case.read()
    try:
        listed = src.versions(case.module)
    except NotFoundError:
        listed = []
    assert V not in listed
    assert V not in case.make().published_versions(case.module)
    with pytest.raises(WgtpmError):
        src.index(case.module, V)


# ---- the suite --------------------------------------------------------------------


def test_publish_then_get_back_with_the_same_h1(  # type: ignore[no-untyped-def]
    case: Case, http: HttpClient, tmp_path: Path, wgtpm, project: Path, monkeypatch
) -> None:
    t = case.make()
    t.ready()
    assert t.published_versions(case.module) == []
    release = make_release(tmp_path / "r1", case.module)
    t.check(release)
    done = t.publish(release, Recorder())
    assert done.created and done.url
    assert t.published_versions(case.module) == [V]
    assert_published(case, http, release)

    for k, v in case.get_env.items():
        monkeypatch.setenv(k, v)
    r = wgtpm("get", f"{case.module}@{V}", cwd=project)
    assert r.code == 0, r.err
    sums = [ln for ln in (project / "wgt.sum").read_text().splitlines() if case.module in ln]
    assert sums == release.sum_lines()
    assert GH_TOKEN not in r.out + r.err and HF_TOKEN not in r.out + r.err


def test_the_slsa_statement_is_served_beside_the_index(
    case: Case, http: HttpClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wgtpm.publish._rebuild import fetch_statement

    release = make_release(tmp_path / "r1", case.module)
    assert case.make().publish(release, SILENT).created
    src = case.read()
    assert src.attestation(case.module, V) == release.attestation  # type: ignore[attr-defined]
    for k, v in case.get_env.items():  # as verify --rebuild finds it through WGTPROXY
        monkeypatch.setenv(k, v)
    found = fetch_statement(case.module, V)
    assert found is not None and found[0] == release.attestation
    listed = {e.path for e in _index.parse(src.index(case.module, V), case.module, V).files}
    assert listed == set(release.files)  # not in the index: h1 does not cover it
    # the same bytes built elsewhere (another gguf): a no-op that keeps the first statement
    again = make_release(tmp_path / "r2", case.module, gguf="0.18.0")
    assert again.h1 == release.h1 and again.attestation != release.attestation
    assert case.make().publish(again, SILENT).created is False
    assert case.read().attestation(case.module, V) == release.attestation  # type: ignore[attr-defined]


def test_a_signed_release_round_trips(
    case: Case,
    tmp_path: Path,
    wgtpm,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """The signature (wgtpm.trust) comes back beside the index, outside it; ``wgtpm get``
    with a trust line accepts it, and refuses it under another trusted key in one line."""
    import json
    from dataclasses import replace

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from wgtpm.trust import make_bundle

    key = ec.generate_private_key(ec.SECP256R1())
    release = make_release(tmp_path / "r1", case.module)
    files = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
    release = replace(release, signature=make_bundle(f"{case.module}@{V}", files, key))
    assert case.make().publish(release, SILENT).created
    src = case.read()
    assert src.signature(case.module, V) == release.signature  # type: ignore[attr-defined]
    proxy = case.get_env.get("WGTPROXY", "")
    if proxy.startswith("http"):  # the registry's version page names the signer
        from wgtpm.trust._bundle import key_hint

        page = httpx.get(f"{proxy}/-/module/{case.module}/@v/{V}", timeout=10).text
        assert f"signed by key <code>{key_hint(key.public_key())[:16]}</code>" in page
    listed = {e.path for e in _index.parse(src.index(case.module, V), case.module, V).files}
    assert listed == set(release.files)  # not in the index: it signs the index

    def trust(k: ec.EllipticCurvePrivateKey) -> None:
        (project / "acme.pub").write_bytes(
            k.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        (project / "wgt.mod").write_text(
            f"module example.com/app\nwgt 0.1\ntrust {case.module} key=acme.pub\n"
        )

    for k, v in case.get_env.items():
        monkeypatch.setenv(k, v)
    trust(ec.generate_private_key(ec.SECP256R1()))
    r = wgtpm("get", f"{case.module}@{V}", cwd=project)
    assert r.code != 0 and r.err.strip().count("\n") == 0, r.err
    assert case.module in r.err and "key acme.pub" in r.err and "another key" in r.err
    assert not (project / "wgt.sum").exists()
    trust(key)
    r = wgtpm("get", f"{case.module}@{V}", cwd=project)
    assert r.code == 0, r.err
    sums = [ln for ln in (project / "wgt.sum").read_text().splitlines() if case.module in ln]
    assert sums == release.sum_lines()


def test_a_published_version_never_changes(case: Case, http: HttpClient, tmp_path: Path) -> None:
    t = case.make()
    release = make_release(tmp_path / "r1", case.module)
    assert t.publish(release, SILENT).created
    again = case.make()
    again.check(release)
    assert again.publish(release, SILENT).created is False  # the same release again: a no-op
    other = make_release(tmp_path / "r2", case.module, salt=b"2")
    with pytest.raises(WgtpmError) as err:
        again.check(other)
        again.publish(other, SILENT)
    assert release.h1 in str(err.value) and other.h1 in str(err.value)
    assert_published(case, http, release)  # nothing changed


def test_a_failure_part_way_publishes_nothing_and_the_retry_succeeds(
    case: Case, http: HttpClient, tmp_path: Path
) -> None:
    assert case.broken is not None
    release = make_release(tmp_path / "r1", case.module)
    with pytest.raises(WgtpmError):
        case.broken(release).publish(release, SILENT)
    assert_nothing_published(case)
    case.heal()
    t = case.make()
    t.check(release)
    assert t.publish(release, SILENT).created
    assert_published(case, http, release)


class _CtrlC(Recorder):
    """A reporter through which Ctrl-C arrives at its ``at``-th call (notice, start, advance...)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at
        self.calls = 0

    def _tick(self) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt

    def notice(self, message: str) -> None:
        self._tick()

    def warning(self, message: str) -> None:
        self._tick()

    def start(self, label: str, total: int) -> None:
        self._tick()

    def advance(self, label: str, n: int) -> None:
        self._tick()

    def finish(self, label: str) -> None:
        self._tick()


def test_ctrl_c_at_any_point_leaves_nothing_or_the_whole_release(
    case: Case, http: HttpClient, tmp_path: Path
) -> None:
    release = make_release(tmp_path / "r1", case.module)
    interrupted = 0
    for at in range(1, 200):
        try:
            case.make().publish(release, _CtrlC(at))
        except KeyboardInterrupt:
            interrupted += 1
            if V in case.make().published_versions(case.module):
                assert_published(case, http, release)  # interrupted after the end: complete
            else:
                assert_nothing_published(case)
            continue
        break
    else:
        pytest.fail("the publish never completed")
    assert_published(case, http, release)
    if not isinstance(case.make(), DirectoryTarget):  # those that report progress were interrupted
        assert interrupted >= 1
