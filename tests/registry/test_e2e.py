"""wgtpm's own client against a real registry on loopback: publish over HTTP, then ``wgtpm get``."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from .conftest import Live
from .helpers import h1, publish

BASE = "example.com/acme/base"
TOP = "example.com/acme/Top"  # a capital: escaped on the wire as !top


def mod(path: str, *requires: str) -> bytes:
    return (f"module {path}\nwgt 0.1\n" + "".join(f"require {r}\n" for r in requires)).encode()


def releases() -> dict[str, dict[str, bytes]]:
    return {
        f"{BASE}@v0.1.0": {"wgt.mod": mod(BASE), "base/weights.bin": b"\x07" * 3000},
        f"{BASE}@v0.2.0": {"wgt.mod": mod(BASE), "base/weights.bin": b"\x08" * 3000},
        f"{TOP}@v1.0.0": {
            "wgt.mod": mod(TOP, f"{BASE} v0.2.0"),
            "top/manifest.json": b'{"layers": 2}\n',
            "top/weights.bin": bytes(range(256)) * 64,
        },
    }


def publish_all(live: Live, private: bool = False) -> dict[str, dict[str, bytes]]:
    rel = releases()
    with httpx.Client(base_url=live.url) as http:
        for mv, fs in rel.items():
            module, version = mv.split("@")
            r = publish(http, live.token, module, version, fs, private=private)
            assert r.status_code == 201, r.text
    return rel


def sum_lines(rel: dict[str, dict[str, bytes]], *mvs: str) -> set[str]:
    out = set()
    for mv in mvs:
        module, version = mv.split("@")
        out.add(f"{module} {version} {h1(rel[mv])}")
        out.add(f"{module} {version}/wgt.mod {h1({'wgt.mod': rel[mv]['wgt.mod']})}")
    return out


def test_wgtpm_get_from_the_registry(
    wgtpm, live_any: Live, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    rel = publish_all(live_any)
    monkeypatch.setenv("WGTPROXY", live_any.url)
    r = wgtpm("get", f"{TOP}@v1.0.0", cwd=project)
    assert r.code == 0, r.err
    got = set((project / "wgt.sum").read_text().splitlines())
    assert got == sum_lines(rel, f"{TOP}@v1.0.0", f"{BASE}@v0.2.0")
    r = wgtpm("verify", cwd=project)
    assert r.code == 0, r.err


def test_wgtpm_get_latest(
    wgtpm, live: Live, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    rel = publish_all(live)
    monkeypatch.setenv("WGTPROXY", live.url)
    r = wgtpm("get", f"{BASE}@latest", cwd=project)
    assert r.code == 0, r.err
    assert "example.com/acme/base v0.2.0" in (project / "wgt.mod").read_text()
    assert set((project / "wgt.sum").read_text().splitlines()) == sum_lines(rel, f"{BASE}@v0.2.0")


def test_private_module_through_netrc(
    wgtpm, live: Live, project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    rel = publish_all(live, private=True)
    monkeypatch.setenv("WGTPROXY", live.url)
    r = wgtpm("get", f"{BASE}@v0.1.0", cwd=project)
    assert r.code != 0 and "not found" in r.err.lower()
    read = live.registry.create_token("example.com/acme", "read")[0]  # type: ignore[attr-defined]
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login wgtpm password {read}\n")
    monkeypatch.setenv("NETRC", str(netrc))
    r = wgtpm("get", f"{BASE}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert set((project / "wgt.sum").read_text().splitlines()) == sum_lines(rel, f"{BASE}@v0.1.0")


def test_ranges_and_healthz_over_a_real_socket(live: Live) -> None:
    rel = publish_all(live)
    body = rel[f"{TOP}@v1.0.0"]["top/weights.bin"]
    with httpx.Client(base_url=live.url) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        r = http.get(
            "/example.com/acme/!top/@v/v1.0.0/top/weights.bin", headers={"Range": "bytes=100-"}
        )
        assert r.status_code == 206 and r.content == body[100:]
        assert http.get("/example.com/acme/!top/@v/v1.0.0.info").json()["Version"] == "v1.0.0"


def test_concurrent_publishes_over_http(live: Live) -> None:
    """Eight clients publish at once: six versions sharing a blob, and two racing for one
    version with other bytes. Nothing is lost; exactly one of the racers wins."""
    import threading

    shared = b"\x05" * 20000
    jobs = [
        (f"v0.{i}.0", {"wgt.mod": mod(BASE), "shared.bin": shared, "own.bin": bytes([i]) * 100})
        for i in range(6)
    ]
    jobs += [("v1.0.0", {"wgt.mod": mod(BASE), "own.bin": tag * 100}) for tag in (b"a", b"b")]
    statuses: dict[int, int] = {}
    barrier = threading.Barrier(len(jobs))

    def run(i: int) -> None:
        version, fs = jobs[i]
        with httpx.Client(base_url=live.url, timeout=30) as http:
            barrier.wait()
            statuses[i] = publish(http, live.token, BASE, version, fs).status_code

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [statuses[i] for i in range(6)] == [201] * 6
    assert sorted(statuses[i] for i in (6, 7)) == [201, 409]
    with httpx.Client(base_url=live.url) as http:
        listed = http.get(f"/{BASE}/@v/list").text.split()
        assert listed == [f"v0.{i}.0" for i in range(6)] + ["v1.0.0"]
        for version, fs in jobs[:6]:
            assert http.get(f"/{BASE}/@v/{version}/own.bin").content == fs["own.bin"]
            assert http.get(f"/{BASE}/@v/{version}/shared.bin").content == shared
        winner = http.get(f"/{BASE}/@v/v1.0.0/own.bin").content
        assert winner in (b"a" * 100, b"b" * 100)
