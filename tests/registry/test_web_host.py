"""The pages' ``HF_ENDPOINT`` line names the configured public URL, never a request's ``Host``.

Public version pages are kept by the server and sent ``public, max-age=300``: a
request that names another host (``Host: evil.example``, ``X-Forwarded-Proto``)
must not change the line the next reader pastes into a shell.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import Live, _serve
from .helpers import free_port, publish, registry_token

HF_MOD = "hf.co/acme/tiny"
PUBLIC = "https://models.example.com"
PAGE = f"/-/module/{HF_MOD}/@v/v0.1.0"


def _files() -> dict[str, bytes]:
    return {"wgt.mod": f"module {HF_MOD}\n".encode(), "config.json": b"{}"}


@pytest.fixture
def hosted(tmp_path: Path) -> Iterator[Live]:
    """A live registry configured with ``public_url=PUBLIC``, with ``HF_MOD`` published."""
    from registry.app import create_app
    from registry.metadata import open_metadata_store
    from registry.service import Registry
    from registry.stores import open_blob_store

    meta = open_metadata_store(f"sqlite:///{tmp_path / 'r.db'}")
    reg = Registry(
        meta, open_blob_store(str(tmp_path / "blobs"), spool=tmp_path / "spool"), public_url=PUBLIC
    )
    token, _ = reg.create_token("hf.co/acme", "publish")
    try:
        for url in _serve(create_app(registry=reg)):
            with httpx.Client(base_url=url) as http:
                r = publish(http, token, HF_MOD, "v0.1.0", _files())
                assert r.status_code == 201, r.text
            yield Live(url, reg, token)
    finally:
        reg.close()


def _line(page: str) -> str:
    at = page.index("HF_ENDPOINT=")
    return page[at : page.index(" ", at)]


def test_a_poisoned_host_does_not_reach_the_page_or_its_cache(hosted: Live) -> None:
    evil = {"Host": "evil.example", "X-Forwarded-Proto": "gopher", "X-Forwarded-Host": "x.evil"}
    with httpx.Client(base_url=hosted.url) as http:
        first = http.get(PAGE, headers=evil)  # the first: it renders the page and keeps it
        assert first.status_code == 200 and first.headers["cache-control"] == "public, max-age=300"
        later = http.get(PAGE)  # the kept page
        module = http.get(f"/-/module/{HF_MOD}", headers=evil)
    for page in (first.text, later.text, module.text):
        assert _line(page) == f"HF_ENDPOINT={PUBLIC}"
        assert "evil" not in page and "gopher" not in page
    assert first.text == later.text


def test_without_a_public_url_the_pages_leave_the_line_out(live: Live) -> None:
    """A registry that was not told its URL (``Registry()`` bare) prints no guess of it."""
    with httpx.Client(base_url=live.url) as http:
        hf = live.registry.create_token("hf.co/acme", "publish")[0]  # type: ignore[attr-defined]
        assert publish(http, hf, HF_MOD, "v0.1.0", _files()).status_code == 201
        page = http.get(PAGE, headers={"Host": "evil.example"}).text
    assert "HF_ENDPOINT" not in page and "evil.example" not in page


def test_public_url_from_the_environment_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from registry._errors import BadRequestError
    from registry.app import open_registry
    from registry.config import Config, check_public_url

    monkeypatch.setenv("WGTPM_REGISTRY_PUBLIC_URL", "https://models.example.com/reg/")
    reg = open_registry(Config(data=tmp_path / "a"))
    try:
        assert reg.public_url == "https://models.example.com/reg"
    finally:
        reg.close()
    # carried to serve's worker processes
    assert Config(public_url=PUBLIC).environ()["WGTPM_REGISTRY_PUBLIC_URL"] == PUBLIC
    for bad in ("evil.example", "ftp://x", "http://u:p@x", "http://x/?q", "http://x/ ;id", "x`id`"):
        with pytest.raises(ValueError, match="public URL"):
            check_public_url(bad)
    monkeypatch.setenv("WGTPM_REGISTRY_PUBLIC_URL", "http://x/$(id)")
    with pytest.raises(BadRequestError, match="public URL"):
        open_registry(Config(data=tmp_path / "b"))
    for good in ("http://127.0.0.1:8080", "http://[::1]:8080", "https://a-b.example/x_y/z"):
        assert check_public_url(good + "/") == good


class _Served:
    """``wgtpm registry serve`` in a subprocess on loopback."""

    def __init__(self, data: Path, *flags: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("WGTPM_")}
        self.log = data.parent / f"serve-{self.port}.log"
        cmd = [sys.executable, "-m", "wgtpm", "registry", "serve", "--data", str(data)]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*cmd, "--port", str(self.port), *flags],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.1)
        raise AssertionError(f"the registry did not start: {self.log.read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _served_line(data: Path, *flags: str) -> tuple[str, str]:
    """The ``HF_ENDPOINT`` line a served registry's page shows (asked with a poisoned Host),
    and the registry's URL."""
    server = _Served(data, *flags)
    try:
        token = registry_token(data, "hf.co/acme", server.env)
        with httpx.Client(base_url=server.url) as http:
            r = publish(http, token, HF_MOD, "v0.1.0", _files())
            assert r.status_code == 201, r.text
            page = http.get(PAGE, headers={"Host": "evil.example"})
            assert page.status_code == 200, page.text
            assert "evil.example" not in http.get(PAGE).text
        return _line(page.text), server.url
    finally:
        server.stop()


def test_serve_public_url_flag_and_its_default(tmp_path: Path) -> None:
    line, _ = _served_line(tmp_path / "a", "--public-url", PUBLIC + "/")
    assert line == f"HF_ENDPOINT={PUBLIC}"
    line, url = _served_line(tmp_path / "b")  # what serve listens on
    assert line == f"HF_ENDPOINT={url}"


def test_serve_refuses_a_bad_public_url_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WGTPM_")}
    cmd = [sys.executable, "-m", "wgtpm", "registry", "serve", "--data", str(tmp_path)]
    done = subprocess.run(
        [*cmd, "--port", str(free_port()), "--public-url", "http://x/;id"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "--public-url" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
