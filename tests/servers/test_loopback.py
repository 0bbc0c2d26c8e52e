"""The shared machinery of the loopback servers: ranges, credentials on the CDN, faults, the log."""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.servers import CdnServer, Fault

DATA = bytes(range(256)) * 64


def test_cdn_serves_ranges_and_refuses_credentials(cdn: CdnServer) -> None:
    url = cdn.put(DATA, "w.bin")
    assert httpx.get(url).content == DATA
    r = httpx.get(url, headers={"Range": "bytes=1000-"})
    assert r.status_code == 206 and r.content == DATA[1000:]
    assert r.headers["content-range"] == f"bytes 1000-{len(DATA) - 1}/{len(DATA)}"
    assert httpx.get(url, headers={"Range": "bytes=-10"}).content == DATA[-10:]
    assert httpx.get(url, headers={"Range": f"bytes={len(DATA)}-"}).status_code == 416
    assert httpx.get(url.split("?")[0] + "?sig=forged").status_code == 403
    for header in ("Authorization", "X-API-Key", "Cookie"):
        assert httpx.get(url, headers={header: "secret"}).status_code == 400
    assert [s.status for s in cdn.log.where(server="cdn", header="authorization")] == [400]


def test_the_log_keeps_every_header(cdn: CdnServer) -> None:
    httpx.get(cdn.put(b"x"), headers={"X-Custom": "1", "User-Agent": "probe"})
    (seen,) = cdn.log.where(server="cdn")
    assert seen.method == "GET" and seen.status == 200
    assert seen.header("x-custom") == "1" and seen.header("USER-AGENT") == "probe"


def test_status_faults_fire_the_given_number_of_times(cdn: CdnServer) -> None:
    url = cdn.put(DATA)
    fault = cdn.inject(Fault.too_many("/blobs/*", "7", times=2))
    first = httpx.get(url)
    assert first.status_code == 429 and first.headers["retry-after"] == "7"
    assert httpx.get(url).status_code == 429
    assert httpx.get(url).status_code == 200
    assert fault.times == 0
    cdn.inject(Fault.error("/blobs/*", 410))
    assert httpx.get(url).status_code == 410


def test_body_faults(cdn: CdnServer) -> None:
    url = cdn.put(DATA)
    cdn.inject(Fault.flip("/blobs/*"))
    flipped = httpx.get(url).content
    assert len(flipped) == len(DATA) and flipped != DATA
    assert sum(a != b for a, b in zip(flipped, DATA)) == 1
    cdn.inject(Fault.short("/blobs/*", at=0.25))
    assert httpx.get(url).content == DATA[: len(DATA) // 4]
    cdn.inject(Fault.truncate("/blobs/*"))
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(url)
    cdn.inject(Fault.reset("/blobs/*"))
    with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
        httpx.get(url)
    cdn.inject(Fault.drip("/blobs/*", delay=0.001, chunk=4096))
    assert hashlib.sha256(httpx.get(url).content).digest() == hashlib.sha256(DATA).digest()
    kinds = [s.fault for s in cdn.log.where(server="cdn")]
    assert kinds == ["flip", "short", "truncate", "reset", "drip"]


def test_redirects_pass_body_faults_by(cdn: CdnServer) -> None:
    """A body fault waits for a response with a body; HEAD requests never trigger one."""
    url = cdn.put(DATA)
    fault = cdn.inject(Fault.flip("/blobs/*"))
    assert httpx.head(url).status_code == 200
    assert fault.times == 1
    assert httpx.get(url).content != DATA


def test_responses_are_not_held_back_by_nagle(cdn: CdnServer) -> None:
    """Headers and body leave in two writes; without TCP_NODELAY each answer on a kept-alive
    connection would wait for the client's delayed ACK (40 ms): 20 answers, about 0.8 s."""
    url = cdn.put(DATA[:1000])
    with httpx.Client() as client:
        t0 = time.perf_counter()
        for _ in range(20):
            assert client.get(url).status_code == 200
        assert time.perf_counter() - t0 < 0.4


def test_latency_is_added_to_each_request_in_parallel(cdn: CdnServer) -> None:
    url = cdn.put(DATA)
    cdn.latency = 0.5
    t0 = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        assert all(r.content == DATA for r in pool.map(lambda _: httpx.get(url), range(4)))
    # Four requests, each held 0.5 s: in parallel that is one latency, in series four (2 s).
    # The bound sits between the two, with room for a loaded machine (2 cores at load 14
    # took more than 0.55 s over one latency of 0.2 s).
    assert 0.5 <= time.perf_counter() - t0 < 1.6
