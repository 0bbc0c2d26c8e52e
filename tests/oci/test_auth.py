"""Where registry credentials come from (wgtpm.oci.auth), and that they stay secret."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from wgtpm._errors import UsageError
from wgtpm.httpclient import redact
from wgtpm.oci.auth import Keychain, normalise_host


def _env(tmp_path: Path, config: dict[str, object] | None = None, **extra: str) -> dict[str, str]:
    d = tmp_path / "docker"
    d.mkdir(exist_ok=True)
    if config is not None:
        (d / "config.json").write_text(json.dumps(config))
    return {
        "DOCKER_CONFIG": str(d),
        "NETRC": str(tmp_path / "no-netrc"),
        "PATH": os.environ.get("PATH", ""),
        **extra,
    }


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def test_normalise_host() -> None:
    assert normalise_host("https://Reg.Example/v1/") == "reg.example"
    assert normalise_host("reg.example:5000") == "reg.example:5000"
    assert normalise_host("reg.example/ns") == "reg.example"


def test_auths_entries(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        {
            "auths": {
                "https://reg.example/v1/": {"auth": _b64("alice:s3cret-pass")},
                "other.example:5000": {"username": "bob", "password": "pw-of-bob-1"},
                "tok.example": {"identitytoken": "refresh-token-xyz"},
            }
        },
    )
    kc = Keychain(env)
    a = kc.lookup("reg.example")
    assert a is not None and (a.username, a.password) == ("alice", "s3cret-pass")
    assert a.basic == "Basic " + _b64("alice:s3cret-pass")
    b = kc.lookup("other.example:5000")
    assert b is not None and b.username == "bob"
    t = kc.lookup("tok.example")
    assert t is not None and t.identity_token == "refresh-token-xyz" and t.basic is None
    assert kc.lookup("reg.example:5000") is None  # another port is another registry
    assert kc.lookup("elsewhere.example") is None
    # every secret read is hidden from messages
    assert redact("s3cret-pass refresh-token-xyz pw-of-bob-1") == "*** *** ***"
    assert "s3cret-pass" not in repr(a)


def _helper(tmp_path: Path, name: str, answer: dict[str, str] | None) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    prog = bindir / f"docker-credential-{name}"
    log = tmp_path / f"{name}.log"
    body = f'echo "$@ $(cat)" >> {log}\n' + (
        f"printf '%s' '{json.dumps(answer)}'\n"
        if answer
        else "echo 'credentials not found' >&2; exit 1\n"
    )
    prog.write_text("#!/bin/sh\n" + body)
    prog.chmod(prog.stat().st_mode | stat.S_IEXEC)
    return log


def test_credential_helpers(tmp_path: Path) -> None:
    log = _helper(
        tmp_path, "fake", {"ServerURL": "h", "Username": "carol", "Secret": "helper-secret-1"}
    )
    tok_log = _helper(
        tmp_path, "tok", {"ServerURL": "h", "Username": "<token>", "Secret": "helper-ident-2"}
    )
    _helper(tmp_path, "none", None)
    env = _env(
        tmp_path,
        {
            "credHelpers": {"reg.example": "fake", "tok.example": "tok", "gone.example": "none"},
            "auths": {"gone.example": {"auth": _b64("dave:auths-pw-3")}},
        },
    )
    env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    kc = Keychain(env)
    c = kc.lookup("reg.example")
    assert c is not None and (c.username, c.password) == ("carol", "helper-secret-1")
    assert "docker-credential-fake" in c.source
    assert log.read_text().strip() == "get reg.example"  # the helper is asked for this host only
    t = kc.lookup("tok.example")
    assert t is not None and t.identity_token == "helper-ident-2" and t.username is None
    assert tok_log.read_text().strip() == "get tok.example"
    assert kc.lookup("gone.example") is None  # a helper named for the host that has none
    assert redact("helper-secret-1") == "***"


def test_creds_store_and_missing_helper(tmp_path: Path) -> None:
    _helper(tmp_path, "store", {"ServerURL": "h", "Username": "erin", "Secret": "store-secret-4"})
    env = _env(tmp_path, {"credsStore": "store"})
    env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    c = Keychain(env).lookup("any.example")
    assert c is not None and c.username == "erin"
    env = _env(tmp_path, {"credsStore": "absent-helper"})
    with pytest.raises(UsageError, match="docker-credential-absent-helper is not on PATH"):
        Keychain(env).lookup("any.example")


def test_registry_auth_file_first_then_netrc(tmp_path: Path) -> None:
    auth_file = tmp_path / "auth.json"
    auth_file.write_text(json.dumps({"auths": {"reg.example": {"auth": _b64("podman:pod-pw-5")}}}))
    netrc = tmp_path / "netrc"
    netrc.write_text("machine net.example login nina password netrc-pw-6\n")
    netrc.chmod(0o600)
    env = _env(
        tmp_path,
        {"auths": {"reg.example": {"auth": _b64("docker:dock-pw-7")}}},
        REGISTRY_AUTH_FILE=str(auth_file),
    )
    env["NETRC"] = str(netrc)
    kc = Keychain(env)
    r = kc.lookup("reg.example")
    assert r is not None and r.username == "podman"
    n = kc.lookup("net.example:5000")  # netrc names hosts without ports
    assert n is not None and (n.username, n.password) == ("nina", "netrc-pw-6")


@pytest.mark.parametrize(
    ("text", "why"),
    [("{nope", "not valid JSON"), ("[]", "not a JSON object")],
)
def test_broken_config(tmp_path: Path, text: str, why: str) -> None:
    env = _env(tmp_path)
    (Path(env["DOCKER_CONFIG"]) / "config.json").write_text(text)
    with pytest.raises(UsageError, match=why):
        Keychain(env).lookup("reg.example")


def test_bad_auth_value(tmp_path: Path) -> None:
    env = _env(tmp_path, {"auths": {"reg.example": {"auth": "!!!not-base64"}}})
    with pytest.raises(UsageError, match="not base64 of user:password"):
        Keychain(env).lookup("reg.example")
