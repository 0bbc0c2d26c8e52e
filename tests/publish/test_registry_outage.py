"""Publishing through a registry outage: a real ``wgtpm registry serve`` process, killed
mid-publish (SIGKILL, between two file uploads).

- restarted on the same port some seconds later, the publish goes on where it stopped
  (the upload lives in the registry's database), completes, and the registry holds
  exactly one release whose every byte matches the build;
- left down past ``WGTPM_HTTP_DEADLINE``, the publish ends with one line naming the step,
  the registry and the setting, and nothing is published; the same publish then succeeds;
- a commit the registry recorded but whose answer was lost is not reported as failed.

The deadline and the waits between tries are made small here (``HttpOptions(deadline=)``,
``RegistryTarget(backoff=)``), the outage a few seconds: longer than the old retries
lasted with the same waits, well within the deadline.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.registry.conftest import Live
from tests.registry.helpers import free_port, registry_token
from wgtpm._errors import ModuleError
from wgtpm._report import SILENT, Silent
from wgtpm._retry import Backoff
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.publish import PublishOptions, RegistryTarget, publish_package
from wgtpm.publish._target import Release

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FAST = Backoff(base=0.05, cap=0.3)
#: Seconds between the kill and the restart (the registry then takes a second or two to start).
OUTAGE = 4.0


class Registry:
    """``wgtpm registry serve --data DIR`` on a fixed loopback port, killed and started at will;
    its access log (one JSON line a request) goes to ``log``, across restarts."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / "access.log"
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.token = registry_token(data, "example.com", self.env)
        self.proc: subprocess.Popen[bytes] | None = None
        self.killed_at = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "wgtpm", "registry", "serve", "--port", str(self.port)),
                *("--data", str(self.data), "--access-log", str(self.log)),
            ],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError("the registry did not start")

    def kill(self) -> None:
        """SIGKILL; :attr:`killed_at` is where the log ends then (what the killed process
        had not written yet is lost), so later lines are the next process's."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.killed_at = self.log.stat().st_size if self.log.exists() else 0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)

    def requests(self, method: str, part: str, since: int = 0) -> list[str]:
        """The paths of the logged ``method`` requests holding ``part``, from byte ``since``."""
        text = self.log.read_bytes()[since:].decode()
        lines = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
        return [r["path"] for r in lines if r.get("method") == method and part in r["path"]]


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    reg = Registry(tmp_path / "registry")
    reg.start()
    try:
        yield reg
    finally:
        reg.stop()


class KillAtUpload(Silent):
    """A reporter that kills the registry as the ``n``-th file upload begins, and starts it
    again ``restart_after`` seconds later (never, when ``None``)."""

    def __init__(self, reg: Registry, n: int, restart_after: float | None) -> None:
        self.reg, self.n, self.restart_after = reg, n, restart_after
        self.notices: list[str] = []
        self.restarter: threading.Thread | None = None

    def notice(self, message: str) -> None:
        self.notices.append(message)
        if message.startswith("uploading ") and f"({self.n}/" in message:
            self.reg.kill()
            if self.restart_after is not None:
                wait = self.restart_after
                self.restarter = threading.Thread(
                    target=lambda: (time.sleep(wait), self.reg.start()), daemon=True
                )
                self.restarter.start()

    def warning(self, message: str) -> None:
        self.notices.append(message)


def _check_release(url: str, pkg: Path, release: Release) -> None:
    """Exactly one version listed, its index the build's, every file's bytes those the index
    names, the sources' bytes those of the package."""
    base = f"{url}/{release.module}/@v/{release.version}"
    assert httpx.get(f"{url}/{release.module}/@v/list").text.split() == [release.version]
    assert httpx.get(f"{base}.index.json").content == release.index
    for e in json.loads(release.index)["files"]:
        body = httpx.get(f"{base}/{e['path']}").content
        assert hashlib.sha256(body).hexdigest() == e["sha256"], e["path"]
        if (pkg / e["path"]).is_file():
            assert body == (pkg / e["path"]).read_bytes(), e["path"]


