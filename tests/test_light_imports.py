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


@pytest.mark.parametrize("module", ["wgtpm.paw", "wgtpm.cli", "wgtpm.build"])
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
