"""``wgtpm build`` is incremental, shows training progress, and ``check`` finds every error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result

from .conftest import XOR, classifier, write

Run = Callable[..., Result]


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    d = tmp_path / "pkg"
    write(d, "wgt.mod", "module example.com/pkg\nwgt 0.1\n\nartifact xor xor.wgt\n")
    write(d, "xor.wgt", XOR)
    return d


def test_second_build_is_up_to_date_and_force_rebuilds(wgtpm: Run, pkg: Path) -> None:
    res = wgtpm("build", cwd=pkg)
    assert res.code == 0 and "built build/xor" in res.out
    assert "train xor: epoch 300/300" in res.err
    weights = pkg / "build" / "xor" / "weights.safetensors"
    first = weights.stat().st_mtime_ns

    res = wgtpm("build", cwd=pkg)
    assert res.code == 0
    assert res.out == "xor is up to date (no input changed; --force rebuilds)\n"
    assert "epoch" not in res.err  # no retraining
    assert weights.stat().st_mtime_ns == first

    res = wgtpm("build", "--force", cwd=pkg)
    assert "built build/xor" in res.out and "epoch 300/300" in res.err

    res = wgtpm("build", "--json", cwd=pkg)
    (doc,) = json.loads(res.out)["artifacts"]
    assert doc["name"] == "xor" and doc["up_to_date"] is True and doc["kind"] == "wgt"
    assert Path(doc["outputs"]["xor/weights.safetensors"]) == weights


@pytest.mark.parametrize(
    "change",
    [
        lambda p: write(p, "xor.wgt", XOR.replace("epochs=300", "epochs=200")),
        lambda p: write(p, "wgt.sum", ""),
        lambda p: write(p, "notes/extra.csv", "0,1\n"),  # any package file may be data
        lambda p: (p / "build" / "xor" / "weights.safetensors").unlink(),
        lambda p: write(p, "build/xor/manifest.json", "{}"),
    ],
    ids=["source", "wgt.sum", "data", "output-removed", "output-changed"],
)
def test_a_changed_input_or_output_rebuilds(
    change: Callable[[Path], object], wgtpm: Run, pkg: Path
) -> None:
    assert wgtpm("build", cwd=pkg).code == 0
    change(pkg)
    res = wgtpm("build", cwd=pkg)
    assert res.code == 0, res.err
    assert "built build/xor" in res.out


def test_an_imported_artifact_rebuilt_rebuilds_its_importer(wgtpm: Run, tmp_path: Path) -> None:
    enc = tmp_path / "enc"
    write(enc, "wgt.mod", "module example.com/enc\nwgt 0.1\n\nartifact xor xor.wgt\n")
    write(enc, "xor.wgt", XOR)
    app = tmp_path / "app"
    write(app, "wgt.mod", "module example.com/app\nwgt 0.1\n\nartifact clf model.wgt\n")
    write(app, "model.wgt", classifier('import h1 from "../enc/build/xor".h1 freeze'))
    assert wgtpm("build", cwd=enc).code == 0
    assert "built build/clf" in wgtpm("build", cwd=app).out
    assert "up to date" in wgtpm("build", cwd=app).out
    write(enc, "xor.wgt", XOR.replace("seed 0", "seed 1"))
    assert wgtpm("build", cwd=enc).code == 0
    assert "built build/clf" in wgtpm("build", cwd=app).out


def test_training_progress_on_a_pipe_is_a_few_lines(wgtpm: Run, pkg: Path) -> None:
    res = wgtpm("build", cwd=pkg)
    lines = [line for line in res.err.splitlines() if "epoch" in line]
    assert lines[0].startswith("wgtpm: train xor: epoch 1/300 loss ")
    assert lines[-1].startswith("wgtpm: train xor: epoch 300/300 loss ")
    assert "done in" in lines[-1]
    assert len(lines) < 10  # a line every few seconds, never one per epoch


def test_check_resolves_imports_in_a_package_and_reports_everything(
    wgtpm: Run, tmp_path: Path
) -> None:
    enc = tmp_path / "enc"
    write(enc, "wgt.mod", "module example.com/enc\nwgt 0.1\n\nartifact xor xor.wgt\n")
    write(enc, "xor.wgt", XOR)
    assert wgtpm("build", cwd=enc).code == 0
    app = tmp_path / "app"
    write(
        app,
        "wgt.mod",
        "module example.com/app\nwgt 0.1\n\nrequire example.com/enc v0.1.0\n"
        "replace example.com/enc => ../enc\n\nartifact clf model.wgt\n",
    )
    text = classifier("import h1 from example.com/enc/nope.h1 freeze")
    text = text.replace("linear(in=8", "linear(in=9").replace("[1, 1] -> [0]", "[1] -> [0]")
    write(app, "model.wgt", text)
    res = wgtpm("check", "model.wgt", cwd=app)
    assert res.code == 1
    assert "in=9" in res.err
    assert "row has 1 input, expected 2" in res.err
    assert (
        "import h1: " in res.err
        and "module example.com/enc (" in res.err
        and "has no artifact nope" in res.err
    )
    res = wgtpm("check", "--json", "model.wgt", cwd=app)
    doc = json.loads(res.out)
    assert doc["ok"] is False and len(doc["errors"]) == 3
    assert {"file", "line", "col", "message"} == set(doc["errors"][0])

    write(app, "model.wgt", classifier("import h1 from example.com/enc/xor.h1 freeze"))
    res = wgtpm("check", "--json", "model.wgt", cwd=app)
    assert res.code == 0, res.out + res.err
    assert json.loads(res.out) == {
        "file": "model.wgt",
        "ok": True,
        "summary": json.loads(res.out)["summary"],
        "imports": 1,
    }


def test_run_main_module_artifact(wgtpm: Run, pkg: Path) -> None:
    res = wgtpm("run", "example.com/pkg/xor", "--input", "[0, 1]", cwd=pkg)
    assert res.code == 1
    assert (
        "artifact 'xor' of the main module example.com/pkg is not built: run 'wgtpm build xor'"
        in res.err
    )
    assert wgtpm("build", cwd=pkg).code == 0
    res = wgtpm("run", "example.com/pkg/xor", "--input", "[0, 1]", cwd=pkg)
    assert res.code == 0 and round(json.loads(res.out)["y"][0]) == 1
    res = wgtpm("path", "example.com/pkg/xor", cwd=pkg)
    assert res.code == 0 and Path(res.out.strip()) == pkg / "build" / "xor"
