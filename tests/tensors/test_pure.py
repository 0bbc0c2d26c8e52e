"""wgtpm.tensors is pure: it imports no numpy, torch, safetensors nor gguf, and its public
list is complete."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import wgtpm.tensors

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "torch", "transformers", "safetensors", "gguf", "peft")


def test_importing_and_using_it_loads_nothing_heavy(tmp_path: Path) -> None:
    p = tmp_path / "m.safetensors"
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    p.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 4)
    code = (
        "import json, sys; from pathlib import Path; import wgtpm.tensors as t; "
        f"t.compute_table(Path({str(p)!r}), 'm.safetensors'); "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert json.loads(out) == []


def test_no_heavy_import_in_its_source() -> None:
    pattern = re.compile(rf"^\s*(?:import|from)\s+({'|'.join(HEAVY)})\b", re.M)
    for f in sorted((ROOT / "wgtpm" / "tensors").glob("*.py")):
        assert not pattern.search(f.read_text()), f


def test_the_public_list_is_complete() -> None:
    public = {n for n in dir(wgtpm.tensors) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(wgtpm.tensors, n)).__name__ == "module"}
    assert public - modules - {"annotations"} == set(wgtpm.tensors.__all__)
