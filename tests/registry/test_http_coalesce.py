"""registry._http: a response's head goes out with its body, and nothing waits past its turn."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
import uvicorn

from registry._http import HOLD, CoalescingTransport, protocol_class

from .helpers import free_port


class Recorder(asyncio.Transport):
    """A transport that records what reaches it: ("write", bytes) or ("writelines", [bytes])."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.calls.append(("write", bytes(data)))

    def writelines(self, lines: Iterable[Any]) -> None:
        self.calls.append(("writelines", [bytes(x) for x in lines]))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.calls.append(("close", None))
        self.closed = True


def test_a_head_goes_out_with_the_body_in_one_call() -> None:
    async def run() -> list[tuple[str, Any]]:
        rec = Recorder()
        t = CoalescingTransport(rec, asyncio.get_running_loop())
        t.write(b"HTTP/1.1 200 OK\r\n\r\n")
        t.write(b"x" * (64 << 10))
        await asyncio.sleep(0)
        return rec.calls

    assert asyncio.run(run()) == [("writelines", [b"HTTP/1.1 200 OK\r\n\r\n", b"x" * (64 << 10)])]


def test_a_lone_short_write_goes_out_at_the_end_of_the_turn_and_order_is_kept() -> None:
    async def run() -> list[list[tuple[str, Any]]]:
        rec = Recorder()
        t = CoalescingTransport(rec, asyncio.get_running_loop())
        t.write(b"head")
        seen = [list(rec.calls)]  # held for now
        await asyncio.sleep(0)
        seen.append(list(rec.calls))  # the turn ended: sent
        t.write(b"y" * (HOLD + 1))  # large: straight through
        t.write(b"a")
        t.writelines([b"b", b"c"])  # what is held goes first
        t.write(b"d")
        t.close()  # and before the close
        seen.append(list(rec.calls))
        await asyncio.sleep(0)
        seen.append(list(rec.calls))
        return seen

    held, turned, closed, after = asyncio.run(run())
    assert held == []
    assert turned == [("write", b"head")]
    assert closed == [
        ("write", b"head"),
        ("write", b"y" * (HOLD + 1)),
        ("write", b"a"),
        ("writelines", [b"b", b"c"]),
        ("write", b"d"),
        ("close", None),
    ]
    assert after == closed  # nothing written after the close


@pytest.fixture
def streaming_server() -> Iterator[tuple[int, threading.Event]]:
    """uvicorn with registry's protocol; GET sends its head, waits for ``go``, then its body."""
    go = threading.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"4")]}
        )
        while not go.is_set():
            await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b"done"})

    port = free_port()
    config = uvicorn.Config(app, port=port, http=protocol_class(), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield port, go
    finally:
        go.set()
        server.should_exit = True
        thread.join(10)


def test_a_streamed_head_is_not_held_for_its_body(
    streaming_server: tuple[int, threading.Event],
) -> None:
    port, go = streaming_server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        while b"\r\n\r\n" not in got:  # the head arrives while the body is not yet written
            chunk = s.recv(4096)
            assert chunk, "connection closed before the head"
            got += chunk
        assert got.startswith(b"HTTP/1.1 200 OK") and not go.is_set()
        go.set()
        while not got.endswith(b"done"):
            chunk = s.recv(4096)
            assert chunk, "connection closed before the body"
            got += chunk
