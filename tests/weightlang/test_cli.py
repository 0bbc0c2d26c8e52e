"""The commands, run in-process: build, check, run, inspect, verify.

The end-to-end case is the one a new user meets: a base model published to a
(loopback) proxy, and a classifier package that requires it, imports its
hidden layer frozen, builds, runs, and shows the layer's provenance.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load as safetensors_load

from tests.conftest import Result
from tests.servers.proxytree import ProxyTreeServer
from wgtpm.proxytree import ProxyTree
from wgtpm.weightlang.api import open_artifact

from .conftest import XOR, assert_no_artifact, classifier, tree_hashes, write

Run = Callable[..., Result]
BASE = "github.com/acme/xor-base"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _package(
    directory: Path, module: str, artifacts: str, files: dict[str, str], extra: str = ""
) -> Path:
    write(directory, "wgt.mod", f"module {module}\nwgt 0.1\n{extra}\n{artifacts}")
    for name, text in files.items():
        write(directory, name, text)
    return directory


@pytest.fixture
def base_pkg(tmp_path: Path) -> Path:
    return _package(
        tmp_path / "xor-base",
        BASE,
        "artifact xor xor.wgt\nartifact vocab data/vocab.json\n",
        {"xor.wgt": XOR, "data/vocab.json": '{"a": 1}\n'},
    )


def test_build_run_inspect_verify(wgtpm: Run, base_pkg: Path) -> None:
    res = wgtpm("build", cwd=base_pkg)
    assert res.code == 0, res.err
    assert "built build/xor from xor.wgt: weights sha256 " in res.out
    assert "(4 trained); training: loss " in res.out and "train accuracy 1.00 on 4 rows" in res.out
    assert "copied data/vocab.json to build/data/vocab.json" in res.out
    assert (base_pkg / "build" / "data" / "vocab.json").read_text() == '{"a": 1}\n'
    first = tree_hashes(base_pkg / "build")
    assert wgtpm("build", "xor", cwd=base_pkg).code == 0
    assert tree_hashes(base_pkg / "build") == first

    res = wgtpm("run", "xor", "--input", "[[0, 0], [0, 1], [1, 0], [1, 1]]", cwd=base_pkg)
    assert res.code == 0, res.err
    assert [round(v[0]) for v in json.loads(res.out)["y"]] == [0, 1, 1, 0]
    res = wgtpm("run", "build/xor", "--input", "[1, 0]", cwd=base_pkg)
    assert round(json.loads(res.out)["y"][0]) == 1

    res = wgtpm("inspect", "xor", "--json", cwd=base_pkg)
    assert res.out.encode() == (base_pkg / "build" / "xor" / "manifest.json").read_bytes()
    res = wgtpm("inspect", "xor", cwd=base_pkg)
    assert (
        "layers     h1 = linear(in=2, out=8) -> a1 = tanh -> out = linear(in=8, out=1)" in res.out
    )
    assert "h1.weight      [8, 2]    trained" in res.out

    res = wgtpm("verify", "xor", cwd=base_pkg)
    assert res.code == 0 and ": ok: model xor, weights sha256 " in res.out
    res = wgtpm("verify", "build/xor", "--json", cwd=base_pkg)
    report = json.loads(res.out)
    assert (report["ok"], report["model"], report["tensors"], report["untrained"]) == (
        True,
        "xor",
        4,
        [],
    )


def _publish(tree: ProxyTree, base_pkg: Path) -> None:
    files = {"wgt.mod": (base_pkg / "wgt.mod").read_bytes()}
    artifacts: dict[str, tuple[str, str]] = {}
    for f in sorted((base_pkg / "build" / "xor").iterdir()):
        files[f"xor/{f.name}"] = f.read_bytes()
        artifacts[f"xor/{f.name}"] = ("xor", "wgt")
    tree.add(BASE, "v0.1.0", files, commit=COMMIT, artifacts=artifacts)


def test_classifier_imports_a_frozen_layer_through_a_loopback_proxy(
    wgtpm: Run,
    base_pkg: Path,
    tmp_path: Path,
    tree: ProxyTree,
    http_tree: ProxyTreeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert wgtpm("build", "xor", cwd=base_pkg).code == 0
    _publish(tree, base_pkg)
    shutil.rmtree(base_pkg)  # only the proxy has it now
    monkeypatch.setenv("WGTPROXY", http_tree.url)
    app = _package(
        tmp_path / "classifier",
        "github.com/acme/xor-classifier",
        "artifact classifier model.wgt\n",
        {"model.wgt": classifier(f"import h1 from {BASE}/xor.h1 freeze")},
        extra=f"require {BASE} v0.1.0\n",
    )
    mod = (app / "wgt.mod").read_bytes()
    res = wgtpm("build", cwd=app)  # build reads wgt.sum, never writes it (as go build since 1.16)
    assert res.code == 1
    assert res.err.endswith("; run 'wgtpm get' to add it\n"), res.err
    assert (app / "wgt.mod").read_bytes() == mod and not (app / "wgt.sum").exists()
    assert wgtpm("get", cwd=app).code == 0
    sums = (app / "wgt.sum").read_bytes()
    res = wgtpm("build", cwd=app)
    assert res.code == 0, res.err
    assert "(2 imported, 2 trained)" in res.out and "train accuracy 1.00" in res.out
    assert f"{BASE} v0.1.0 h1:" in sums.decode()
    assert (app / "wgt.sum").read_bytes() == sums and (app / "wgt.mod").read_bytes() == mod

    clf = open_artifact(app / "build" / "classifier")
    record = clf.manifest.imports[0]
    assert record["package"] == {"module": BASE, "version": "v0.1.0", "commit": COMMIT}
    published = json.loads(tree_file(tree, "xor/manifest.json"))
    assert record["source_weights_sha256"] == published["weights"]["sha256"]
    weights = safetensors_load(tree_file(tree, "xor/weights.safetensors"))
    for name in ("weight", "bias"):  # bit-identical to what was published
        assert torch.equal(clf.layer("h1")[name], weights[f"h1.{name}"])
        assert not torch.equal(clf.layer("out")[name], weights[f"out.{name}"])

    res = wgtpm("inspect", "classifier", cwd=app)
    assert "h1.weight      [8, 2]    imported (upstream: trained)" in res.out
    assert "out.weight     [1, 8]    trained" in res.out
    assert f"h1 <- {BASE}/xor.h1 ({BASE}@v0.1.0, commit {COMMIT})" in res.out
    res = wgtpm("run", f"{BASE}/xor", "--input", "[1, 1]", cwd=app)
    assert res.code == 0 and round(json.loads(res.out)["y"][0]) == 0
    assert wgtpm("verify", f"{BASE}/xor", cwd=app).code == 0


def tree_file(tree: ProxyTree, path: str) -> bytes:
    [found] = list(tree.root.rglob(f"v0.1.0/{path}"))
    return found.read_bytes()


def test_check(wgtpm: Run, tmp_path: Path) -> None:
    write(tmp_path, "xor.wgt", XOR)
    res = wgtpm("check", "xor.wgt", cwd=tmp_path)
    assert res.code == 0
    assert res.out == (
        "xor.wgt: ok: model xor: 4 layers, 33 parameters, f32[2] -> f32[1]; "
        "trains on xor (4 rows) with loss=bce\n"
    )
    write(tmp_path, "bad.wgt", XOR.replace("tanh", "swish").replace("in=8", "in=9"))
    res = wgtpm("check", "bad.wgt", cwd=tmp_path)
    assert res.code == 1
    assert res.err.splitlines() == [
        "wgtpm: bad.wgt:10:12: unknown layer kind 'swish', expected one of linear, layernorm, "
        "rmsnorm, embedding, dropout, relu, tanh, sigmoid, gelu, softmax",
    ]


def test_bad_commands_exit_nonzero_with_one_message(
    wgtpm: Run, base_pkg: Path, tmp_path: Path
) -> None:
    assert wgtpm("build", "xor", cwd=base_pkg).code == 0
    cases = [
        (("build", "nope"), "wgt.mod declares no artifact nope; it declares: xor, vocab"),
        (("build",), "no wgt.mod in"),
        (("run", "xor", "--input", "[0, 1"), "--input is not valid JSON"),
        (("run", "xor", "--input", "[0, 1, 1]"), "input x takes [2] or [N, 2] values"),
        (("run", "xor", "--input", "[" * 30_000 + "]" * 30_000), "--input is nested too deeply"),
        (("run", "xor", "--input", '[1e999, "a"]'), "input x: not a vector of numbers"),
        (("run", "xor", "--input", "[1e999, 1]"), "input x: holds NaN or infinite values"),
        (("run", "xor", "--input", "[" + "9" * 5000 + ", 1]"), "--input is not valid JSON"),
        (("inspect", "missing"), "artifact missing: not found"),
    ]
    for args, message in cases:
        cwd = tmp_path if args == ("build",) else base_pkg
        res = wgtpm(*args, cwd=cwd)
        assert res.code == 1, args
        assert message in res.err, (args, res.err)

    weights = base_pkg / "build" / "xor" / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x00")
    for args in (("verify", "xor"), ("run", "xor", "--input", "[0, 1]"), ("inspect", "xor")):
        res = wgtpm(*args, cwd=base_pkg)
        assert res.code == 1 and "weights.safetensors does not match its manifest" in res.err
    res = wgtpm("verify", "xor", "--json", cwd=base_pkg)
    assert res.code == 1
    report = json.loads(res.out)
    assert report["ok"] is False and "does not match its manifest" in report["error"]


def test_import_of_a_module_that_is_not_required(wgtpm: Run, tmp_path: Path) -> None:
    app = _package(
        tmp_path / "app",
        "example.com/app",
        "artifact clf model.wgt\n",
        {"model.wgt": classifier(f"import h1 from {BASE}/xor.h1")},
    )
    res = wgtpm("build", cwd=app)
    assert res.code == 1
    assert f"model.wgt:22:16: import h1: {BASE}/xor: no module of the build list" in res.err
    assert_no_artifact(app / "build" / "clf")


def test_untrained_model_warns_when_run(wgtpm: Run, tmp_path: Path) -> None:
    text = XOR.replace("train data=xor loss=bce optimizer=adam lr=0.05 epochs=300\n", "")
    app = _package(tmp_path, "example.com/app", "artifact xor xor.wgt\n", {"xor.wgt": text})
    res = wgtpm("build", cwd=app)
    assert "training: none: the weights are random" in res.out
    res = wgtpm("run", "xor", "--input", "[0, 1]", cwd=app)
    assert res.code == 0
    assert "wgtpm: warning: artifact xor" in res.err and "untrained" in res.err
    res = wgtpm("inspect", "xor", cwd=app)
    assert "WARNING    untrained tensors: h1.bias, h1.weight, out.bias, out.weight" in res.out
