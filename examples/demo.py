"""The wgtpm demo: publish the example packages to a local proxy tree, then use them.

Everything runs offline, in a temporary directory:

1. commit ``examples/xor-base`` (a WeightLang XOR model) to a git repository
   and ``wgtpm publish`` v0.1.0 into a proxy-protocol file tree (``-o``): the
   build runs in a clean export of the commit;
2. the same for ``examples/xor-classifier``, which imports xor-base's trained
   hidden layer (frozen) through its build list;
3. in a fresh project: ``wgtpm init``, ``wgtpm get`` the classifier (MVS pulls
   in xor-base), list the build list, show the graph, verify the cache,
   inspect the classifier's provenance and run it;
4. compile the PAW program ``examples/fruit`` by LoRA finetuning on a tiny
   Qwen3 interpreter (itself published as a module), publish it, get it into a
   new project with ``--paw-install`` (the PAW SDK's cache, for offline use)
   and run it in pure Python;
5. republish xor-base v0.1.0 with other weights and show that ``wgtpm get``
   refuses it loudly.
"""

from __future__ import annotations

import json
import os
import re
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
    sys.stdout.write(_fewer_steps(r.stderr))
    if check and r.returncode != 0:
        raise SystemExit(f"demo failed: {shlex.join(args)} exited {r.returncode}")
    return r


def _fewer_steps(text: str) -> str:
    """Training logs a line per step; the demo shows every 25th."""
    out = []
    for line in text.splitlines(keepends=True):
        m = re.search(r" step (\d+)/(\d+) ", line)
        if m is None or int(m.group(1)) % 25 == 0 or m.group(1) in ("1", m.group(2)):
            out.append(line)
    return "".join(out)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "wgtpm demo",
    "GIT_AUTHOR_EMAIL": "demo@example.com",
    "GIT_COMMITTER_NAME": "wgtpm demo",
    "GIT_COMMITTER_EMAIL": "demo@example.com",
    "GIT_AUTHOR_DATE": "2026-11-29T12:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-29T12:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git_commit(pkg: Path, env: dict[str, str]) -> None:
    """``git init`` and commit everything in ``pkg`` (publishing builds from a commit)."""
    print(f"\n$ git init && git add -A && git commit -m 'v0.1.0'   # in {pkg.name}", flush=True)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "v0.1.0"]):
        subprocess.run(["git", *args], cwd=pkg, env={**env, **GIT_ENV}, check=True)


def publish(pkg: Path, tree: ProxyTree, env: dict[str, str]) -> None:
    """Commit ``pkg`` and ``wgtpm publish`` it as v0.1.0 into ``tree``."""
    git_commit(pkg, env)
    sh("wgtpm", "publish", "--version", "v0.1.0", "-o", str(tree.root), cwd=pkg, env=env)


def paw_demo(work: Path, tree: ProxyTree, env: dict[str, str]) -> None:
    print("\n## 3. A PAW program, compiled by finetuning, used offline")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from wgtpm.paw.tiny import make_tiny_qwen3, write_base_gguf

    interp = make_tiny_qwen3(work / "tiny-qwen3")
    tree.add(
        "hf.co/wgtpm-demo/tiny-qwen3", "v0.1.0", {p.name: p.read_bytes() for p in interp.iterdir()}
    )
    base = write_base_gguf(work / "tiny-qwen3.gguf")
    tree.add("hf.co/wgtpm-demo/tiny-qwen3-gguf", "v0.1.0", {base.name: base.read_bytes()})
    print("published hf.co/wgtpm-demo/tiny-qwen3@v0.1.0 (a 2-layer Qwen3) and its base-model GGUF")
    pkg = work / "src" / "fruit"
    shutil.copytree(HERE / "fruit", pkg)
    sh("wgtpm", "tidy", cwd=pkg, env=env)  # wgt.sum locks the interpreter before publishing
    publish(pkg, tree, env)
    bundle = tree.root / "github.com/acme/fruit/@v/v0.1.0/fruit.paw"
    sh("wgtpm", "paw", "validate", str(bundle), "--interpreter", str(interp), cwd=pkg, env=env)
    app = work / "paw-app"
    app.mkdir()
    penv = {**env, "PAW_CACHE_DIR": str(work / "paw-cache"), "PAW_OFFLINE": "1"}
    sh("wgtpm", "init", "example.com/paw-app", cwd=app, env=penv)
    sh("wgtpm", "get", "--paw-install", "github.com/acme/fruit@v0.1.0", cwd=app, env=penv)
    for colour in ("red", "yellow", "green", "purple"):
        sh("wgtpm", "run", "github.com/acme/fruit/fruit", "--input", colour, cwd=app, env=penv)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="wgtpm-demo-"))
    try:
        tree = ProxyTree(work / "proxy")
        # The commands run the wgtpm beside this file, as the demo itself does.
        path = os.pathsep.join(p for p in (str(HERE.parent), os.environ.get("PYTHONPATH")) if p)
        env = {
            **os.environ,
            "PYTHONPATH": path,
            "WGTPM_CACHE": str(work / "cache"),
            "WGTPROXY": tree.url,
        }
        print(f"# demo in {work}\n# WGTPROXY={tree.url}")

        print("\n## 1. Publish the example packages to a local proxy tree")
        for name in ("xor-base", "xor-classifier"):
            pkg = work / "src" / name
            shutil.copytree(HERE / name, pkg)
            if name == "xor-classifier":
                sh("wgtpm", "tidy", cwd=pkg, env=env)  # wgt.sum locks xor-base v0.1.0
            publish(pkg, tree, env)

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

        paw_demo(work, tree, env)

        print("\n## 4. Someone republishes xor-base v0.1.0 with other weights")
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
