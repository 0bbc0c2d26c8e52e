"""Only the tensors you use (issue 27): one tensor of a large safetensors file by range,
verified, against downloading the file with ``huggingface_hub.hf_hub_download``.

A generated safetensors file (random bytes; the header written by hand) with one
tensor of ``--tensor-mib`` MiB among others filling ``--size-mib`` MiB, in a repository
of the loopback Hugging Face Hub (tests/servers/huggingface.py; LFS files are
redirected to its CDN) that also holds the file's tensor table (``wgt.tensors.json``,
so the synthesised index lists it and h1 locks it). Both servers count the body
bytes they send, on the realistic network of bench_sources.py (40 ms per request,
80 ms per new connection, 50 MB/s per connection) unless ``--plain``.

- wgtpm: a project whose wgt.mod says ``select hf.co/bench/ranged
  model.safetensors#big`` runs ``wgtpm get`` (fresh process, empty cache): the index
  is synthesised (small files hashed), wgt.tensors.json fetched and checked, and the
  tensor's range fetched and checked against its sha256 in the table;
- huggingface_hub: ``hf_hub_download(repo, "model.safetensors", revision=...)`` in a
  fresh process with an empty cache (it checks the size, not the sha256).

Printed, per side: bytes the servers sent (all of them: API, metadata, file bytes),
those beyond the tensor's own, and time (range over the runs); then the ratios.

Run: ``.venv/bin/python benchmarks/bench_ranged.py [--runs 3]`` (12 MiB file, 3 MiB
tensor); the issue's size, a 300 MiB tensor of a 1200 MiB file: ``--full`` (the same as
``--size-mib 1200 --tensor-mib 300``; it needs about 4 GiB of memory, since the loopback
servers hold the file, and 3 GiB under ``$TMPDIR`` per run).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.servers import CdnServer, LoopbackServer, Request, Response
from tests.servers.huggingface import HuggingFaceServer
from wgtpm.tensors import TensorTables, compute_table, dump_tables

MiB = 1 << 20
REPO = "bench/ranged"
VERSION = "v0.1.0"
TENSOR = "big"


class Counting:
    """Adds a count of body bytes sent for GETs to a loopback server."""

    served = 0

    def count(self, req: Request, resp: Response) -> Response:
        if req.method == "GET":
            self.served += len(resp.body)
        return resp


class Cdn(CdnServer, Counting):
    def route(self, req: Request) -> Response:
        return self.count(req, super().route(req))


class Hub(HuggingFaceServer, Counting):
    def route(self, req: Request) -> Response:
        return self.count(req, super().route(req))


def safetensors(size: int, tensor: int, rng: random.Random) -> tuple[bytes, int]:
    """A safetensors file of about ``size`` bytes: tensor ``big`` of ``tensor`` bytes
    between others of 16 MiB at most (F32); and the big tensor's size."""
    rest = max(0, size - tensor)
    sizes: list[tuple[str, int]] = []
    half = rest // 2
    for side, total in (("before", half), ("after", rest - half)):
        i = 0
        while total > 0:
            n = min(16 * MiB, total) // 4 * 4
            if n == 0:
                break
            sizes.append((f"{side}.{i}", n))
            total -= n
            i += 1
    names = [s for s in sizes if s[0].startswith("before")]
    names += [(TENSOR, tensor // 4 * 4)]
    names += [s for s in sizes if s[0].startswith("after")]
    header: dict[str, object] = {}
    at = 0
    for name, n in names:
        header[name] = {"dtype": "F32", "shape": [n // 4], "data_offsets": [at, at + n]}
        at += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    # randbytes makes one int of all the bits: past 256 MiB it overflows, so in pieces
    body = b"".join(rng.randbytes(min(64 * MiB, at - i)) for i in range(0, at, 64 * MiB))
    return len(raw).to_bytes(8, "little") + raw + body, tensor // 4 * 4


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed:\n{r.stderr[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=12)
    ap.add_argument("--tensor-mib", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--full", action="store_true", help="the issue's size: --size-mib 1200 --tensor-mib 300"
    )
    ap.add_argument("--plain", action="store_true", help="plain loopback: no latency, no cap")
    args = ap.parse_args()
    if args.full:
        args.size_mib, args.tensor_mib = 1200, 300

    data, tensor = safetensors(args.size_mib * MiB, args.tensor_mib * MiB, random.Random(27))
    with tempfile.TemporaryDirectory(prefix="bench-ranged-") as t:
        tmp = Path(t)
        (tmp / "model.safetensors").write_bytes(data)
        table = compute_table(tmp / "model.safetensors", "model.safetensors")
        files = {
            "config.json": b'{"model_type": "bench"}\n',
            "model.safetensors": data,
            "wgt.tensors.json": dump_tables(TensorTables({"model.safetensors": table})),
        }
        with Cdn() as cdn, Hub(cdn) as hub:
            servers: list[LoopbackServer] = [cdn, hub]
            if not args.plain:
                for s in servers:
                    s.latency, s.connect_latency, s.rate = 0.040, 0.080, 50e6
            repo = hub.repo(*REPO.split("/"))
            repo.commit(files)
            repo.tag(VERSION)
            env = {
                **os.environ,
                "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
                "HF_ENDPOINT": hub.url,
                "WGTPROXY": "direct",
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HUB_DISABLE_XET": "1",
            }
            env.pop("HF_TOKEN", None)
            results: dict[str, list[tuple[float, int]]] = {"wgtpm": [], "hf_hub_download": []}
            for run in range(args.runs):
                for name in results:
                    work = tmp / f"{name}-{run}"
                    work.mkdir()
                    e = {**env, "WGTPM_CACHE": str(work / "cache"), "HF_HOME": str(work / "hf")}
                    cdn.served = hub.served = 0
                    if name == "wgtpm":
                        (work / "wgt.mod").write_text(
                            "module example.com/bench\n\nwgt 0.1\n\n"
                            f"select hf.co/{REPO} model.safetensors#{TENSOR}\n"
                        )
                        cmd = [sys.executable, "-m", "wgtpm", "get", f"hf.co/{REPO}@{VERSION}"]
                    else:
                        code = (
                            "from huggingface_hub import hf_hub_download; "
                            f"hf_hub_download({REPO!r}, 'model.safetensors', revision={VERSION!r}, "
                            f"cache_dir={str(work / 'hf')!r})"
                        )
                        cmd = [sys.executable, "-c", code]
                    took = _run(cmd, work, e)
                    results[name].append((took, cdn.served + hub.served))
    net = "plain loopback" if args.plain else "40 ms/request, 80 ms/connection, 50 MB/s"
    print(
        f"one tensor of {tensor / MiB:.0f} MiB from a {len(data) / MiB:.0f} MiB safetensors "
        f"file, {net}, {args.runs} runs (load {os.getloadavg()[0]:.1f}):"
    )
    for name, rs in results.items():
        times = [r[0] for r in rs]
        moved = max(r[1] for r in rs)
        print(
            f"  {name}: {min(times):.2f}-{max(times):.2f} s, {moved / MiB:.2f} MiB sent "
            f"({(moved - tensor) / 1024:+.1f} KiB beyond the tensor)"
        )
    ours, peer = results["wgtpm"], results["hf_hub_download"]
    print(
        f"  wgtpm / hf_hub_download: bytes {max(r[1] for r in ours) / max(r[1] for r in peer):.3f}x, "
        f"time {min(r[0] for r in ours) / min(r[0] for r in peer):.2f}x (best)"
    )


if __name__ == "__main__":
    main()
