"""A real OCI registry on loopback: the CNCF distribution registry (Debian's ``docker-registry``).

Three registries, each started once per test session (every test works in a
repository of its own, so sharing one is safe): ``oci_registry`` answers
without credentials, ``oci_registry_auth`` wants HTTP Basic credentials from an
htpasswd file (user ``wgt``, password :data:`PASSWORD`), and
``oci_registry_token`` wants bearer tokens from a token service
(:class:`TokenServer`, on loopback: it hands out JWTs signed with a key whose
self-signed certificate the registry trusts, for user ``wgt`` and
:data:`PASSWORD`, or for the identity token :data:`IDENTITY_TOKEN`). The htpasswd line is a
bcrypt hash made by the C library's ``crypt`` (libxcrypt, in every Debian
system: ``libcrypt1``) through :mod:`ctypes`, so nothing is installed for it;
where that library lacks bcrypt, Apache's ``htpasswd -B`` (``apache2-utils``)
is used if present.

Without ``docker-registry`` the tests that use these fixtures skip, unless
``WGTPM_REQUIRE_OCI=1`` (as in ``.ci/run``, which installs it): then they fail.
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import datetime
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

from tests.servers import LoopbackServer, Request, Response

USER = "wgt"
PASSWORD = "oci-test-password-7f3a"
IDENTITY_TOKEN = "oci-test-refresh-token-91c2"
SERVICE = "wgtpm-test-registry"
ISSUER = "wgtpm-test-issuer"
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
    token_server: TokenServer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def oci(self, namespace: str) -> str:
        """``oci://HOST/NAMESPACE``, a WGTPROXY entry or a publish target."""
        return f"oci://{self.host}/{namespace}"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenServer(LoopbackServer):
    """A registry's token service (the distribution spec's token authentication).

    ``GET /token?service=&scope=`` with Basic ``USER``/``PASSWORD``, or ``POST /token``
    with ``grant_type=refresh_token`` and :data:`IDENTITY_TOKEN`, answers a JWT that
    grants the scope's actions; anonymous requests get a token that grants nothing.
    ``issued`` counts the tokens handed out.
    """

    name = "oci-token"

    def __init__(self) -> None:
        super().__init__()
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wgtpm test token signer")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.cert_pem = self.cert.public_bytes(serialization.Encoding.PEM)
        self._x5c = base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()
        self.issued = 0

    def _jwt(self, access: list[dict[str, object]], subject: str) -> str:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        now = int(time.time())
        header = {"typ": "JWT", "alg": "ES256", "x5c": [self._x5c]}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        signing = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
        r, s = decode_dss_signature(self.key.sign(signing.encode(), ec.ECDSA(hashes.SHA256())))
        return signing + "." + _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def route(self, req: Request) -> Response:
        if req.path != "/token":
            return Response.text("not found", 404)
        params = dict(req.query)
        who = None
        if req.method == "POST":
            form = {k: v[0] for k, v in parse_qs(req.body.decode()).items()}
            params.update(form)
            if form.get("grant_type") == "refresh_token":
                if form.get("refresh_token") != IDENTITY_TOKEN:
                    return Response.json({"error": "invalid_grant"}, 401)
                who = USER
        auth = req.header("authorization") or ""
        if auth.lower().startswith("basic "):
            user, _, pw = base64.b64decode(auth[6:]).decode().partition(":")
            if (user, pw) != (USER, PASSWORD):
                return Response.json({"details": "incorrect username or password"}, 401)
            who = user
        if params.get("service") != SERVICE:
            return Response.json({"details": "unknown service"}, 400)
        access: list[dict[str, object]] = []
        for scope in (params.get("scope") or "").split(" "):
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            if kind == "repository" and name and who is not None:
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
        with self._lock:
            self.issued += 1
        return Response.json({"token": self._jwt(access, who or ""), "expires_in": 300})


def _config(
    root: Path, port: int, htpasswd: Path | None, token: tuple[str, Path] | None = None
) -> str:
    auth = (
        f"auth:\n  htpasswd:\n    realm: wgtpm-test\n    path: {htpasswd}\n"
        if htpasswd is not None
        else ""
    )
    if token is not None:
        auth = (
            f"auth:\n  token:\n    realm: {token[0]}\n    service: {SERVICE}\n"
            f"    issuer: {ISSUER}\n    rootcertbundle: {token[1]}\n"
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


def _start(
    tmp: Path, *, basic_auth: bool, token: TokenServer | None = None
) -> Iterator[OciRegistry]:
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
    realm: tuple[str, Path] | None = None
    if token is not None:
        (tmp / "token-ca.pem").write_bytes(token.cert_pem)
        realm = (f"{token.url}/token", tmp / "token-ca.pem")
    config.write_text(_config(tmp / "storage", port, htpasswd, realm))
    log = tmp / "registry.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [exe, "serve", str(config)], stdout=out, stderr=subprocess.STDOUT, cwd=tmp
        )
    with_user = basic_auth or token is not None
    reg = OciRegistry(
        f"127.0.0.1:{port}",
        tmp / "storage",
        log,
        USER if with_user else None,
        PASSWORD if with_user else None,
        token,
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


@pytest.fixture(scope="session")
def oci_registry_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OciRegistry]:
    """A distribution registry that wants bearer tokens from a :class:`TokenServer`."""
    with TokenServer() as token:
        yield from _start(tmp_path_factory.mktemp("oci-token"), basic_auth=False, token=token)


@pytest.fixture(autouse=True)
def _no_registry_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No config.json or auth file of the machine running the tests is read."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker-config"))
    for var in ("REGISTRY_AUTH_FILE", "WGTOCI", "WGTOCI_INSECURE"):
        monkeypatch.delenv(var, raising=False)


_names = iter(range(1 << 30))


@pytest.fixture
def oci_namespace() -> str:
    """A namespace no other test of the session uses."""
    return f"t{next(_names)}-{secrets.token_hex(3)}"
