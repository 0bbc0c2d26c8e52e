"""What a new user types on the first day and expects to work (issue 31, "Commands a new
user expected to work"): Go's and ``hf download``'s habits, typos answered with a hint."""

# ruff: noqa: F811  (the graph fixture, imported, is a parameter of the tests)
from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path

import pytest

from tests.servers import LoopbackServer, Request, Response
from tests.test_get import graph, pub  # noqa: F401  (graph: a fixture)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory with no wgt.mod at or above it."""
    d = tmp_path / "anywhere"
    d.mkdir()
    return d


def test_get_print_paths_outside_a_project(wgtpm, tree, graph, outside, monkeypatch) -> None:
    """As ``hf download`` and ``go install M@V``: a temporary main module, nothing written here."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", "--print-paths", "github.com/acme/a@v0.1.0", cwd=outside)
    assert r.code == 0, r.err
    (line,) = r.out.splitlines()
    assert (Path(line) / "wgt.mod").read_bytes() == graph["a1"]["wgt.mod"]
    assert "added" not in r.err  # no wgt.mod of the user's was changed
    assert list(outside.iterdir()) == []
    locks = Path(os.environ["WGTPM_CACHE"]) / "locks"
    assert not locks.exists() or not list(locks.iterdir())  # no lock of a project left behind
    r = wgtpm("get", cwd=outside)  # without a module named, there is nothing to do outside
    assert r.code == 1 and "no wgt.mod" in r.err


def test_list_versions_outside_a_project(wgtpm, tree, graph, outside, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("list", "-m", "-versions", "github.com/acme/b", cwd=outside)
    assert r.code == 0, r.err
    assert r.out == "github.com/acme/b v0.1.0 v0.2.0 v0.3.0\n"
    r = wgtpm("list", "-m", "-versions", "--json", "github.com/acme/b", cwd=outside)
    assert json.loads(r.out) == [
        {"path": "github.com/acme/b", "versions": ["v0.1.0", "v0.2.0", "v0.3.0"]}
    ]
    assert list(outside.iterdir()) == []
    r = wgtpm("list", "-m", "all", cwd=outside)  # a build list needs a project
    assert r.code == 1 and "no wgt.mod" in r.err


def test_init_accepts_a_name_without_a_dot(wgtpm, tree, graph, outside, monkeypatch) -> None:
    """As ``go mod init example``: a main module nobody fetches needs no host name."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("init", "example", cwd=outside)
    assert r.code == 0, r.err
    assert (outside / "wgt.mod").read_text() == "module example\nwgt 0.1\n"
    assert wgtpm("get", "github.com/acme/c@v0.1.0", cwd=outside).code == 0
    assert "require github.com/acme/c v0.1.0" in (outside / "wgt.mod").read_text()
    # a dependency still needs a host name
    (outside / "wgt.mod").write_text("module example\nwgt 0.1\nrequire acme/xor v0.1.0\n")
    r = wgtpm("list", "-m", cwd=outside)
    assert r.code == 1 and "host name with a dot" in r.err


def test_init_writes_a_gitignore_for_build_outputs(wgtpm, outside) -> None:
    r = wgtpm("init", "example.com/app", cwd=outside)
    assert r.code == 0, r.err
    assert (outside / ".gitignore").read_text() == "build/\ndist/\n"
    other = outside / "other"
    other.mkdir()
    (other / ".gitignore").write_text("*.pyc\n/build")  # the user's own lines stay
    assert wgtpm("init", "example.com/other", cwd=other).code == 0
    assert (other / ".gitignore").read_text() == "*.pyc\n/build\ndist/\n"


def test_retraction_checks_are_best_effort_with_the_registry_stopped(
    wgtpm,
    tree,
    graph,
    http_tree,
    project,
    tmp_path,
    monkeypatch,
) -> None:
    """As in Go: the selected versions are cached and verified; that the registry cannot say
    which versions are retracted now is a note, and a refused loopback connection one try."""
    monkeypatch.setenv("WGTPROXY", http_tree.url)
    first = tmp_path / "first"
    first.mkdir()
    (first / "wgt.mod").write_text("module example.com/first\nwgt 0.1\n")
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=first).code == 0
    http_tree.stop()
    for lists in Path(os.environ["WGTPM_CACHE"]).glob("meta/list"):  # older than their TTL
        shutil.rmtree(lists)
    r = wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert "note: retractions and deprecations not checked" in r.err
    assert "retrying" not in r.err
    assert "require github.com/acme/a v0.1.0" in (project / "wgt.mod").read_text()


