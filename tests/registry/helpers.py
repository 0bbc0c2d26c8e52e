"""Publishing through the HTTP API, the way ``wgtpm publish --to URL`` will."""

from __future__ import annotations

import base64
import hashlib
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from wgtpm.index import IndexEntry, build_index

__all__ = ["h1", "index_bytes", "modtext", "publish"]


def h1(files: dict[str, bytes]) -> str:
    """Hash1 the slow, obvious way: sha256sum lines, sorted, then sha256 and base64."""
    lines = "".join(f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n" for n in sorted(files))
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def modtext(path: str) -> bytes:
    return f"module {path}\nwgt 0.1\n".encode()


def index_bytes(
    module: str,
    version: str,
    files: dict[str, bytes],
    artifacts: dict[str, tuple[str, str]] | None = None,
) -> bytes:
    """The index of ``files``; ``artifacts`` maps a path to its (artifact, kind)."""
    arts = artifacts or {}
    entries = [
        IndexEntry(p, len(b), hashlib.sha256(b).hexdigest(), *arts.get(p, (None, None)))
        for p, b in files.items()
    ]
    return build_index(module, version, entries, time="2026-11-29T12:00:00Z").to_json()


def publish(
    client: httpx.Client | Any,
    token: str,
    module: str,
    version: str,
    files: dict[str, bytes],
    *,
    private: bool = False,
    by: str = "sha256",
    artifacts: dict[str, tuple[str, str]] | None = None,
) -> Any:
    """Upload every missing file and commit; returns the last response (start or commit)."""
    auth = {"Authorization": f"Bearer {token}"}
    body = {
        "module": module,
        "version": version,
        "index": index_bytes(module, version, files, artifacts).decode(),
        "private": private,
    }
    r = client.post("/api/v1/uploads", json=body, headers=auth)
    if r.status_code != 201:
        return r
    doc = r.json()
    by_sha = {hashlib.sha256(b).hexdigest(): b for b in files.values()}
    for m in doc["missing"]:
        if by == "sha256":
            u = client.put(
                f"{doc['files_url']}{m['sha256']}", content=by_sha[m["sha256"]], headers=auth
            )
        else:
            u = client.put(f"{doc['paths_url']}{m['path']}", content=files[m["path"]], headers=auth)
        assert u.status_code in (200, 201), u.text
    return client.post(doc["commit_url"], headers=auth)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server started as a process)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_REGISTRY = (sys.executable, "-m", "wgtpm", "registry")


def registry_token(data: Path, prefix: str, env: dict[str, str]) -> str:
    """A new publish token for ``prefix`` from ``wgtpm registry token create`` (its last line)."""
    made = subprocess.run(
        [*_REGISTRY, "token", "create", "--data", str(data), "--prefix", prefix],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return made.stdout.strip().splitlines()[-1]
