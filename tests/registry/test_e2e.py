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
