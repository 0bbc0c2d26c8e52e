"""HTTPS through wgtpm's HTTP client, against a loopback server with a certificate made here.

The client's TLS context (its CA bundle: ``SSL_CERT_FILE``, ``SSL_CERT_DIR`` or
certifi) is made on the first TLS connection, not with the client: a command that
talks plain HTTP never pays for parsing the bundle (``_httptransport.LazyTLS``).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.servers import LoopbackServer, Request, Response, serve_bytes
from wgtpm import _httptransport
from wgtpm.httpclient import CertificateError, HttpClient

BODY = b"over TLS\n" * 1000


class _Files(LoopbackServer):
    def route(self, req: Request) -> Response:
        return serve_bytes(req, BODY)


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key: (cert.pem, key.pem)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wgtpm test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem, key_pem = tmp / "cert.pem", tmp / "key.pem"
    cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_pem, key_pem


@pytest.fixture()
def tls_server(tmp_path: Path) -> Iterator[tuple[_Files, Path]]:
    cert, key = _self_signed(tmp_path)
    srv = _Files()
    srv.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.tls.load_cert_chain(cert, key)
    with srv:
        yield srv, cert


@pytest.fixture()
def contexts_made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many TLS contexts httpx made (each parses a whole CA bundle)."""
    made: list[int] = []
    real = httpx.create_ssl_context

    def counting(*a: object, **k: object) -> ssl.SSLContext:
        made.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx, "create_ssl_context", counting)
    return made


def test_https_is_verified_against_ssl_cert_file(
    tls_server: tuple[_Files, Path], monkeypatch: pytest.MonkeyPatch, contexts_made: list[int]
) -> None:
    srv, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with HttpClient() as http:
        assert contexts_made == []  # not with the client
        assert http.get_bytes(f"{srv.url}/a") == BODY
        with http.stream(f"{srv.url}/b", offset=9) as resp:
            assert resp.status_code == 206
            assert b"".join(resp.iter_bytes()) == BODY[9:]
    assert contexts_made == [1]  # once, for every connection of the client


def test_an_untrusted_certificate_is_refused(
    tls_server: tuple[_Files, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, _ = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with HttpClient() as http, pytest.raises(CertificateError) as err:
        http.get_bytes(f"{srv.url}/a")
    msg = str(err.value)
    assert "the TLS certificate of 127.0.0.1 is not trusted" in msg
    assert "self-signed certificate" in msg and "set SSL_CERT_FILE" in msg
    assert "gave up after" not in msg  # trying again cannot help: one try
    assert len(srv.log) == 0  # no request went over a connection it could not trust


def test_plain_http_makes_no_tls_context(contexts_made: list[int]) -> None:
    with _Files() as srv, HttpClient() as http:
        assert http.get_bytes(f"{srv.url}/a") == BODY
    assert contexts_made == []


BIG = os.urandom((6 << 20) + 7)


class _Big(LoopbackServer):
    def route(self, req: Request) -> Response:
        return serve_bytes(req, BIG)


@pytest.mark.parametrize("how", ["into buffers", "into the file"])
def test_a_large_body_over_tls_goes_past_h11_and_keeps_its_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The TLS socket decrypts a large body straight into the caller's buffer (or it is
    decrypted here and written into the file): the bytes are right, and the connection
    serves the next request."""
    cert, key = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    srv = _Big()
    srv.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.tls.load_cert_chain(cert, key)
    received = []
    recv_into = _httptransport.Stream.recv_into

    def counting(self, view, timeout):  # type: ignore[no-untyped-def]
        assert isinstance(self.sock, ssl.SSLSocket)
        received.append(n := recv_into(self, view, timeout))
        return n

    monkeypatch.setattr(_httptransport.Stream, "recv_into", counting)
    out = tmp_path / "out"
    buf = bytearray(1 << 20)
    with srv, HttpClient() as http, open(out, "wb+") as f:
        for name in ("a", "b"):
            f.truncate(0)
            at = 0
            url = f"{srv.url}/{name}"
            with http.stream(url) as resp, _httptransport.BodyReader(resp, len(BIG)) as body:
                while True:
                    if how == "into the file":
                        n = body.into_file(f.fileno(), at, len(BIG) - at)
                    else:
                        n = body.into(memoryview(buf))
                        os.pwrite(f.fileno(), buf[:n], at)
                    if not n:
                        break
                    at += n
            f.seek(0)
            assert f.read() == BIG
        assert srv.connections == 1
    if how == "into buffers":  # most of each body came past h11 and httpx
        assert sum(received) > len(BIG), received
    else:
        assert not received
