"""The wgtpm demo: a registry on loopback, the examples published to it, a project using them.

Offline, in a few minutes on 2 CPU cores, and leaving its state in the repository
root so that the tour in docs/guides/demo.md can be followed afterwards:

``demo-registry/``  the registry's data: SQLite database, blob folder, checksum-log key
``demo-consumer/``  a project that requires the published packages (wgt.mod, wgt.sum,
                    build/, graph.svg/.dot/.mmd, demo.env with the settings of the tour)
``demo-cache/``     the module cache of that project

1. ``wgtpm registry serve`` (SQLite and a folder) on a free loopback port; a
   publish token per module prefix; the checksum log's verifier key for WGTSUMDB;
2. ``wgtpm publish --to URL`` of git commits of ``examples/xor-base``,
   ``examples/xor-classifier`` (imports xor-base's hidden layer, frozen), the PAW
   program ``examples/fruit``, on a tiny 2-layer Qwen3 made here (published too) in
   place of Qwen3-0.6B, which cannot be downloaded offline, and ``examples/word-kind``
   (a torch model whose ``train.py`` grafts that Qwen3's embedding, frozen, through
   ``wgtpm.open``/``graft`` and saves it with ``wgtpm.save``);
3. in ``demo-consumer``: ``wgtpm get`` through the registry with the checksum log
   configured, where every byte came from (module, version, commit, log entry), the
   graph, ``wgtpm build`` of a model importing the pinned layer, ``wgtpm run``;
   ``wgtpm inspect`` of word-kind (each tensor's origin) and ``python word_kind.py``;
4. other bytes published again as v0.1.0: refused by the registry (409);
5. a blob tampered with in the registry's folder: refused by a fresh client;
6. the server stopped, with the one command that starts it again.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the wgtpm beside this file, installed or not
REGISTRY = ROOT / "demo-registry"
CONSUMER = ROOT / "demo-consumer"
CACHE = ROOT / "demo-cache"
SUMDB_NAME = "wgtpm-demo.localhost"
PREFERRED_PORT = 8780
WGTPM = (sys.executable, "-m", "wgtpm")
SUMDB = ("--sumdb-name", SUMDB_NAME)
VERSION = "v0.1.0"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "wgtpm demo",
    "GIT_AUTHOR_EMAIL": "demo@example.com",
    "GIT_COMMITTER_NAME": "wgtpm demo",
    "GIT_COMMITTER_EMAIL": "demo@example.com",
    "GIT_AUTHOR_DATE": "2026-11-29T12:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-29T12:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _fewer_steps(text: str) -> str:
    """Training logs a line per step; the demo shows every 50th."""
    out = []
    for line in text.splitlines(keepends=True):
        m = re.search(r" step (\d+)/(\d+) ", line)
        if m is None or int(m.group(1)) % 50 == 0 or m.group(1) in ("1", m.group(2)):
            out.append(line)
    return "".join(out)


def sh(
    *args: str, cwd: Path, env: dict[str, str], check: bool = True, show: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``wgtpm ARGS`` (the wgtpm beside this file) and show it as a user would see it."""
    print(f"\n$ {show or shlex.join(args)}", flush=True)
    r = subprocess.run([*WGTPM, *args[1:]], cwd=cwd, env=env, text=True, capture_output=True)
    sys.stdout.write(_fewer_steps(r.stderr))  # progress first, then the result
    if not show:
        sys.stdout.write(r.stdout)
    sys.stdout.flush()
    if check and r.returncode != 0:
        raise SystemExit(f"demo failed: {shlex.join(args)} exited {r.returncode}")
    return r


def quiet(*args: str, cwd: Path, env: dict[str, str]) -> str:
    """Run ``wgtpm ARGS`` and return its stdout (for values the demo shows itself)."""
    r = subprocess.run([*WGTPM, *args[1:]], cwd=cwd, env=env, text=True, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"demo failed: {shlex.join(args)}: {r.stderr.strip()}")
    return r.stdout


def git_commit(pkg: Path, env: dict[str, str], message: str = VERSION) -> None:
    """``git init`` and commit everything in ``pkg`` (publish builds from a clean commit)."""
    print(f"\n$ git init && git add -A && git commit -m {message!r}   # in {pkg.name}/")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", *args], cwd=pkg, env={**env, **GIT_ENV}, check=True)