def test_a_publish_rides_out_a_registry_restart(base_pkg: Path, registry: Registry) -> None:
    reporter = KillAtUpload(registry, 2, restart_after=OUTAGE)
    with HttpClient(HttpOptions(deadline=60, timeout=10, backoff=0.05)) as http:
        target = RegistryTarget(registry.url, http, token=registry.token, backoff=FAST)
        done = publish_package(base_pkg, PublishOptions("v0.1.0", tag=False), target, reporter)
    assert reporter.restarter is not None  # killed mid-publish, after one file went up
    assert done.published.created
    assert any("trying again for up to 60s (WGTPM_HTTP_DEADLINE)" in n for n in reporter.notices)
    _check_release(registry.url, base_pkg, done.release)
    # resumed after the restart: no new upload, each file the kill left unsent went up once,
    # the one sent before it not again, and one commit. Access lines wait up to half a second
    # in the log's buffer (registry.accesslog.FLUSH_SECONDS), so stop the registry first: a
    # clean stop writes them all.
    registry.stop()
    after = registry.killed_at
    posts = registry.requests("POST", "/api/v1/uploads", since=after)
    assert len(posts) == 1 and posts[0].endswith("/commit"), posts
    puts = registry.requests("PUT", "/files/", since=after)
    uploading = [n for n in reporter.notices if n.startswith("uploading ")]
    assert len(puts) == len(set(puts)) == len(uploading) - 1, (puts, uploading)


def test_a_registry_down_past_the_deadline_is_one_line_and_nothing_published(
    base_pkg: Path, registry: Registry
) -> None:
    reporter = KillAtUpload(registry, 2, restart_after=None)
    opts = PublishOptions("v0.1.0", tag=False)
    started = time.monotonic()
    with HttpClient(HttpOptions(deadline=1.5, timeout=5, backoff=0.05)) as http:
        target = RegistryTarget(registry.url, http, token=registry.token, backoff=FAST)
        with pytest.raises(ModuleError) as err:
            publish_package(base_pkg, opts, target, reporter)
    assert time.monotonic() - started < 30  # gave up at the deadline, not later
    msg = str(err.value)
    assert "\n" not in msg and registry.token not in msg
    assert msg.startswith("example.com/acme/xor@v0.1.0: upload ")
    assert f"at registry {registry.url} failed: PUT {registry.url}/api/v1/uploads/" in msg
    assert "WGTPM_HTTP_DEADLINE sets how long to keep trying); nothing was published" in msg
    registry.start()
    assert httpx.get(f"{registry.url}/example.com/acme/xor/@v/list").status_code == 404
    with HttpClient() as http:  # the same publish again: it completes
        target = RegistryTarget(registry.url, http, token=registry.token)
        done = publish_package(base_pkg, opts, target, SILENT)
    _check_release(registry.url, base_pkg, done.release)


class _LostCommitAnswer(httpx.BaseTransport):
    """The network between client and registry: the first commit reaches the registry, its
    answer never comes back."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.commits = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/commit"):
            self.commits += 1
            if self.commits == 1:
                self.inner.handle_request(request).close()
                raise httpx.ReadError("connection reset by peer", request=request)
        return self.inner.handle_request(request)


def test_a_commit_whose_answer_was_lost_is_published(base_pkg: Path, live: Live) -> None:
    lossy = _LostCommitAnswer()
    with HttpClient(HttpOptions(deadline=5, backoff=0.05), transport=lossy) as http:
        target = RegistryTarget(live.url, http, token=live.token, backoff=FAST)
        done = publish_package(base_pkg, PublishOptions("v0.1.0", tag=False), target, SILENT)
    assert lossy.commits == 2  # the second answered 404: the upload went with its commit
    assert done.published.created
    assert httpx.get(f"{live.url}/example.com/acme/xor/@v/list").text.split() == ["v0.1.0"]