@pytest.mark.parametrize(
    "url,env,final",
    [
        ("http://127.0.0.1:9/x/@v/list", {}, True),
        ("http://localhost:9/x/@v/list", {}, True),
        ("http://[::1]:9/x/@v/list", {}, True),
        ("https://registry.example/x/@v/list", {}, False),
        ("https://registry.example/x/@v/list", {"WGTPROXY": "https://registry.example"}, True),
        ("https://hf.co/api/models/x", {"WGTPROXY": "https://registry.example,direct"}, False),
        ("https://hf.co/api/models/x", {"HTTPS_PROXY": "http://squid.internal:3128"}, True),
    ],
)
def test_a_refused_connection_nearby_is_tried_once(url, env, final, monkeypatch) -> None:
    from wgtpm._retry import refused_for_good

    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    try:
        raise ConnectionError("connect failed") from ConnectionRefusedError(111, "refused")
    except ConnectionError as exc:
        assert refused_for_good(url, exc) is final
    assert not refused_for_good(url, TimeoutError("timed out"))


def test_a_read_of_a_stopped_local_server_is_tried_once(capsys, monkeypatch) -> None:
    """get and stream both ask the client's one retry rule, which gives up on a refusal nearby."""
    import socket

    from wgtpm.httpclient import HttpClient, HttpOptions, TransportError

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/x/@v/list"
    with HttpClient(HttpOptions(retries=3)) as http:
        with pytest.raises(TransportError) as got:
            http.get(url)
        assert "gave up after" not in str(got.value)
        with pytest.raises(TransportError) as got, http.stream(url):
            pass
        assert "gave up after" not in str(got.value)
    assert "retrying" not in capsys.readouterr().err


class _Registry(LoopbackServer):
    """Answers ``/healthz`` as a running ``wgtpm registry serve`` does."""

    name = "registry"

    def route(self, req: Request) -> Response:
        return Response.json({"status": "ok"}) if req.path == "/healthz" else Response.text("", 404)


def test_registry_serve_on_a_port_in_use_says_so_in_one_line(wgtpm, tmp_path) -> None:
    with _Registry() as reg:
        port = reg.port
        r = wgtpm("registry", "serve", "--port", str(port), "--data", str(tmp_path / "d"))
    assert r.code == 1
    assert r.err == (
        f"wgtpm: port {port} on 127.0.0.1 is in use, by a wgtpm registry; stop it, or "
        "serve on another port with --port (or WGTPM_REGISTRY_PORT)\n"
    )
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        r = wgtpm("registry", "serve", "--port", str(port), "--data", str(tmp_path / "d"))
    assert r.code == 1 and r.err.startswith(
        f"wgtpm: port {port} on 127.0.0.1 is in use, by another program;"
    )
    assert len(r.err.splitlines()) == 1


