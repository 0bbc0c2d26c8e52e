"""``wgtpm registry serve|token``: tokens, a light import, and a server that stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from wgtpm.sumdb import note

from .helpers import free_port, publish, registry_token

ROOT = Path(__file__).resolve().parents[2]


def test_token_create_list_revoke(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = str(tmp_path / "reg")
    r = wgtpm("registry", "token", "create", "--data", data, "--prefix", "example.com/acme")
    assert r.code == 0, r.err
    token = r.out.strip().splitlines()[-1]
    assert token.startswith("wgt_")
    r = wgtpm(
        "registry", "token", "create", "--data", data, "--prefix", "example.com", "--scope", "read"
    )
    assert r.code == 0
    r = wgtpm("registry", "token", "list", "--data", data)
    lines = r.out.strip().splitlines()
    assert len(lines) == 2 and token.split("_", 2)[2] not in r.out  # secrets are never shown again
    tid = token.split("_")[1]
    assert any(line.startswith(tid) and "publish" in line and "active" in line for line in lines)
    assert wgtpm("registry", "token", "revoke", tid, "--data", data).code == 0
    lines = wgtpm("registry", "token", "list", "--data", data).out.splitlines()
    assert [line for line in lines if "revoked" in line] == [
        line for line in lines if line.startswith(tid)
    ]
    r = wgtpm("registry", "token", "revoke", "0" * 16, "--data", data)
    assert r.code == 1 and "no token" in r.err
    r = wgtpm("registry", "token", "create", "--data", data, "--prefix", "a,b")
    assert r.code == 1 and "prefix" in r.err


def test_the_command_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, wgtpm.cli._registry\n"
        "heavy = ('starlette', 'sqlalchemy', 'uvicorn', 'boto3', 'alembic', 'registry')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_serve_publish_and_stop_on_sigterm(tmp_path: Path) -> None:
    data = tmp_path / "reg"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    wgtpm = [sys.executable, "-m", "wgtpm", "registry"]
    token = registry_token(data, "example.com", env)
    key = subprocess.run(
        [*wgtpm, "key", "--data", str(data), "--sumdb-name", "sum.test"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    vkey = key.stdout.strip().splitlines()[-1]
    port = free_port()
    proc = subprocess.Popen(
        [*wgtpm, "serve", "--port", str(port), "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        fs = {"wgt.mod": b"module example.com/m\nwgt 0.1\n", "a.bin": b"abc"}
        with httpx.Client(base_url=url) as http:
            assert publish(http, token, "example.com/m", "v1.0.0", fs).status_code == 201
            assert http.get("/example.com/m/@v/v1.0.0/a.bin").content == b"abc"
            lookup = http.get("/sumdb/sum.test/lookup/example.com/m@v1.0.0")
            assert lookup.status_code == 200 and lookup.text.startswith(
                "0\nexample.com/m v1.0.0 h1:"
            )
            verifier = note.VerifierList(note.new_verifier(vkey))  # signed with the key printed
            assert note.open(lookup.content.split(b"\n\n", 1)[1], verifier).text.endswith("=\n")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode in (0, -signal.SIGTERM), err  # uvicorn re-raises the signal
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    access = [json.loads(line) for line in out.splitlines()]  # access lines: on stdout
    assert not [r for r in records if "status" in r]  # errors and messages: on stderr
    assert {
        "method": "GET",
        "path": "/example.com/m/@v/v1.0.0/a.bin",
        "status": 200,
        "bytes": 3,
    }.items() <= access[-2].items()  # then the checksum database lookup
    assert records[-1]["message"] == "registry stopped: database and blob store closed"
    assert (data / "registry.db").exists() and (data / "blobs" / "sha256").is_dir()
    assert token not in err
    assert any(vkey in r["message"] for r in records if "message" in r)  # logged at startup


def test_serve_refuses_a_malformed_upstream(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import logging

    logger = logging.getLogger("registry")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    try:  # serve() points the registry's logger at this test's captured stderr
        r = wgtpm(
            "registry",
            "serve",
            *("--data", str(tmp_path / "reg"), "--port", "1", "--upstream", "ftp://x"),
        )
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
    assert r.code != 0 and "--upstream" in r.err and "ftp://x" in r.err, r.err
