"""A release's signature and SLSA statement, attached to its manifest as referrers, are found
by the consumer whichever way it reaches the registry: an ``oci://`` entry of ``WGTPROXY``
or ``direct`` for a path ``WGTOCI`` names.

``wgtpm get`` checks the project's ``trust`` line against the signature (and keeps it for
``wgtpm verify``); a trust line naming another key refuses the release in one line with
nothing kept. ``wgtpm verify --rebuild`` reads the build's tool versions from the SLSA
statement (:func:`wgtpm.publish._rebuild.fetch_statement`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.oci.conftest import OciRegistry
from tests.oci.test_publish import FILES, V, http, no_docker_config, release, target, wire
from tests.trust.test_signatures import _keypair, _signed
from wgtpm._report import SILENT
from wgtpm.httpclient import HttpClient
from wgtpm.publish._rebuild import fetch_statement

__all__ = ["http", "no_docker_config", "wire"]  # fixtures

WAYS = ["WGTPROXY=oci://", "WGTOCI direct"]


def _publish_signed(
    way: str,
    reg: OciRegistry,
    ns: str,
    http: HttpClient,
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[str, bytes, Path]:
    """A release signed with a new key, published to ``reg``; the environment set so that
    the consumer reaches it ``way``. Returns (module, its SLSA statement, the public key)."""
    from wgtpm.publish.targets import select_target

    priv, pub = _keypair(tmp_path, "acme")
    if way == "WGTOCI direct":  # the path names the registry: repository NS/conf
        module = f"oci.acme.internal/{ns}/conf"
        monkeypatch.setenv("WGTOCI", f"oci.acme.internal={reg.host}")
        monkeypatch.setenv("WGTPROXY", "direct")
        tgt = select_target(module, tmp_path, http, to=None, dry_run=False, out=None)
    else:
        module = "example.com/acme/signed"
        monkeypatch.setenv("WGTPROXY", reg.oci(ns))
        tgt = target(reg, ns, http, env)
    r = _signed(release(tmp_path / "r", module, FILES), priv)
    assert r.signature and r.attestation
    assert tgt.publish(r, SILENT).created
    return module, r.attestation, pub


def _trusting(project: Path, pub: Path, module: str) -> None:
    (project / "acme.pub").write_bytes(pub.read_bytes())
    (project / "wgt.mod").write_text(
        f"module example.com/app\nwgt 0.1\n\ntrust {module} key=acme.pub\n"
    )


@pytest.mark.parametrize("way", WAYS)
def test_a_trust_line_checks_the_signature_attached_in_the_registry(
    way: str,
    wgtpm,  # type: ignore[no-untyped-def]
    project: Path,
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    tmp_path: Path,
    no_docker_config: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = no_docker_config
    module, _, pub = _publish_signed(
        way, oci_registry, oci_namespace, http, env, tmp_path, monkeypatch
    )
    _trusting(project, pub, module)
    r = wgtpm("get", f"{module}@{V}", cwd=project)
    assert r.code == 0, r.err
    v = wgtpm("verify", cwd=project)  # the signature kept beside the cached index
    assert v.code == 0, v.err

    # the same release on a fresh machine whose trust line names another key: refused
    _, other = _keypair(tmp_path, "other")
    other_project = tmp_path / "other-app"
    other_project.mkdir()
    _trusting(other_project, other, module)
    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "fresh-cache"))
    r = wgtpm("get", f"{module}@{V}", cwd=other_project)
    assert r.code != 0
    lines = [ln for ln in r.err.splitlines() if ln.startswith("wgtpm:")]
    assert len(lines) == 1 and module in lines[0] and "Traceback" not in r.err, r.err
    assert (
        not (other_project / "wgt.sum").exists()
        or module not in (other_project / "wgt.sum").read_text()
    )
    fresh = tmp_path / "fresh-cache"
    files = [p for p in fresh.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    # the wgt.mod read while resolving stays (as for any source); no index, no signature,
    # no file of the release
    assert [p.name for p in files] == [f"{V}.mod"], files
    assert "refused" in lines[0] or "trust" in lines[0] or "sign" in lines[0], lines[0]


@pytest.mark.parametrize("way", WAYS)
def test_verify_rebuild_finds_the_slsa_statement_attached_in_the_registry(
    way: str,
    oci_registry: OciRegistry,
    oci_namespace: str,
    http: HttpClient,
    tmp_path: Path,
    no_docker_config: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, statement, _ = _publish_signed(
        way, oci_registry, oci_namespace, http, no_docker_config, tmp_path, monkeypatch
    )
    found = fetch_statement(module, V)
    assert found is not None, f"no statement found through {os.environ['WGTPROXY']}"
    data, where = found
    assert data == statement
    assert module in where and oci_registry.host in where, where
    assert fetch_statement(module, "v9.9.9") is None  # a version it has none of
