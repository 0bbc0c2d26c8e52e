"""``wgtpm get``, ``tidy``, ``list``, ``graph``, ``why``, ``verify`` against a proxy tree.

The tree is served as ``file://`` and, where it matters, over real HTTP on
loopback. Hashes are recomputed here independently of wgtpm's code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from tests.httpclients import no_client_left_open
from wgtpm.module import ModuleVersion, escape_path
from wgtpm.proxytree import ProxyTree


def h1(files: dict[str, bytes]) -> str:
    """Hash1 the slow, obvious way: sha256sum lines, sorted, then sha256 and base64."""
    lines = "".join(f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n" for n in sorted(files))
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def modtext(path: str, requires: list[str] = (), extra: str = "") -> bytes:  # type: ignore[assignment]
    body = f"module {path}\nwgt 0.1\n"
    for r in requires:
        body += f"require {r}\n"
    return (body + extra).encode()


def pub(
    tree: ProxyTree,
    path: str,
    version: str,
    requires: list[str] = (),
    files: dict[str, bytes] | None = None,
    extra: str = "",
) -> dict[str, bytes]:  # type: ignore[assignment]
    fs = {
        "wgt.mod": modtext(path, list(requires), extra),
        **(files or {f"{path.rsplit('/', 1)[-1]}/weights.bin": f"{path}@{version}".encode() * 50}),
    }
    tree.add(path, version, fs)
    return fs


@pytest.fixture
def graph(tree: ProxyTree) -> dict[str, dict[str, bytes]]:
    """a v0.1.0 -> b v0.1.0, c v0.1.0; c v0.1.0 -> b v0.2.0; b has v0.1.0..v0.3.0."""
    out = {}
    out["b1"] = pub(tree, "github.com/acme/b", "v0.1.0")
    out["b2"] = pub(tree, "github.com/acme/b", "v0.2.0")
    out["b3"] = pub(tree, "github.com/acme/b", "v0.3.0")
    out["c1"] = pub(tree, "github.com/acme/c", "v0.1.0", ["github.com/acme/b v0.2.0"])
    out["a1"] = pub(
        tree,
        "github.com/acme/a",
        "v0.1.0",
        ["github.com/acme/b v0.1.0", "github.com/acme/c v0.1.0"],
    )
    return out


def sum_lines(project: Path) -> list[str]:
    return (project / "wgt.sum").read_text().splitlines()


def test_init(wgtpm, tmp_path: Path) -> None:
    r = wgtpm("init", "github.com/acme/new", cwd=tmp_path)
    assert r.code == 0
    assert (tmp_path / "wgt.mod").read_text() == "module github.com/acme/new\nwgt 0.1\n"
    r = wgtpm("init", "github.com/acme/new", cwd=tmp_path)
    assert r.code == 1 and "already exists" in r.err
    bad = tmp_path / "bad"
    bad.mkdir()
    r = wgtpm("init", "x//y", cwd=bad)
    assert r.code == 1 and "empty path element" in r.err
    assert not (bad / "wgt.mod").exists()


def test_get_resolves_by_mvs_and_writes_sums(wgtpm, tree, project, graph, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert "added github.com/acme/b v0.2.0" in r.err
    mod = (project / "wgt.mod").read_text()
    assert "require github.com/acme/a v0.1.0\n" in mod
    assert "github.com/acme/b" not in mod  # implied by a: minimal requirements
    assert sum_lines(project) == [
        f"github.com/acme/a v0.1.0 {h1(graph['a1'])}",
        f"github.com/acme/a v0.1.0/wgt.mod {h1({'wgt.mod': graph['a1']['wgt.mod']})}",
        f"github.com/acme/b v0.1.0/wgt.mod {h1({'wgt.mod': graph['b1']['wgt.mod']})}",
        f"github.com/acme/b v0.2.0 {h1(graph['b2'])}",
        f"github.com/acme/b v0.2.0/wgt.mod {h1({'wgt.mod': graph['b2']['wgt.mod']})}",
        f"github.com/acme/c v0.1.0 {h1(graph['c1'])}",
        f"github.com/acme/c v0.1.0/wgt.mod {h1({'wgt.mod': graph['c1']['wgt.mod']})}",
    ]
    r = wgtpm("list", "-m", "all", cwd=project)
    assert r.out.split("\n")[:4] == [
        "example.com/app",
        "github.com/acme/a v0.1.0",
        "github.com/acme/b v0.2.0",
        "github.com/acme/c v0.1.0",
    ]
    # The files are in the cache, read-only, with the published bytes.
    cache = Path(os.environ["WGTPM_CACHE"])
    f = cache / "mod" / "github.com/acme/b@v0.2.0" / "b/weights.bin"
    assert f.read_bytes() == graph["b2"]["b/weights.bin"]
    assert not f.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    # The cache speaks the proxy protocol itself.
    assert (cache / "download/github.com/acme/b/@v/list").read_text().split() == ["v0.2.0"]
    assert (cache / "download/github.com/acme/b/@v/v0.2.0/b/weights.bin").read_bytes() == graph[
        "b2"
    ]["b/weights.bin"]


def test_get_no_args_downloads_build_list_and_noop_writes_nothing(
    wgtpm, tree, project, graph, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\n\nrequire github.com/acme/c v0.1.0 // the classifier\n"
    )
    assert wgtpm("get", cwd=project).code == 0
    assert "// the classifier" in (project / "wgt.mod").read_text()
    before = [(p.name, p.stat().st_mtime_ns) for p in (project / "wgt.sum", project / "wgt.mod")]
    monkeypatch.setenv("WGTPROXY", "off")  # all cached: no network needed
    r = wgtpm("get", cwd=project)
    assert r.code == 0, r.err
    assert [
        (p.name, p.stat().st_mtime_ns) for p in (project / "wgt.sum", project / "wgt.mod")
    ] == before


def test_queries(wgtpm, tree, project, graph, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/b", "v0.3.1")
    pub(tree, "github.com/acme/b", "v0.4.0-rc.1")
    assert wgtpm("get", "github.com/acme/b@v0.2.0", cwd=project).code == 0
    assert "github.com/acme/b v0.2.0" in (project / "wgt.mod").read_text()
    assert wgtpm("get", "github.com/acme/b@patch", cwd=project).code == 0  # stays on v0.2.x
    assert "github.com/acme/b v0.2.0" in (project / "wgt.mod").read_text()
    assert wgtpm("get", "github.com/acme/b@latest", cwd=project).code == 0
    assert "github.com/acme/b v0.3.1" in (project / "wgt.mod").read_text()
    assert wgtpm("get", "github.com/acme/b@<v0.3.1", cwd=project).code == 0
    assert "github.com/acme/b v0.3.0" in (project / "wgt.mod").read_text()
    assert wgtpm("get", "github.com/acme/b@v0.4.0-rc.1", cwd=project).code == 0
    assert "github.com/acme/b v0.4.0-rc.1" in (project / "wgt.mod").read_text()
    assert wgtpm("get", "github.com/acme/b@upgrade", cwd=project).code == 0  # never goes down
    assert "github.com/acme/b v0.4.0-rc.1" in (project / "wgt.mod").read_text()
    assert wgtpm("get", "github.com/acme/b@v0", cwd=project).code == 0
    assert "github.com/acme/b v0.3.1" in (project / "wgt.mod").read_text()
    r = wgtpm("get", "github.com/acme/b@v9", cwd=project)
    assert r.code == 1 and "github.com/acme/b: no version matches query 'v9'" in r.err
    r = wgtpm("get", "github.com/acme/nope@latest", cwd=project)
    assert r.code == 1 and "github.com/acme/nope" in r.err


def test_downgrade_and_none(wgtpm, tree, project, graph, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/c", "v0.0.9", ["github.com/acme/b v0.1.0"])
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0
    # b is at v0.2.0 because c v0.1.0 needs it; lowering b to v0.1.0 must lower c,
    # and a (which needs c v0.1.0 and has no older version) must go.
    r = wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert "downgraded github.com/acme/c v0.1.0 => v0.0.9" in r.err
    assert "removed github.com/acme/a v0.1.0" in r.err
    r = wgtpm("list", "-m", "all", "--json", cwd=project)
    assert {m["path"]: m.get("version") for m in json.loads(r.out)}["github.com/acme/b"] == "v0.1.0"
    r = wgtpm("get", "github.com/acme/b@none", cwd=project)
    assert r.code == 0, r.err
    assert "removed github.com/acme/c v0.0.9" in r.err  # c needs b, so it goes too
    assert "require" not in (project / "wgt.mod").read_text()


def test_retracted_versions_skipped_by_queries_but_fetchable(
    wgtpm, tree, project, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/b", "v0.1.0")
    pub(tree, "github.com/acme/b", "v0.2.0")
    pub(
        tree,
        "github.com/acme/b",
        "v0.3.0",
        extra="retract v0.2.0 // trained on the wrong split\nretract v0.3.0 // the retraction itself\n",
    )
    assert wgtpm("get", "github.com/acme/b@latest", cwd=project).code == 0
    assert "github.com/acme/b v0.1.0" in (project / "wgt.mod").read_text()
    r = wgtpm("get", "github.com/acme/b@v0.2.0", cwd=project)
    assert r.code == 0
    assert "retracted by module author: trained on the wrong split" in r.err
    r = wgtpm("list", "-m", "-u", "all", cwd=project)
    assert "github.com/acme/b v0.2.0 (retracted)" in r.out


def test_exclude_and_replace(wgtpm, tree, project, graph, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\n\nrequire github.com/acme/a v0.1.0\nexclude github.com/acme/b v0.2.0\n"
    )
    assert wgtpm("get", cwd=project).code == 0, "excluded b v0.2.0 must round up to v0.3.0"
    assert "github.com/acme/b v0.3.0" in wgtpm("list", "-m", "all", cwd=project).out
    local = tmp_path / "b-local"
    (local / "b").mkdir(parents=True)
    (local / "wgt.mod").write_text("module github.com/acme/b\nwgt 0.1\n")
    (local / "b" / "weights.bin").write_bytes(b"local")
    r = wgtpm("mod", "edit", "-replace", f"github.com/acme/b={local}", cwd=project)
    assert r.code == 0, r.err
    out = wgtpm("list", "-m", "all", cwd=project).out
    assert f"github.com/acme/b v0.3.0 => {local}" in out
    from wgtpm.modload import open_resolver

    res = open_resolver(project)
    assert (res.module("github.com/acme/b").dir / "b" / "weights.bin").read_bytes() == b"local"


def test_tidy_prunes_sum_and_minimises(wgtpm, tree, project, graph, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\n\nrequire (\n\tgithub.com/acme/a v0.1.0\n\tgithub.com/acme/b v0.1.0 // indirect\n)\n"
    )
    (project / "wgt.sum").write_text(
        "github.com/acme/zzz v1.0.0 h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
    )
    r = wgtpm("tidy", cwd=project)
    assert r.code == 0, r.err
    assert "github.com/acme/b" not in (project / "wgt.mod").read_text()
    lines = sum_lines(project)
    assert not any("zzz" in ln for ln in lines)
    assert f"github.com/acme/b v0.2.0 {h1(graph['b2'])}" in lines
    # readonly: a tidy project passes, an untidy one is refused and untouched
    assert wgtpm("tidy", "-mod=readonly", cwd=project).code == 0
    (project / "wgt.mod").write_text(
        (project / "wgt.mod").read_text() + "require github.com/acme/b v0.3.0\n"
    )
    mod, sums = (project / "wgt.mod").read_bytes(), (project / "wgt.sum").read_bytes()
    monkeypatch.setenv("WGTFLAGS", "-mod=readonly")
    r = wgtpm("get", cwd=project)
    assert r.code == 1 and "readonly" in r.err
    assert (project / "wgt.mod").read_bytes() == mod and (project / "wgt.sum").read_bytes() == sums


def test_graph_and_why(wgtpm, tree, project, graph, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0
    g = wgtpm("graph", cwd=project).out.splitlines()
    assert "github.com/acme/c@v0.1.0 github.com/acme/b@v0.2.0" in g
    assert "example.com/app github.com/acme/a@v0.1.0" in g
    w = wgtpm("why", "github.com/acme/b", "github.com/acme/zzz", cwd=project).out
    assert "# github.com/acme/b\nexample.com/app\ngithub.com/acme/a\ngithub.com/acme/b\n" in w
    assert "does not need module github.com/acme/zzz" in w
    v = wgtpm("list", "-m", "-versions", "github.com/acme/b", cwd=project).out
    assert v.strip() == "github.com/acme/b v0.1.0 v0.2.0 v0.3.0"


def test_proxy_list_fallthrough(wgtpm, tree, project, monkeypatch, tmp_path) -> None:
    from tests.servers import Fault
    from tests.servers.proxytree import ProxyTreeServer

    empty = ProxyTree(tmp_path / "empty")
    empty.root.mkdir()
    pub(tree, "github.com/acme/b", "v0.1.0")
    with ProxyTreeServer(empty.root) as first, ProxyTreeServer(tree.root) as second:
        monkeypatch.setenv("WGTPROXY", f"{first.url},{second.url}")
        assert wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project).code == 0  # 404 falls through
        asked = first.log.where(path="/github.com/acme/b/*")
        assert asked and all(s.status == 404 for s in asked)
        # A 500 stops a ',' list but not a '|' list.
        from wgtpm.cache import Cache

        Cache().clean()
        (project / "wgt.mod").write_text("module example.com/app\nwgt 0.1\n")
        first.inject(Fault.error("/github.com/acme/b/*", status=500, times=-1))
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "1")
        monkeypatch.setenv("WGTPROXY", f"{first.url},{second.url}")
        r = wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project)
        assert r.code == 1 and "500" in r.err
        monkeypatch.setenv("WGTPROXY", f"{first.url}|{second.url}")
        r = wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    monkeypatch.setenv("WGTPROXY", "off")
    r = wgtpm("get", "github.com/acme/zzz@v0.1.0", cwd=project)
    assert r.code == 1 and "WGTPROXY=off" in r.err


def test_escaped_paths_over_http(wgtpm, tree, project, http_tree, monkeypatch) -> None:
    pub(
        tree,
        "hf.co/Qwen/Qwen3-Tiny",
        "v1.0.0",
        files={"config.json": b"{}", "model.safetensors": b"x" * 1000},
    )
    monkeypatch.setenv("WGTPROXY", http_tree.url)
    r = wgtpm("get", "huggingface.co/Qwen/Qwen3-Tiny@v1.0.0", cwd=project)
    assert r.code == 0, r.err
    assert "require hf.co/Qwen/Qwen3-Tiny v1.0.0" in (project / "wgt.mod").read_text()
    assert http_tree.log.where(path="/hf.co/!qwen/!qwen3-!tiny/@v/v1.0.0.index.json")
    assert (tree.root / escape_path("hf.co/Qwen/Qwen3-Tiny")).is_dir()


def test_select_fetches_part_but_locks_all(wgtpm, tree, project, http_tree, monkeypatch) -> None:
    files = {"a.gguf": b"A" * 5000, "b.gguf": b"B" * 5000, "README.md": b"readme"}
    pub(tree, "hf.co/acme/big", "v1.0.0", files=files)
    monkeypatch.setenv("WGTPROXY", http_tree.url)
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\nselect hf.co/acme/big a.gguf\n"
    )
    assert wgtpm("get", "hf.co/acme/big@v1.0.0", cwd=project).code == 0
    got = {s.path.rsplit("/", 1)[-1] for s in http_tree.log if "/@v/v1.0.0/" in s.path}
    assert got == {"a.gguf", "wgt.mod"}
    full = {"wgt.mod": modtext("hf.co/acme/big"), **files}
    assert f"hf.co/acme/big v1.0.0 {h1(full)}" in sum_lines(project)


def test_error_shows_requirement_path(wgtpm, tree, project, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/a", "v0.1.0", ["github.com/acme/b v0.9.9"])
    pub(tree, "github.com/acme/b", "v0.1.0")
    before = (project / "wgt.mod").read_bytes()
    r = wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project)
    assert r.code == 1
    assert (
        "example.com/app\n\trequires github.com/acme/a@v0.1.0\n\t\trequires github.com/acme/b@v0.9.9: "
        in r.err
    )
    assert "not found" in r.err
    assert (project / "wgt.mod").read_bytes() == before and not (project / "wgt.sum").exists()


def test_malformed_project_files_name_their_position(wgtpm, project) -> None:
    (project / "wgt.mod").write_text("module example.com/app\nrequire github.com/acme/a v1\n")
    r = wgtpm("get", cwd=project)
    assert r.code == 1 and "wgt.mod:2:27: invalid version 'v1'" in r.err
    (project / "wgt.mod").write_text("module example.com/app\n")
    (project / "wgt.sum").write_text("github.com/acme/a v0.1.0 h1:short\n")
    r = wgtpm("get", cwd=project)
    assert r.code == 1 and "wgt.sum:1: unsupported hash" in r.err


def test_noop_get_stamp_notices_missing_files(wgtpm, tree, project, graph, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0
    stamps = list((Path(os.environ["WGTPM_CACHE"]) / "meta" / "done").iterdir())
    assert len(stamps) == 1
    listed = stamps[0].read_text().split()
    f = Path(os.environ["WGTPM_CACHE"]) / "mod" / "github.com/acme/c@v0.1.0" / "c/weights.bin"
    assert str(f) in listed
    monkeypatch.setenv("WGTPROXY", "off")
    assert wgtpm("get", cwd=project).code == 0  # answered by the stamp
    os.chmod(f.parent, 0o755)
    f.unlink()
    r = wgtpm("get", cwd=project)  # the stamp no longer holds: the full check runs
    assert r.code == 0, r.err
    assert f.read_bytes() == graph["c1"]["c/weights.bin"]  # relinked from its verified blob
    with open(project / "wgt.sum", "a") as out:  # another wgt.sum: another stamp, a full check
        out.write("github.com/acme/zzz v1.0.0 h1:" + "A" * 43 + "=\n")
    assert wgtpm("get", cwd=project).code == 0
    assert len(list(stamps[0].parent.iterdir())) == 2


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("github.com/acme/a@foo!bar", "github.com/acme/a@foo!bar: not a version, a query"),
        ("github.com/acme/a@../../x", "github.com/acme/a@../../x: not a version, a query"),
        ("github.com/acme/a@main/../../x", "github.com/acme/a@main/../../x: not a version"),
        ("github.com/acme/a@", "github.com/acme/a@: empty version query"),
        ("github.com/acme/a@v1@v2", "github.com/acme/a@v1@v2: more than one '@'"),
        ("github.com/acme/a@" + "x" * 300, "github.com/acme/a@xxxx"),
        (
            "github.com/acme/a@0.1.0",
            "github.com/acme/a@0.1.0: a version starts with 'v'; "
            "did you mean github.com/acme/a@v0.1.0?",
        ),
        ("github.com/acme/a@1.2", "github.com/acme/a@1.2: a version starts with 'v'; did you"),
        ("github.com/acme/a@<0.2", "github.com/acme/a@<0.2: a version starts with 'v'; did you"),
    ],
)
def test_malformed_query_is_one_clear_line_before_any_request(
    wgtpm, project, monkeypatch, arg: str, message: str
) -> None:
    monkeypatch.setenv("WGTPROXY", "off")  # nothing may be asked of a source
    mod = (project / "wgt.mod").read_bytes()
    r = wgtpm("get", arg, cwd=project)
    assert r.code == 1, r.err
    assert r.err.startswith(f"wgtpm: {message}"), r.err
    assert len(r.err.splitlines()) == 1 and len(r.err) < 250, r.err
    assert (project / "wgt.mod").read_bytes() == mod and not (project / "wgt.sum").exists()


def _flip_first_sha256(text: str) -> str:
    at = text.index('"sha256": "') + len('"sha256": "')
    return text[:at] + ("0" if text[at] != "0" else "1") + text[at + 1 :]


@pytest.mark.parametrize(
    ("meta", "edit"),
    [
        # the selected b's index: a file's sha256 changed, so its h1 no longer matches
        (
            "github.com/acme/b/@v/v0.2.0.index.json",
            lambda t: _flip_first_sha256(t),
        ),
        # the wgt.mod of b v0.1.0, a version the graph reads but does not select
        ("github.com/acme/b/@v/v0.1.0.mod", lambda t: t + "require github.com/acme/evil v1.0.0\n"),
        # the wgt.mod of c, whose requirements MVS follows
        ("github.com/acme/c/@v/v0.1.0.mod", lambda t: t.replace("v0.2.0", "v0.3.0")),
    ],
)
def test_noop_get_stamp_does_not_skip_the_index_and_wgt_mod_checks(
    wgtpm, tree, project, graph, monkeypatch, meta, edit
) -> None:
    """SECURITY.md: a cached index or wgt.mod is checked against wgt.sum on every use."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0
    monkeypatch.setenv("WGTPROXY", "off")
    assert wgtpm("get", cwd=project).code == 0  # answered by the stamp
    f = Path(os.environ["WGTPM_CACHE"]) / "download" / meta
    os.chmod(f, 0o644)
    f.write_text(edit(f.read_text()))
    before = [(project / n).read_bytes() for n in ("wgt.mod", "wgt.sum")]
    r = wgtpm("get", cwd=project)
    assert r.code == 1
    assert "SECURITY ERROR: checksum mismatch" in r.err, r.err
    assert "\tcached:  h1:" in r.err and "downloaded" not in r.err, r.err  # it was not downloaded
    assert [(project / n).read_bytes() for n in ("wgt.mod", "wgt.sum")] == before


