"""Importing the CLI or the PAW package loads no heavy library (STYLE.md, point 6).

``wgtpm get`` must start about as fast as Python itself, and ``import
wgtpm.paw`` must not pay for numpy or torch before a program is built or run.
Each import runs in a fresh interpreter, so what other tests loaded does not count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "torch", "transformers", "peft", "gguf", "safetensors")


@pytest.mark.parametrize("module", ["wgtpm.paw", "wgtpm.cli", "wgtpm.build", "wgtpm.pinned"])
def test_import_loads_nothing_heavy(module: str) -> None:
    code = (
        f"import json, sys, {module}; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    ).stdout
    assert json.loads(out) == [], f"import {module} loaded {out.strip()}"


def test_modfile_reads_the_kinds_table_without_the_builders() -> None:
    code = (
        "import json, sys, wgtpm.modfile; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('wgtpm.'))))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    ).stdout
    loaded = json.loads(out)
    assert "wgtpm.kinds" in loaded
    assert not [m for m in loaded if m.startswith(("wgtpm.build", "wgtpm.paw", "wgtpm.weightlang"))]


#: What a ``wgtpm get`` that downloads loads only when a setting asks for it (each costs
#: milliseconds of every download's start): the provenance check needs neither zipfile
#: nor platform, and a release without a provenance file does not load its module; the
#: checksum database's client loads only when WGTSUMDB names one.
NOT_FOR_A_DOWNLOAD = (
    "zipfile",
    "platform",
    "wgtpm.sumdb.remote",
    "huggingface_hub",
    "httpx",
    "wgtpm.publish._provenance",
    "wgtpm._cachemaint",  # cache verify, clean and gc only
)


def test_a_download_loads_only_what_it_uses(tmp_path: Path) -> None:
    from wgtpm.proxytree import ProxyTree

    tree = ProxyTree(tmp_path / "tree")
    mod = "example.com/acme/w"
    tree.add(mod, "v0.1.0", {"wgt.mod": f"module {mod}\n".encode(), "w.bin": b"weights"})
    project = tmp_path / "app"
    project.mkdir()
    (project / "wgt.mod").write_text("module example.com/app\n")
    code = (
        "import json, sys\nfrom wgtpm.cli import main\n"
        f"code = main(['get', '-q', '{mod}@v0.1.0'])\n"
        f"print(json.dumps([code, sorted(m for m in {NOT_FOR_A_DOWNLOAD!r} if m in sys.modules)]))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "WGTPROXY": tree.root.as_uri(),
        "WGTPM_CACHE": str(tmp_path / "cache"),
    }
    env.pop("WGTSUMDB", None)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=project,
    ).stdout
    assert json.loads(out) == [0, []]
    assert (tmp_path / "cache").is_dir()
