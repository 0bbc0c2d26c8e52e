"""The wgtpm demo: publish the example packages to a local proxy tree, then use them.

Everything runs offline, in a temporary directory:

1. build ``examples/xor-base`` (a WeightLang XOR model) and publish v0.1.0
   into a proxy-protocol file tree;
2. build ``examples/xor-classifier``, which imports xor-base's trained hidden
   layer (frozen) through its build list, and publish v0.1.0;
3. in a fresh project: ``wgtpm init``, ``wgtpm get`` the classifier (MVS pulls
   in xor-base), list the build list, show the graph, verify the cache,
   inspect the classifier's provenance and run it;
4. republish xor-base v0.1.0 with other weights and show that ``wgtpm get``
   refuses it loudly.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wgtpm.proxytree import ProxyTree  # noqa: E402


def sh(
    *args: str, cwd: Path, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    print(f"\n$ {shlex.join(args)}", flush=True)
    r = subprocess.run(
        [sys.executable, "-m", "wgtpm", *args[1:]], cwd=cwd, env=env, text=True, capture_output=True
    )
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    if check and r.returncode != 0:
        raise SystemExit(f"demo failed: {shlex.join(args)} exited {r.returncode}")
    return r


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="wgtpm-demo-"))
    try:
        tree = ProxyTree(work / "proxy")
        env = {**os.environ, "WGTPM_CACHE": str(work / "cache"), "WGTPROXY": tree.url}
        print(f"# demo in {work}\n# WGTPROXY={tree.url}")

        print("\n## 1. Publish the example packages to a local proxy tree")
        for name in ("xor-base", "xor-classifier"):
            pkg = work / "src" / name
            shutil.copytree(HERE / name, pkg)
            sh("wgtpm", "build", cwd=pkg, env=env)
            idx = tree.add_package(pkg, "v0.1.0", time="2026-11-29T12:00:00Z")
            print(f"published {idx.module}@{idx.version}: {len(idx.files)} files, {idx.h1()}")

        print("\n## 2. Use them from a new project")
        app = work / "app"
        app.mkdir()
        sh("wgtpm", "init", "example.com/app", cwd=app, env=env)
        sh("wgtpm", "get", "github.com/acme/xor-classifier@latest", cwd=app, env=env)
        print("\n$ cat wgt.mod wgt.sum")
        print((app / "wgt.mod").read_text() + (app / "wgt.sum").read_text(), end="")
        sh("wgtpm", "list", "-m", "all", cwd=app, env=env)
        sh("wgtpm", "graph", cwd=app, env=env)
        sh("wgtpm", "verify", cwd=app, env=env)
        sh("wgtpm", "inspect", "github.com/acme/xor-classifier/classifier", cwd=app, env=env)
        for x in ([0, 0], [0, 1], [1, 0], [1, 1]):
            sh(
                "wgtpm",
                "run",
                "github.com/acme/xor-classifier/classifier",
                "--input",
                json.dumps(x),
                cwd=app,
                env=env,
            )

        print("\n## 3. Someone republishes xor-base v0.1.0 with other weights")
        weights = tree.root / "github.com/acme/xor-base/@v/v0.1.0/xor/weights.safetensors"
        data = bytearray(weights.read_bytes())
        data[-1] ^= 0xFF
        weights.write_bytes(bytes(data))
        idx_path = tree.root / "github.com/acme/xor-base/@v/v0.1.0.index.json"
        import hashlib

        doc = json.loads(idx_path.read_text())
        for f in doc["files"]:
            if f["path"] == "xor/weights.safetensors":
                f["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
        idx_path.write_text(json.dumps(doc, indent=2))
        sh("wgtpm", "cache", "clean", cwd=app, env=env)
        r = sh("wgtpm", "get", cwd=app, env=env, check=False)
        if r.returncode == 0 or "SECURITY ERROR" not in r.stderr:
            raise SystemExit("demo failed: the changed release was not refused")
        print("\n# refused, as it must be: wgt.sum locked the original bytes.")
        print("# demo complete")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
