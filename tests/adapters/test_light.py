"""``import wgtpm.adapters`` and naming ``wgtpm.adapter``/``wgtpm.load`` load no heavy library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "torch", "transformers", "peft", "gguf", "safetensors")


def test_naming_the_api_loads_nothing_heavy() -> None:
    code = (
        "import json, sys, wgtpm, wgtpm.adapters; wgtpm.adapter; wgtpm.load; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    ).stdout
    assert json.loads(out) == []
