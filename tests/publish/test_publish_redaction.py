"""A password in ``wgtpm publish --to https://user:PASSWORD@host`` is never printed (issue 26).

Against a registry that is down, one that fails (500s), one that refuses
(the live registry on loopback answers 401: the URL's user information is
sent as Basic auth in place of the token), a URL that is not a registry's,
and a dry run that cannot read the registry: the password, ``user:PASSWORD``
and its percent-decoded form appear neither on stdout nor on stderr, also
with ``-x`` tracing every request.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry.conftest import Live
from tests.servers.hostile import HostileServer
from wgtpm.httpclient import redact, register_userinfo

pytestmark = pytest.mark.slow

PASSWORD = "s3cret-Pass%40word"  # percent-encoded "@": its decoded form must not show either
SHOWN = ("s3cret-Pass", "user:", "Pass@word")


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as server:
        yield server


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@", 1)


def _publish(wgtpm, pkg: Path, to: str, *more: str):  # type: ignore[no-untyped-def]
    r = wgtpm("-x", "publish", "--version", "v0.1.0", *more, "--to", to, cwd=pkg)
    assert r.code == 1, r.out + r.err
    for secret in SHOWN:
        assert secret not in r.out + r.err, r.out + r.err
    assert "Traceback" not in r.err
    return r


@pytest.mark.parametrize("where", ["stopped", "failing", "not a registry"])
def test_a_password_in_to_is_not_printed_when_the_registry_fails(  # type: ignore[no-untyped-def]
    where: str, wgtpm, base_pkg: Path, hostile: HostileServer, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPM_TOKEN", "wgt_publish_token_1234")
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "1")
    url = {
        "stopped": f"http://127.0.0.1:{_closed_port()}/",
        "failing": f"{hostile.url}/error-endless",
        "not a registry": f"{hostile.url}/to-file",
    }[where]
    r = _publish(wgtpm, base_pkg, _with_password(url))
    last = r.err.strip().splitlines()[-1]
    assert "cannot list versions at registry http://***@127.0.0.1:" in last, r.err


def test_a_password_in_to_is_not_printed_by_a_live_registry(  # type: ignore[no-untyped-def]
    wgtpm, base_pkg: Path, live: Live, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPM_TOKEN", live.token)
    r = _publish(wgtpm, base_pkg, _with_password(live.url))
    assert "HTTP 401" in r.err and f"registry http://***@{live.url[7:]}" in r.err, r.err
    assert "GET http://127.0.0.1:" in r.err  # -x traced the request, without user information


def test_a_password_in_to_is_not_printed_by_a_dry_run(  # type: ignore[no-untyped-def]
    wgtpm, base_pkg: Path, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    url = _with_password(f"http://127.0.0.1:{_closed_port()}")
    r = wgtpm("-x", "publish", "--version", "v0.1.0", "--dry-run", "--to", url, cwd=base_pkg)
    assert "could not read the versions published at registry http://***@" in r.err, r.err
    for secret in SHOWN:
        assert secret not in r.out + r.err


@pytest.mark.parametrize(
    "to", ["ftp://user:s3cret-Pass@files.example/", "user:s3cret-Pass@reg.example"]
)
def test_a_bad_to_is_one_line_without_the_password(wgtpm, base_pkg: Path, to: str) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("publish", "--version", "v0.1.0", "--to", to, cwd=base_pkg)
    assert r.code != 0 and "s3cret-Pass" not in r.out + r.err, r.err


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("at http://user:pw@reg.example/x: 401", "at http://***@reg.example/x: 401"),
        ("(https://tok@h.example:8443/a?b=1)", "(https://***@h.example:8443/a?b=1)"),
        (
            "see https://h.example/a@b and me@x.example",
            "see https://h.example/a@b and me@x.example",
        ),
        ("http://a:b@c@h.example/", "http://***@h.example/"),
    ],
)
def test_redact_hides_user_information_in_any_text(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_a_password_is_hidden_outside_its_url_too() -> None:
    register_userinfo("https://user:pa%24%24w0rd-xyz@reg.example/")
    assert redact("Basic auth failed for pa$$w0rd-xyz") == "Basic auth failed for ***"
