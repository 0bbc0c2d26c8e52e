"""Publishing to registries that want credentials: htpasswd (Basic) and token (Bearer) auth.

The credentials come from a Docker ``config.json`` as ``docker login`` writes
it; a wrong password is refused in one line that never shows it, with
nothing pushed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.oci.conftest import OciRegistry
from tests.oci.helpers import docker_login
from tests.oci.test_publish import FILES, REPO, MiB, V, Wire, client, http, release, signed, wire
from wgtpm._errors import WgtpmError
from wgtpm._report import SILENT
from wgtpm.httpclient import HttpClient
from wgtpm.oci.auth import Keychain
from wgtpm.oci.client import OciClient
from wgtpm.oci.push import SIGNATURE_TYPE, read_attachment
from wgtpm.publish.oci import OciTarget

__all__ = ["http", "wire"]  # fixtures


def docker_config(tmp: Path, reg: OciRegistry, password: str | None = None) -> dict[str, str]:
    """An environment whose Docker config.json holds ``reg``'s user and ``password``."""
    d = docker_login(tmp / "docker", reg.host, f"{reg.user}", f"{password or reg.password}")
    return {"DOCKER_CONFIG": d, "NETRC": str(tmp / "no-netrc")}


@pytest.fixture(params=["htpasswd", "token"])
def locked(request: pytest.FixtureRequest) -> OciRegistry:
    reg: OciRegistry = request.getfixturevalue(
        "oci_registry_auth" if request.param == "htpasswd" else "oci_registry_token"
    )
    return reg


def test_publish_with_credentials_from_docker_config(
    locked: OciRegistry, oci_namespace: str, http: HttpClient, wire: Wire, tmp_path: Path
) -> None:
    env = docker_config(tmp_path, locked)
    shared = hashlib.sha256(b"y").digest() * (MiB // 32 + 1)
    base = release(tmp_path / "base", "example.com/acme/base", {"vocab.bin": shared})
    t = OciTarget(locked.oci(oci_namespace), http, env)
    assert t.publish(base, SILENT).created
    r = signed(
        release(
            tmp_path / "r",
            REPO,
            {**FILES, "vocab.bin": shared},
            deps=(("example.com/acme/base", V, base.h1),),
        )
    )
    wire.seen.clear()
    assert OciTarget(locked.oci(oci_namespace), http, env).publish(r, SILENT).created
    digest = "sha256%3A" + hashlib.sha256(shared).hexdigest()
    assert any(f"mount={digest}" in p for m, p in wire.seen if m == "POST")
    assert not any(digest in p for m, p in wire.seen if m == "PUT")  # mounted, not sent
    assert t.published_versions(REPO) == [V]
    # read back with the same credentials: the tag's manifest, its signature
    oci = OciClient(http, locked.host, auth=Keychain(env))
    repo = f"{oci_namespace}/{REPO}"
    got = oci.manifest(repo, V)
    assert read_attachment(oci, repo, got.digest, SIGNATURE_TYPE) == r.signature
    assert t.publish(r, SILENT).created is False


def test_a_wrong_password_is_refused_in_one_line_without_it(
    locked: OciRegistry, oci_namespace: str, tmp_path: Path
) -> None:
    wrong = "wrong-password-5d1e"
    env = docker_config(tmp_path, locked, password=wrong)
    r = release(tmp_path / "r", REPO, FILES)
    wire = Wire()
    with client(wire) as http:
        t = OciTarget(locked.oci(oci_namespace), http, env)
        with pytest.raises(WgtpmError) as err:
            t.check(r)
            t.publish(r, SILENT)
    msg = str(err.value)
    assert "\n" not in msg and wrong not in msg and f"docker login {locked.host}" in msg, msg
    assert not any(m in ("PUT", "PATCH") for m, _ in wire.seen)


def test_no_credentials_for_a_locked_registry_says_how_to_log_in(
    locked: OciRegistry, oci_namespace: str, tmp_path: Path
) -> None:
    env = {"DOCKER_CONFIG": str(tmp_path / "none"), "NETRC": str(tmp_path / "no-netrc")}
    with client() as http:
        t = OciTarget(locked.oci(oci_namespace), http, env)
        with pytest.raises(WgtpmError, match="docker login") as err:
            t.publish(release(tmp_path / "r", REPO, FILES), SILENT)
    assert "\n" not in str(err.value)