def test_get_u_upgrades_dependencies(wgtpm, tree, graph, project, monkeypatch) -> None:
    """``go get -u`` and ``-u=patch``: the dependencies go up, and stay indirect."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/b", "v0.2.1")
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0  # selects b v0.2.0
    r = wgtpm("get", "-u=patch", cwd=project)
    assert r.code == 0, r.err
    assert "upgraded github.com/acme/b v0.2.0 => v0.2.1" in r.err
    r = wgtpm("get", "-u", cwd=project)
    assert r.code == 0, r.err
    assert "upgraded github.com/acme/b v0.2.1 => v0.3.0" in r.err
    assert (
        (project / "wgt.mod")
        .read_text()
        .endswith(
            "require (\n\tgithub.com/acme/a v0.1.0\n\tgithub.com/acme/b v0.3.0 // indirect\n)\n"
        )
    )
    other = project.parent / "other"
    other.mkdir()
    (other / "wgt.mod").write_text("module example.com/other\nwgt 0.1\n")
    r = wgtpm("get", "-u", "github.com/acme/c@v0.1.0", cwd=other)  # c and what c requires
    assert r.code == 0, r.err
    assert "added github.com/acme/b v0.3.0" in r.err


def test_mod_flag_before_the_command(wgtpm, project) -> None:
    r = wgtpm("-mod=vendor", "list", "-m", cwd=project)
    assert r.code == 1 and "run 'wgtpm vendor' first" in r.err  # list read it
    r = wgtpm("-mod", "readonly", "list", "-m", cwd=project)
    assert r.code == 0 and r.out == "example.com/app\n"


def test_require_block_stays_sorted_after_get_and_tidy(
    wgtpm, tree, graph, project, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\nrequire (\n\tgithub.com/acme/c v0.1.0 // c\n)\n"
    )
    assert (
        wgtpm("get", "github.com/acme/b@v0.3.0", "github.com/acme/a@v0.1.0", cwd=project).code == 0
    )
    want = (
        "require (\n\tgithub.com/acme/a v0.1.0\n\tgithub.com/acme/b v0.3.0\n"
        "\tgithub.com/acme/c v0.1.0 // c\n)\n"
    )
    assert (project / "wgt.mod").read_text().endswith(want)
    mod = (
        (project / "wgt.mod")
        .read_text()
        .replace(
            want, "require (\n\t// b\n\tgithub.com/acme/b v0.3.0\n\tgithub.com/acme/a v0.1.0\n)\n"
        )
    )
    (project / "wgt.mod").write_text(mod)
    assert wgtpm("tidy", cwd=project).code == 0
    assert (
        (project / "wgt.mod")
        .read_text()
        .endswith("require (\n\tgithub.com/acme/a v0.1.0\n\t// b\n\tgithub.com/acme/b v0.3.0\n)\n")
    )


def test_typos_of_queries_and_versions_get_a_did_you_mean(
    wgtpm, tree, graph, project, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", "github.com/acme/b@lastest", cwd=project)
    assert r.code == 1 and r.err.rstrip().endswith("did you mean github.com/acme/b@latest?")
    for given, meant in (("v0.1.0", "v0.1.0"), ("0.1.0", "v0.1.0"), ("latest", "latest")):
        r = wgtpm("get", "github.com/acme/b", given, cwd=project)
        assert r.code == 1
        assert r.err.rstrip().endswith(f"did you mean github.com/acme/b@{meant}?"), r.err
    assert "require" not in (project / "wgt.mod").read_text()


def test_token_messages_name_no_file_of_wgtpm() -> None:
    from wgtpm._errors import UsageError
    from wgtpm.httpclient import HttpClient
    from wgtpm.publish.github import GitHubTarget
    from wgtpm.publish.huggingface import HuggingFaceTarget

    with HttpClient() as http:
        for target in (
            GitHubTarget("github.com/acme/xor", http, {}),
            HuggingFaceTarget("hf.co/acme/xor", http, {}),
        ):
            with pytest.raises(UsageError) as err:
                target.ready()
            assert "needs a token" in str(err.value)
            assert ".py" not in str(err.value) and "wgtpm/" not in str(err.value)


def test_retract_suggests_a_version_not_published_yet(wgtpm, tmp_path) -> None:
    from tests.publish.conftest import git, make_package

    pkg = make_package(
        tmp_path / "p", "example.com/acme/p", {"@artifacts": "notes notes.txt", "notes.txt": "x\n"}
    )
    for tag in ("v0.1.0", "v0.1.1", "v0.2.0", "v1.0.0"):
        git(pkg, "tag", tag)
    r = wgtpm("retract", "v0.1.0", "-m", "trained on the wrong split", cwd=pkg)
    assert r.code == 0, r.err
    assert r.err.rstrip().endswith("e.g. wgtpm publish --version v0.2.1")
    r = wgtpm("retract", "v1.0.0", "-m", "bad", cwd=pkg)
    assert r.err.rstrip().endswith("e.g. wgtpm publish --version v1.0.1")


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_build_checks_the_output_directory_before_training(wgtpm, tmp_path, monkeypatch) -> None:
    pytest.importorskip("torch")
    import wgtpm.weightlang.build as wbuild

    def trained(*a: object, **kw: object) -> None:
        raise AssertionError("built before -o was checked")

    monkeypatch.setattr(wbuild, "build_file", trained)
    (tmp_path / "a-file").write_text("")
    model = EXAMPLES / "xor-base" / "model.wgt"
    r = wgtpm("build", str(model), "-o", str(tmp_path / "a-file" / "out"), cwd=tmp_path)
    assert r.code == 1
    assert r.err.startswith(f"wgtpm: -o {tmp_path / 'a-file' / 'out'}: cannot write there")
    assert "nothing was built" in r.err


def test_inspect_dot_is_the_directory_not_build(wgtpm, tmp_path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "wgt.mod").write_text("module example.com/app\nwgt 0.1\n")
    (tmp_path / "build" / "xor").mkdir(parents=True)
    r = wgtpm("inspect", ".", cwd=tmp_path)
    assert r.code == 1
    assert (
        r.err
        == "wgtpm: artifact .: no manifest.json here; expected a WeightLang artifact directory\n"
    )


def test_paw_compile_print_config_needs_no_specification(wgtpm, tmp_path) -> None:
    r = wgtpm("paw", "compile", "--print-config", cwd=tmp_path)
    assert r.code == 0, r.err
    config = json.loads(r.out)
    assert config["steps"] > 0 and config["teachers"]
    r = wgtpm("paw", "compile", "--print-config", "--steps", "0", cwd=tmp_path)
    assert r.code == 1 and "--steps" in r.err  # the recipe is still checked


def test_a_dry_run_in_dist_does_not_block_a_dry_run_to_a_registry(wgtpm, tmp_path) -> None:
    """dist/ holds earlier dry runs, previews: with --to URL the registry says what is out."""
    from tests.publish.conftest import make_package
    from tests.servers.proxytree import ProxyTreeServer

    pkg = make_package(
        tmp_path / "p", "example.com/acme/p", {"@artifacts": "notes notes.txt", "notes.txt": "x\n"}
    )
    r = wgtpm("publish", "--version", "v0.2.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    (tmp_path / "registry").mkdir()
    with ProxyTreeServer(tmp_path / "registry") as registry:  # it has no version of p
        r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", "--to", registry.url, cwd=pkg)
    assert r.code == 0, r.err
    assert (pkg / "dist/example.com/acme/p/@v/list").read_text().split() == ["v0.1.0", "v0.2.0"]


def test_version_loads_no_parser() -> None:
    """``wgtpm --version`` costs no more than a no-op ``get``: no argparse, no command modules."""
    import subprocess
    import sys

    code = (
        "import sys; from wgtpm.cli import main; main(['--version']); "
        "print(sorted(m for m in ('argparse', 'wgtpm.cli._parser', 'wgtpm.cli._modcmds') "
        "if m in sys.modules))"
    )
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    from wgtpm import __version__

    assert out.splitlines() == [f"wgtpm {__version__}", "[]"]


def test_x_shows_the_range_a_206_holds(wgtpm, tree, project, monkeypatch) -> None:
    """A file fetched in ranges: each 206 line says which bytes of how many it carried."""
    from tests.servers.proxytree import ProxyTreeServer
    from wgtpm import modfetch

    monkeypatch.setattr(modfetch, "RANGED_MIN", 1 << 20)
    monkeypatch.setattr(modfetch, "RANGE_MIN", 1 << 19)
    tree.add(
        "github.com/acme/big",
        "v0.1.0",
        {"wgt.mod": b"module github.com/acme/big\n", "weights.bin": os.urandom(2 << 20)},
    )
    with ProxyTreeServer(tree.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("-x", "get", "-q", "github.com/acme/big@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    ranges = [ln for ln in r.err.splitlines() if "weights.bin -> 206" in ln]
    assert ranges, r.err
    assert all(" bytes " in ln and " of 2.0 MiB (" in ln for ln in ranges), ranges
    assert any(" -> 206 bytes 0 B-" in ln for ln in ranges), ranges


def _mib(text: str) -> float:
    n, unit = text.split()
    return float(n) * {"B": 1 / (1 << 20), "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}[unit]


def test_x_counts_the_bytes_of_a_range_read_past_httpx(wgtpm, tree, project, monkeypatch) -> None:
    """Ranges of RAW_MIN or more are read from the socket past httpx's counter: the size
    each 206 line shows is still the range's, not only the first chunk's."""
    from tests.servers.proxytree import ProxyTreeServer
    from wgtpm import _httptransport, modfetch

    monkeypatch.setattr(modfetch, "RANGED_MIN", 1 << 20)
    monkeypatch.setattr(modfetch, "RANGE_MIN", 2 * _httptransport.RAW_MIN)
    tree.add(
        "github.com/acme/bigger",
        "v0.1.0",
        {"wgt.mod": b"module github.com/acme/bigger\n", "weights.bin": os.urandom(8 << 20)},
    )
    with ProxyTreeServer(tree.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("-x", "get", "-q", "github.com/acme/bigger@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    ranges = [ln for ln in r.err.splitlines() if "weights.bin -> 206" in ln]
    assert ranges, r.err
    for ln in ranges:
        m = re.search(r"206 bytes (\S+ \S+)-(\S+ \S+) of 8\.0 MiB \((\S+ \S+),", ln)
        assert m, ln
        first, end, got = (_mib(g) for g in m.groups())
        assert abs(got - (end - first)) < 0.05, ln


def test_paw_compile_outside_a_project_fetches_its_module_interpreter(
    tiny_qwen3_hub, tmp_path, monkeypatch
) -> None:
    """`wgtpm paw compile --interpreter hf.co/...` outside a package: the interpreter is
    fetched and verified into the cache through a temporary main module, as `wgtpm get
    M@V` does there, and nothing is written to the working directory."""
    from types import SimpleNamespace

    from tests.conftest import TINY_QWEN3, TINY_QWEN3_VERSION
    from wgtpm.cli._paw import _compile_resolver

    work = tmp_path / "anywhere"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "cache"))
    spec = SimpleNamespace(
        interpreter=TINY_QWEN3,
        runtime=SimpleNamespace(base_model=None),
        local_path=lambda ref: None,
    )
    with _compile_resolver(spec) as resolver:
        m = resolver.module(TINY_QWEN3)
        assert m.version == TINY_QWEN3_VERSION
        assert (m.dir / "config.json").is_file()
        assert (m.dir / "model.safetensors").is_file()
    assert list(work.iterdir()) == []
