"""uvicorn's internals that the registry's protocols use (:mod:`wgtpm._compat.uvicorn`): all
there in the version installed, named when one goes, and uvicorn's own protocol when so."""

from __future__ import annotations

import importlib.metadata
import socket
import types
from collections.abc import Iterator
from typing import Any

import pytest
from uvicorn.protocols.http import h11_impl

from registry import _http
from wgtpm._compat import uvicorn as compat

from .conftest import _serve


def _lacks(missing: list[str]) -> str:
    return (
        f"uvicorn {importlib.metadata.version('uvicorn')} lacks {', '.join(missing)}, which "
        "registry/_http.py uses (wgtpm/_compat/uvicorn.py): raise the floor in pyproject.toml "
        "or teach that module the new shape"
    )


def test_uvicorn_has_what_the_h11_protocol_uses() -> None:
    missing = compat.missing(compat.H11Protocol, compat.H11_USES, h11_impl)
    assert not missing, _lacks(missing)


def test_uvicorn_has_what_the_httptools_protocol_uses() -> None:
    if compat.HttpToolsProtocol is None:
        pytest.skip("httptools is not installed")
    from uvicorn.protocols.http import httptools_impl

    missing = compat.missing(compat.HttpToolsProtocol, compat.HTTPTOOLS_USES, httptools_impl)
    assert not missing, _lacks(missing)
    assert not compat.HTTPTOOLS_MISSING, _lacks(compat.HTTPTOOLS_MISSING)
    assert _http.protocol_class() is _http.FastHttpTools


def test_a_callback_gone_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.delattr(compat.H11Protocol, "on_response_complete")
        missing = compat.missing(compat.H11Protocol, compat.H11_USES, h11_impl)
    assert missing == ["H11Protocol.on_response_complete"]


def test_a_cycle_attribute_gone_is_named() -> None:
    class RequestResponseCycle:  # a newer uvicorn's, without the 100-continue flag
        def __init__(self) -> None:
            self.response_complete = False

    module = types.SimpleNamespace(__name__="h11_impl", RequestResponseCycle=RequestResponseCycle)
    missing = compat.missing(compat.H11Protocol, compat.H11_USES, module)
    assert missing == ["RequestResponseCycle.waiting_for_100_continue"]


@pytest.fixture
def uvicorns_own(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The registry's protocol_class() where uvicorn lacks something: serving a tiny app."""
    monkeypatch.setattr(_http, "H11_MISSING", ["H11Protocol.on_response_complete"])
    monkeypatch.setattr(_http, "HTTPTOOLS_MISSING", ["HttpToolsProtocol.on_body"])
    protocol = _http.protocol_class()
    assert protocol in (compat.H11Protocol, compat.HttpToolsProtocol)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})

    for url in _serve(app, http=protocol, lifespan="off"):
        yield int(url.rsplit(":", 1)[1])


def test_without_them_uvicorns_own_protocol_answers(uvicorns_own: int) -> None:
    with socket.create_connection(("127.0.0.1", uvicorns_own), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = b""
        while chunk := s.recv(4096):
            got += chunk
    assert got.startswith(b"HTTP/1.1 200 OK") and got.endswith(b"ok")