def free_port() -> int:
    """The preferred port if it is free on loopback, else one the system picks."""
    for port in (PREFERRED_PORT, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise SystemExit("demo failed: no free loopback port")


def get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return str(resp.read().decode())


def start_registry(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    cmd = serve_command(port)
    print(f"\n$ {cmd} &")
    log = open(REGISTRY / "serve.log", "ab")  # the server's log, closed with it
    proc = subprocess.Popen(
        [*WGTPM, "registry", "serve", "--data", str(REGISTRY), *("--port", str(port)), *SUMDB],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if proc.poll() is not None:
            raise SystemExit(f"demo failed: the registry exited; see {REGISTRY / 'serve.log'}")
        try:
            if json.loads(get_text(url + "/healthz")).get("status") == "ok":
                break
        except OSError:
            time.sleep(0.1)
    else:
        raise SystemExit("demo failed: the registry did not answer /healthz")
    print(f"registry up at {url} (its log: demo-registry/serve.log)")
    return proc


def stop_registry(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve_command(port: int) -> str:
    return (
        f".venv/bin/wgtpm registry serve --data demo-registry --port {port} "
        f"--sumdb-name {SUMDB_NAME}"
    )


def make_token(prefix: str, env: dict[str, str]) -> str:
    cmd = f"wgtpm registry token create --prefix {prefix} --data demo-registry"
    print(f"\n$ {cmd}")
    out = quiet(*cmd.split(), cwd=ROOT, env=env).splitlines()
    print(out[0])
    print(out[-1][:12] + "…   (the demo hides the rest)")
    return out[-1]


def publish(
    pkg: Path,
    url: str,
    token: str,
    env: dict[str, str],
    *,
    message: str = VERSION,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Commit ``pkg`` (``message``) and ``wgtpm publish --version VERSION --to URL`` it."""
    git_commit(pkg, env, message)
    return sh(
        "wgtpm",
        "publish",
        "--version",
        VERSION,
        "--to",
        url,
        cwd=pkg,
        env={**env, "WGTPM_TOKEN": token},
        check=check,
    )


def publish_interpreter(work: Path, url: str, token: str, env: dict[str, str]) -> None:
    """The tiny Qwen3 (Hugging Face format) and its base GGUF, each a package of plain files."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from wgtpm.paw.tiny import make_tiny_qwen3, write_base_gguf

    print(
        "\nThe PAW example is compiled on a TINY LOCAL INTERPRETER: a seeded 2-layer Qwen3\n"
        "made here, in place of hf.co/Qwen/Qwen3-0.6B (nothing is downloaded from Hugging\n"
        "Face in this demo). It is published as hf.co/wgtpm-demo/tiny-qwen3 and\n"
        "hf.co/wgtpm-demo/tiny-qwen3-gguf; examples/triage shows the real declaration."
    )
    hf = work / "src" / "tiny-qwen3"
    make_tiny_qwen3(hf)
    gguf = work / "src" / "tiny-qwen3-gguf"
    gguf.mkdir()
    write_base_gguf(gguf / "tiny-qwen3.gguf")
    for pkg, module in (
        (hf, "hf.co/wgtpm-demo/tiny-qwen3"),
        (gguf, "hf.co/wgtpm-demo/tiny-qwen3-gguf"),
    ):
        lines = [f"module {module}", "wgt 0.1", ""]
        for f in sorted(pkg.iterdir()):
            name = re.sub(r"[^A-Za-z0-9]+", "-", f.stem).strip("-")
            lines.append(f"artifact {name} {f.name}")
        (pkg / "wgt.mod").write_text("\n".join(lines) + "\n")
        publish(pkg, url, token, env)


def python(script: str, *args: str, cwd: Path, env: dict[str, str]) -> None:
    """Run ``python SCRIPT ARGS`` in ``cwd`` and show it as a user would see it."""
    print(f"\n$ python {shlex.join([script, *args])}", flush=True)
    r = subprocess.run(
        [sys.executable, script, *args], cwd=cwd, env=env, text=True, capture_output=True
    )
    sys.stdout.write(r.stdout + r.stderr)
    sys.stdout.flush()
    if r.returncode != 0:
        raise SystemExit(f"demo failed: python {script} exited {r.returncode}")


def publish_word_kind(work: Path, url: str, token: str, env: dict[str, str]) -> None:
    """examples/word-kind: train.py grafts the tiny Qwen3's embedding, frozen, and saves
    model/ with wgtpm.save; the package ships those two files."""
    pkg = work / "src" / "word-kind"
    shutil.copytree(HERE / "word-kind", pkg)
    print(
        "\n# word-kind: a torch model of its own on the tiny Qwen3's token embedding, frozen.\n"
        "# wgtpm runs no Python at publish time, so train.py runs first and model/ is committed"
    )
    sh("wgtpm", "tidy", cwd=pkg, env=env)  # wgt.sum locks the tiny Qwen3
    python("train.py", cwd=pkg, env=env)
    sh("wgtpm", "inspect", "model", cwd=pkg, env=env)
    publish(pkg, url, token, env)


def graph_svg(edges: list[tuple[str, str]]) -> str:
    """The requirement graph as an SVG: one column per depth from the main module."""
    from html import escape

    depth: dict[str, int] = {edges[0][0]: 0} if edges else {}
    for _ in edges:  # longest path from the main module (the graph has no cycles here)
        for a, b in edges:
            if a in depth and depth.get(b, -1) < depth[a] + 1:
                depth[b] = depth[a] + 1
    cols: dict[int, list[str]] = {}
    for node, d in depth.items():
        cols.setdefault(d, []).append(node)
    box_w, box_h, gap_x, gap_y = 300, 34, 60, 18
    pos = {
        n: (20 + d * (box_w + gap_x), 20 + i * (box_h + gap_y))
        for d, nodes in cols.items()
        for i, n in enumerate(nodes)
    }
    width = 40 + len(cols) * (box_w + gap_x) - gap_x
    height = 40 + max((len(v) for v in cols.values()), default=1) * (box_h + gap_y) - gap_y
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="13">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    for a, b in edges:
        (ax, ay), (bx, by) = pos[a], pos[b]
        out.append(
            f'<line x1="{ax + box_w}" y1="{ay + box_h / 2}" x2="{bx}" y2="{by + box_h / 2}" '
            'stroke="#555" marker-end="url(#arrow)"/>'
        )
    for n, (x, y) in pos.items():
        fill = "#dbeafe" if depth[n] == 0 else "#f3f4f6"
        out.append(
            f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="6" fill="{fill}" '
            'stroke="#333"/>'
        )
        out.append(f'<text x="{x + 10}" y="{y + 22}">{escape(n)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def provenance(url: str, app: Path) -> None:
    """Where every byte of the build list came from: commit (.info) and log entry (lookup)."""
    print("\n# where every byte came from: each wgt.sum line, the release's commit (from")
    print(f"# {url}/MODULE/@v/VERSION.info) and its record in the checksum log")
    print(f"# ({url}/sumdb/{SUMDB_NAME}/lookup/MODULE@VERSION), proven by wgtpm at get time")
    rows = [("module", "version", "commit", "log entry", "h1")]
    for line in (app / "wgt.sum").read_text().splitlines():
        module, version, h1 = line.split()
        if version.endswith("/wgt.mod"):
            continue
        info = json.loads(get_text(f"{url}/{module}/@v/{version}.info"))
        entry = get_text(f"{url}/sumdb/{SUMDB_NAME}/lookup/{module}@{version}").split("\n", 1)[0]
        rows.append((module, version, info.get("Commit", "")[:12], f"#{entry}", h1))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def republish_refused(work: Path, url: str, token: str, env: dict[str, str]) -> None:
    print(f"\n## 4. Someone publishes other bytes as github.com/acme/xor-base {VERSION}")
    pkg = work / "src" / "xor-base-again"
    shutil.copytree(HERE / "xor-base", pkg)
    model = pkg / "model.wgt"
    model.write_text(model.read_text().replace("seed 0", "seed 7"))
    print("# the same package with 'seed 7': other weights, so another h1")
    r = publish(pkg, url, token, env, message="other weights", check=False)
    if r.returncode == 0 or r.stderr.count("h1:") < 2:
        raise SystemExit("demo failed: the registry accepted other bytes for a published version")
    print("# refused: a published version never changes (409 from the registry, naming both h1s)")


def tamper_refused(
    work: Path, app: Path, url: str, env: dict[str, str], restart: Callable[[], None]
) -> None:
    print("\n## 5. Someone changes a byte in the registry's blob folder")
    index = json.loads(get_text(f"{url}/github.com/acme/xor-base/@v/{VERSION}.index.json"))
    sha = next(f["sha256"] for f in index["files"] if f["path"] == "xor/weights.safetensors")
    blob = REGISTRY / "blobs" / "sha256" / sha[:2] / sha
    saved = blob.read_bytes()
    print(f"# flipping one byte of {blob.relative_to(ROOT)} (xor-base's weights)")
    blob.chmod(0o644)
    blob.write_bytes(saved[:-1] + bytes([saved[-1] ^ 0xFF]))
    print("# and restarts the registry, which still held the good bytes in memory")
    restart()
    try:
        other = work / "another-machine"
        shutil.copytree(app, other, ignore=shutil.ignore_patterns("build", ".paw-cache"))
        fresh = {**env, "WGTPM_CACHE": str(work / "fresh-cache")}
        print("# a copy of demo-consumer on another machine: an empty cache, the same wgt.sum")
        r = sh("wgtpm", "get", cwd=other, env=fresh, check=False)
        if r.returncode == 0 or "sha256" not in r.stderr:
            raise SystemExit("demo failed: the tampered blob was not refused")
        print("# refused: the bytes did not match the index that wgt.sum locks; nothing was kept")
    finally:
        blob.write_bytes(saved)
        blob.chmod(0o444)
        print(f"# {blob.relative_to(ROOT)} restored")


def main() -> None:
    started = time.monotonic()
    try:
        get_text(f"http://127.0.0.1:{PREFERRED_PORT}/healthz")
    except OSError:
        pass
    else:
        raise SystemExit(
            f"demo: a registry is running on 127.0.0.1:{PREFERRED_PORT} (the tour's?): stop it "
            "first, since the demo starts demo-registry/ afresh"
        )
    for d in (REGISTRY, CONSUMER, CACHE):
        shutil.rmtree(d, ignore_errors=True)
    REGISTRY.mkdir()
    work = Path(tempfile.mkdtemp(prefix="wgtpm-demo-"))
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    base_env = {
        **os.environ,
        "PYTHONPATH": path,
        "WGTPM_CACHE": str(CACHE),
        "TRANSFORMERS_VERBOSITY": "error",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }
    base_env.pop("WGTPM_TOKEN", None)
    server: subprocess.Popen[bytes] | None = None
    try:
        print("## 1. A registry on loopback: SQLite and a folder, in demo-registry/")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = start_registry(port, base_env)
        sh("wgtpm", "registry", "key", "--data", "demo-registry", cwd=ROOT, env=base_env)
        key = quiet("wgtpm", "registry", "key", "--data", str(REGISTRY), cwd=ROOT, env=base_env)
        sumdb = f"{key.splitlines()[-1]} {url}"
        env = {**base_env, "WGTPROXY": url, "WGTSUMDB": sumdb}
        print(f"\n$ export WGTPROXY={url}")
        print(f'$ export WGTSUMDB="{sumdb}"')
        acme = make_token("github.com/acme", env)
        demo_hf = make_token("hf.co/wgtpm-demo", env)

        print("\n## 2. Publish the examples from git commits: wgtpm publish --to", url)
        for name in ("xor-base", "xor-classifier"):
            pkg = work / "src" / name
            shutil.copytree(HERE / name, pkg)
            if name == "xor-classifier":
                sh("wgtpm", "tidy", cwd=pkg, env=env)  # wgt.sum locks xor-base v0.1.0
            publish(pkg, url, acme, env)
        publish_interpreter(work, url, demo_hf, env)
        fruit = work / "src" / "fruit"
        shutil.copytree(HERE / "fruit", fruit)
        sh("wgtpm", "tidy", cwd=fruit, env=env)  # wgt.sum locks the interpreter
        publish(fruit, url, acme, env)
        publish_word_kind(work, url, acme, env)

        print("\n## 3. Use them from a new project: demo-consumer/")
        CONSUMER.mkdir()
        app = CONSUMER
        penv = {**env, "PAW_CACHE_DIR": str(app / ".paw-cache"), "PAW_OFFLINE": "1"}
        sh("wgtpm", "init", "example.com/demo-consumer", cwd=app, env=penv)
        shutil.copy(HERE / "consumer" / "model.wgt", app / "model.wgt")
        print("\n$ cp examples/consumer/model.wgt .   # XNOR on xor-base's hidden layer, frozen")
        sh("wgtpm", "mod", "edit", "-artifact=xnor=model.wgt", cwd=app, env=penv)
        sh(
            "wgtpm",
            "get",
            "--paw-install",
            "github.com/acme/xor-classifier@latest",
            "github.com/acme/fruit@latest",
            "github.com/acme/word-kind@latest",
            cwd=app,
            env=penv,
        )
        print("\n$ cat wgt.mod wgt.sum")
        print((app / "wgt.mod").read_text() + (app / "wgt.sum").read_text(), end="")
        provenance(url, app)
        sh("wgtpm", "list", "-m", "all", cwd=app, env=penv)
        sh("wgtpm", "graph", cwd=app, env=penv)
        for fmt, name in (("dot", "graph.dot"), ("mermaid", "graph.mmd")):
            show = f"wgtpm graph --format {fmt} > {name}"
            r = sh("wgtpm", "graph", "--format", fmt, cwd=app, env=penv, show=show)
            (app / name).write_text(r.stdout)
        edges = [
            tuple(line.split()) for line in quiet("wgtpm", "graph", cwd=app, env=penv).splitlines()
        ]
        (app / "graph.svg").write_text(graph_svg([(a, b) for a, b in edges]))
        print(
            "# the requirement graph as pictures: demo-consumer/graph.svg (open it in a browser),\n"
            "# demo-consumer/graph.dot (Graphviz: dot -Tsvg graph.dot) and demo-consumer/graph.mmd\n"
            "# (Mermaid: GitHub draws it in a ```mermaid block)"
        )
        sh("wgtpm", "verify", cwd=app, env=penv)
        sh("wgtpm", "build", cwd=app, env=penv)
        sh("wgtpm", "inspect", "build/xnor", cwd=app, env=penv)
        for x in ([0, 0], [0, 1]):
            sh("wgtpm", "run", "build/xnor", "--input", json.dumps(x), cwd=app, env=penv)
        for x in ([0, 1], [1, 1]):
            sh(
                "wgtpm",
                "run",
                "github.com/acme/xor-classifier/classifier",
                "--input",
                json.dumps(x),
                cwd=app,
                env=penv,
            )
        for colour in ("red", "purple"):
            sh("wgtpm", "run", "github.com/acme/fruit/fruit", "--input", colour, cwd=app, env=penv)
        print("\n# word-kind's torch model: where each tensor came from, down to module@version")
        print("# and sha256, then run from Python (every tensor verified, nothing unpickled)")
        sh("wgtpm", "inspect", "github.com/acme/word-kind/model", cwd=app, env=penv)
        shutil.copy(HERE / "consumer" / "word_kind.py", app / "word_kind.py")
        print(
            "\n$ cp examples/consumer/word_kind.py .   # wgtpm.pinned.load_saved, two lines of torch"
        )
        python("word_kind.py", "purple", "cherry", cwd=app, env=penv)

        republish_refused(work, url, acme, env)

        def restart() -> None:
            nonlocal server
            stop_registry(server)
            server = None
            server = start_registry(port, base_env)

        tamper_refused(work, app, url, penv, restart)

        (app / "demo.env").write_text(
            "# the settings of the demo's tour: . ./demo.env (in demo-consumer/)\n"
            f'export PATH="{ROOT / ".venv" / "bin"}:$PATH"\n'
            f"export WGTPROXY={url}\n"
            f'export WGTSUMDB="{sumdb}"\n'
            f"export WGTPM_CACHE={CACHE}\n"
            f"export PAW_CACHE_DIR={app / '.paw-cache'}\n"
        )
    finally:
        stop_registry(server)
        shutil.rmtree(work, ignore_errors=True)
    print("\n## 6. The registry is stopped; its data stays in demo-registry/")
    print(f"# demo complete in {time.monotonic() - started:.0f} s. Start the registry again with:")
    print(f"\n    {serve_command(port)} &\n")
    print(
        "# then follow the tour in docs/guides/demo.md:  cd demo-consumer && . ./demo.env && wgtpm graph"
    )


if __name__ == "__main__":
    main()
