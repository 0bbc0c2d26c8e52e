"""Bad settings in the environment are one clear line naming the variable, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def app(tmp_path: Path) -> Path:
    d = tmp_path / "app"
    d.mkdir()
    (d / "wgt.mod").write_text("module example.com/app\nwgt 0.1\nrequire example.com/dep v0.1.0\n")
    return d


@pytest.mark.parametrize(
    "var,value,want",
    [
        ("WGTPM_HTTP_RETRIES", "1e400", "WGTPM_HTTP_RETRIES='1e400': want a number from 0 to 100"),
        ("WGTPM_HTTP_RETRIES", "abc", "WGTPM_HTTP_RETRIES='abc': want a number from 0 to 100"),
        ("WGTPM_HTTP_RETRIES", "2.5", "WGTPM_HTTP_RETRIES=2.5: want a whole number from 0 to 100"),
        ("WGTPM_HTTP_TIMEOUT", "-1", "WGTPM_HTTP_TIMEOUT='-1': want a number from 0.001 to 86400"),
        ("WGTPM_HTTP_DEADLINE", "nan", "WGTPM_HTTP_DEADLINE='nan': want a number"),
        ("WGTPROXY", "http://[::1", "WGTPROXY='http://[::1': Invalid IPv6 URL"),
        ("WGTPROXY", "http://", "WGTPROXY='http://': 'http://' names no host"),
        ("WGTPROXY", "http://u:hunter2@host:9x/", "WGTPROXY='http://***@host:9x/': Port could not"),
        ("WGTPROXY", "ftp://s3cr3t@host,direct", "WGTPROXY='ftp://***@host,direct': 'ftp://***@host' is not a URL"),
    ],
)  # fmt: skip
def test_bad_setting(
    app: Path, wgtpm, monkeypatch: pytest.MonkeyPatch, var: str, value: str, want: str
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(var, value)
    if var != "WGTPROXY":
        monkeypatch.setenv("WGTPROXY", "http://127.0.0.1:9")  # never reached
    mod = (app / "wgt.mod").read_bytes()
    r = wgtpm("get", cwd=app)
    assert r.code == 1
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith(f"wgtpm: {want}"), r.err
    assert "hunter2" not in r.err and "s3cr3t" not in r.err
    assert (app / "wgt.mod").read_bytes() == mod
    assert not (app / "wgt.sum").exists()