def test_branch_and_latest_without_releases_are_pseudo_versions(
    wgtpm, tree, project, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pv = "v0.0.0-20261101120000-3f9a2b7c1d0e"
    tree.add("github.com/acme/nightly", pv, {"w.bin": b"nightly"}, commit="3f9a2b7c1d0e" + "0" * 28)
    tree.alias("github.com/acme/nightly", "main", pv)
    tree.set_latest("github.com/acme/nightly", pv)
    r = wgtpm("get", "github.com/acme/nightly@main", cwd=project)
    assert r.code == 0, r.err
    assert f"require github.com/acme/nightly {pv}" in (project / "wgt.mod").read_text()
    (project / "wgt.mod").write_text("module example.com/app\n")
    r = wgtpm(
        "get", "github.com/acme/nightly@latest", cwd=project
    )  # no release: @latest names the branch head
    assert r.code == 0, r.err
    assert f"require github.com/acme/nightly {pv}" in (project / "wgt.mod").read_text()
    r = wgtpm("get", "github.com/acme/nightly@nosuchbranch", cwd=project)
    assert r.code == 1 and "nosuchbranch" in r.err


def test_excluded_version_is_refused_by_name(wgtpm, tree, project, graph, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    (project / "wgt.mod").write_text("module example.com/app\nexclude github.com/acme/b v0.2.0\n")
    r = wgtpm("get", "github.com/acme/b@v0.2.0", cwd=project)
    assert r.code == 1 and "github.com/acme/b@v0.2.0: excluded in wgt.mod" in r.err
    assert wgtpm("get", "github.com/acme/b@latest", cwd=project).code == 0
    assert "require github.com/acme/b v0.3.0" in (project / "wgt.mod").read_text()


def test_unreadable_project_file_is_named(wgtpm, project) -> None:
    (project / "wgt.sum").mkdir()  # a directory where wgt.sum should be
    r = wgtpm("get", cwd=project)
    assert r.code == 1 and "wgt.sum" in r.err and "Traceback" not in r.err


def test_get_paw_install_is_all_or_nothing(wgtpm, tree, project, monkeypatch, tmp_path) -> None:
    """A program that cannot be installed leaves wgt.mod and wgt.sum as they were."""
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "paw-cache"))
    monkeypatch.setenv("PAW_OFFLINE", "1")
    tree.add(  # verifies against its index, but is no .paw bundle
        "example.com/acme/programs",
        "v0.1.0",
        {
            "wgt.mod": b"module example.com/acme/programs\n",
            "fruit.paw": b"not a zip archive\n",
        },
        artifacts={"fruit.paw": ("fruit", "paw")},
    )
    monkeypatch.setenv("WGTPROXY", tree.url)
    mod = (project / "wgt.mod").read_bytes()
    r = wgtpm("get", "--paw-install", "example.com/acme/programs@v0.1.0", cwd=project)
    assert r.code == 1, r.err
    assert "fruit.paw: not a valid .paw program" in r.err, r.err
    assert (project / "wgt.mod").read_bytes() == mod and not (project / "wgt.sum").exists()
    assert not (Path(os.environ["WGTPM_CACHE"]) / "meta" / "done").exists()  # no stamp either
    # Without the install, the same get succeeds and writes both files.
    r = wgtpm("get", "example.com/acme/programs@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert "example.com/acme/programs v0.1.0 h1:" in (project / "wgt.sum").read_text()


def test_get_closes_its_http_client_however_it_ends(
    wgtpm, tree, project, http_tree, monkeypatch
) -> None:
    """A get over HTTP that succeeds, one that fails, and one stopped by Ctrl-C each close
    the HTTP client they opened (its watch thread and pooled connections)."""
    from wgtpm.modload.options import Options
    from wgtpm.modload.project import Project

    pub(tree, "github.com/acme/b", "v0.1.0")
    monkeypatch.setenv("WGTPROXY", http_tree.url)
    with no_client_left_open("a get"):
        r = wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    with no_client_left_open("a failed get"):
        r = wgtpm("get", "github.com/acme/missing@v0.1.0", cwd=project)
    assert r.code == 1 and "github.com/acme/missing" in r.err
    pub(tree, "github.com/acme/c", "v0.1.0")
    with (
        no_client_left_open("an interrupted get"),
        pytest.raises(KeyboardInterrupt),
        Project.locked(project, Options()) as p,
    ):
        p.module_dir(ModuleVersion("github.com/acme/c", "v0.1.0"))
        raise KeyboardInterrupt
    assert http_tree.log.where(path="/github.com/acme/c/@v/v0.1.0.index.json")


@pytest.mark.parametrize("query", ["v1", "<v0.3", "patch", "latest"])
def test_a_module_no_source_has_gives_the_reason_whatever_the_query(
    wgtpm, tree, project, monkeypatch, query: str
) -> None:
    """No list of versions is not "no version matches": every query, and 'list -m -versions',
    says why there is none (the proxy does not have the module, no source for its host)."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    tree.root.mkdir(parents=True, exist_ok=True)
    want = f"wgtpm: github.com/acme/nope: not found in {tree.url}\n"
    assert wgtpm("get", f"github.com/acme/nope@{query}", cwd=project).err == want
    assert wgtpm("list", "-m", "-versions", "github.com/acme/nope", cwd=project).err == want
    monkeypatch.setenv("WGTPROXY", "direct")
    no_host = "example.com/x: no direct source for host example.com"
    assert no_host in wgtpm("get", f"example.com/x@{query}", cwd=project).err
    assert no_host in wgtpm("list", "-m", "-versions", "example.com/x", cwd=project).err


_IMPORTING = """wgt 0.1
model m
input x: f32[2]
output y: f32[1]
layer h1 = linear(in=2, out=8)
layer out = linear(in=8, out=1)
import h1 from github.com/acme/b/b.h1 freeze
"""


@pytest.mark.parametrize(
    "args",
    [
        ["check", "m.wgt"],
        ["build", "m.wgt", "-o", "out"],
        ["paw", "install", "github.com/acme/b/b"],
        ["inspect", "github.com/acme/b/b"],
        ["run", "github.com/acme/b/b", "--input", "[1, 2]"],
    ],
    ids=" ".join,
)
def test_builder_commands_close_the_http_client_of_their_downloads(
    wgtpm, tree, project, http_tree, monkeypatch, tmp_path, args: list[str]
) -> None:
    """A builder that downloads its build list (an empty cache here) closes that HTTP client,
    here on the error path: module b holds no artifact to import or install."""
    pub(tree, "github.com/acme/b", "v0.1.0")
    monkeypatch.setenv("WGTPROXY", http_tree.url)
    assert wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project).code == 0
    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "empty-cache"))
    (project / "m.wgt").write_text(_IMPORTING)
    asked = len(http_tree.log)
    with no_client_left_open(" ".join(args)):
        r = wgtpm(*args, cwd=project)
    assert r.code == 1 and "github.com/acme/b" in r.err, r.err
    assert len(http_tree.log) > asked  # it did download
