"""A real OCI registry on loopback: the CNCF distribution registry (Debian's ``docker-registry``).

Two registries, each started once per test session (every test works in a
repository of its own, so sharing one is safe): ``oci_registry`` answers
without credentials, ``oci_registry_auth`` wants HTTP Basic credentials from an
htpasswd file (user ``wgt``, password :data:`PASSWORD`). The htpasswd line is a
bcrypt hash made by the C library's ``crypt`` (libxcrypt, in every Debian
system: ``libcrypt1``) through :mod:`ctypes`, so nothing is installed for it;
where that library lacks bcrypt, Apache's ``htpasswd -B`` (``apache2-utils``)
is used if present.

Without ``docker-registry`` the tests that use these fixtures skip, unless
``WGTPM_REQUIRE_OCI=1`` (as in ``.ci/run``, which installs it): then they fail.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

USER = "wgt"
PASSWORD = "oci-test-password-7f3a"
#: bcrypt's own base64 alphabet (salts are 22 characters of it)
_BCRYPT_B64 = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _unavailable(why: str) -> None:
    if os.environ.get("WGTPM_REQUIRE_OCI") == "1":
        pytest.fail(f"WGTPM_REQUIRE_OCI=1 but {why}")
    pytest.skip(why)


def bcrypt_hash(password: str) -> str | None:
    """A bcrypt hash of ``password`` (cost 5: tests need no strength), or ``None`` when
    neither libcrypt's bcrypt nor ``htpasswd`` is at hand."""
    name = ctypes.util.find_library("crypt")
    if name:
        lib = ctypes.CDLL(name)
        lib.crypt.restype = ctypes.c_char_p
        lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        salt = "$2b$05$" + "".join(secrets.choice(_BCRYPT_B64) for _ in range(22))
        out = lib.crypt(password.encode(), salt.encode())
        if out and out.startswith(b"$2b$"):
            return str(out.decode())
    htpasswd = shutil.which("htpasswd")
    if htpasswd:
        line = subprocess.run(
            [htpasswd, "-nbB", "-C", "5", USER, password],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return line.split(":", 1)[1]
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class OciRegistry:
    """A running registry: ``host`` is ``127.0.0.1:PORT`` (what ``oci://`` URLs name)."""

    host: str
    root: Path
    log: Path
    user: str | None = None
    password: str | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def oci(self, namespace: str) -> str:
        """``oci://HOST/NAMESPACE``, a WGTPROXY entry or a publish target."""
        return f"oci://{self.host}/{namespace}"


def _config(root: Path, port: int, htpasswd: Path | None) -> str:
    auth = (
        f"auth:\n  htpasswd:\n    realm: wgtpm-test\n    path: {htpasswd}\n"
        if htpasswd is not None
        else ""
    )
    return (
        "version: 0.1\n"
        "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
        "storage:\n"
        f"  filesystem:\n    rootdirectory: {root}\n"
        "  delete:\n    enabled: true\n"
        "  maintenance:\n    uploadpurging:\n      enabled: false\n"
        f"http:\n  addr: 127.0.0.1:{port}\n  secret: {secrets.token_hex(16)}\n" + auth
    )


def _start(tmp: Path, *, basic_auth: bool) -> Iterator[OciRegistry]:
    exe = shutil.which("docker-registry")
    if exe is None:
        _unavailable("docker-registry is not installed (apt-get install docker-registry)")
    assert exe is not None
    htpasswd: Path | None = None
    if basic_auth:
        hashed = bcrypt_hash(PASSWORD)
        if hashed is None:
            _unavailable("no bcrypt for an htpasswd file (libcrypt or apache2-utils)")
        htpasswd = tmp / "htpasswd"
        htpasswd.write_text(f"{USER}:{hashed}\n")
    port = _free_port()
    config = tmp / "config.yml"
    config.write_text(_config(tmp / "storage", port, htpasswd))
    log = tmp / "registry.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [exe, "serve", str(config)], stdout=out, stderr=subprocess.STDOUT, cwd=tmp
        )
    reg = OciRegistry(
        f"127.0.0.1:{port}",
        tmp / "storage",
        log,
        USER if basic_auth else None,
        PASSWORD if basic_auth else None,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"docker-registry exited ({proc.returncode}): {log.read_text()[-2000:]}"
                )
            try:
                status = httpx.get(f"{reg.url}/v2/", timeout=2).status_code
            except httpx.HTTPError:
                status = 0
            if status in (200, 401):
                break
            if time.monotonic() > deadline:
                pytest.fail(
                    f"docker-registry did not answer /v2/ in 30s: {log.read_text()[-2000:]}"
                )
            time.sleep(0.05)
        yield reg
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OciRegistry]:
    """A distribution registry without auth, plain HTTP on 127.0.0.1."""
    yield from _start(tmp_path_factory.mktemp("oci-open"), basic_auth=False)


@pytest.fixture(scope="session")
def oci_registry_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OciRegistry]:
    """A distribution registry that wants HTTP Basic credentials (``USER``/``PASSWORD``)."""
    yield from _start(tmp_path_factory.mktemp("oci-basic"), basic_auth=True)


_names = iter(range(1 << 30))


@pytest.fixture
def oci_namespace() -> str:
    """A namespace no other test of the session uses."""
    return f"t{next(_names)}-{secrets.token_hex(3)}"
