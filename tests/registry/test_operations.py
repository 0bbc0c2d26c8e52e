"""Operating the registry: 5xx answers with a request id and no detail, the access log's
destinations (``--access-log off|stdout|FILE``, sampling, rotation), and liveness
(``/healthz``) apart from readiness (``/readyz``). Each against ``wgtpm registry serve``
in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from .helpers import free_port
from .pgserver import PostgresServer, PostgresUnavailable

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serving(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> Iterator[dict]:  # type: ignore[type-arg]
    """``wgtpm registry serve FLAGS`` on a free loopback port; yields ``{"url": URL}``,
    which holds ``out`` and ``err`` (the process's stdout and stderr) once it stopped."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "wgtpm", "registry", "serve", "--port", str(port), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=tmp_path,
    )
    box: dict = {"url": f"http://127.0.0.1:{port}"}  # type: ignore[type-arg]
    try:
        deadline = time.monotonic() + 60
        up = False
        while not up and proc.poll() is None and time.monotonic() < deadline:
            try:
                up = httpx.get(f"{box['url']}/healthz", timeout=2).status_code == 200
            except httpx.TransportError:
                time.sleep(0.05)
        assert up, "the registry did not answer /healthz with 200"
        yield box
    finally:
        proc.send_signal(signal.SIGTERM)
        box["out"], box["err"] = proc.communicate(timeout=30)


def _json_lines(text: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A cluster of this test's own, as it is stopped mid-test."""
    try:
        server = PostgresServer()
        server.start()
    except PostgresUnavailable as exc:
        if os.environ.get("WGTPM_REQUIRE_POSTGRES"):
            raise
        pytest.skip(f"PostgreSQL is not available here: {exc}")
    try:
        yield server
    finally:
        server.stop()


def test_a_500_hides_the_database_and_names_a_request_id_in_the_log(
    tmp_path: Path, own_postgres: PostgresServer
) -> None:
    db = own_postgres.create_database("ops")
    port = str(own_postgres.port)
    with serving(tmp_path, "--data", str(tmp_path / "d"), "--db", db) as srv:
        http = httpx.Client(base_url=srv["url"], timeout=30)
        assert http.get("/example.com/m/@v/list").status_code == 404
        own_postgres.halt()
        r = http.get("/example.com/m/@v/list")  # anonymous
        api = http.get("/api/v1/uploads/nothing")
        ready = http.get("/readyz")
        live = http.get("/healthz")
        http.close()
    for answer in (r, api):
        assert answer.status_code >= 500, answer.text
        for secret in ("127.0.0.1", port, "connection to server", "postgres"):
            assert secret not in answer.text, answer.text
    rid = r.headers["x-request-id"]
    assert rid in r.text
    assert api.json()["request_id"] == api.headers["x-request-id"]
    errors = [x for x in _json_lines(srv["err"]) if x.get("level") == "error"]
    detailed = [x for x in errors if rid in x["message"]]
    assert detailed and "connection" in (detailed[0]["message"] + detailed[0].get("exc", ""))
    access = _json_lines(srv["out"])
    assert [x["status"] for x in access if x["id"] == rid] == [r.status_code]
    assert (live.status_code, ready.status_code) == (200, 503)
    assert "database" in ready.json()["down"]
    assert port not in ready.text and "127.0.0.1" not in ready.text


def test_readyz_names_an_unreachable_store_and_healthz_stays_200(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_MAX_ATTEMPTS": "1",
    }
    flags = ("--data", str(tmp_path / "d"), "--store", "s3://bucket/blobs")
    flags += ("--s3-endpoint", f"http://127.0.0.1:{closed}")
    with serving(tmp_path, *flags, env=env) as srv:
        live = httpx.get(f"{srv['url']}/healthz", timeout=60)
        ready = httpx.get(f"{srv['url']}/readyz", timeout=60)
    assert live.status_code == 200 and live.json() == {"status": "ok"}
    assert ready.status_code == 503 and ready.json()["down"] == ["blob store"], ready.text
    assert str(closed) not in ready.text
    assert any("blob store is down" in x.get("message", "") for x in _json_lines(srv["err"]))


def _hit(url: str, n: int) -> None:
    with httpx.Client(base_url=url) as http:
        for i in range(n):
            http.get(f"/example.com/m{i}/@v/list")


def test_access_log_off_keeps_errors_on_stderr(tmp_path: Path) -> None:
    with serving(tmp_path, "--data", str(tmp_path / "d"), "--access-log", "off") as srv:
        _hit(srv["url"], 5)
    assert srv["out"] == ""
    assert any("registry stopped" in x.get("message", "") for x in _json_lines(srv["err"]))
    assert not [x for x in _json_lines(srv["err"]) if "status" in x]


def test_access_log_to_a_file_follows_logrotate(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    env = {"WGTPM_REGISTRY_ACCESS_LOG": str(log)}
    with serving(tmp_path, "--data", str(tmp_path / "d"), env=env) as srv:
        _hit(srv["url"], 3)
        time.sleep(1.2)  # a batch is written within FLUSH_SECONDS
        os.rename(log, tmp_path / "access.log.1")  # what logrotate does (no copytruncate)
        _hit(srv["url"], 4)
    assert srv["out"] == ""
    rotated = _json_lines((tmp_path / "access.log.1").read_text())
    fresh = _json_lines(log.read_text())
    assert len([x for x in rotated if x["path"].endswith("/@v/list")]) == 3
    assert len([x for x in fresh if x["path"].endswith("/@v/list")]) == 4
    line = fresh[-1]
    assert {"time", "id", "method", "path", "status", "bytes", "ms", "client"} <= line.keys()


def test_access_log_sample_keeps_one_in_n_and_every_5xx(tmp_path: Path) -> None:
    flags = ("--data", str(tmp_path / "d"), "--access-log", "stdout", "--access-log-sample", "4")
    with serving(tmp_path, *flags) as srv:
        _hit(srv["url"], 40)
    lists = [x for x in _json_lines(srv["out"]) if x["path"].endswith("/@v/list")]
    assert 8 <= len(lists) <= 12  # 40 / 4, give or take the /healthz polls counted too


def test_access_log_to_an_unwritable_file_is_one_clear_line(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "wgtpm",
            "registry",
            "serve",
            "--port",
            str(free_port()),
            "--data",
            str(tmp_path / "d"),
            "--access-log",
            str(tmp_path / "no" / "such.log"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--access-log" in r.stderr and "cannot append" in r.stderr, r.stderr
